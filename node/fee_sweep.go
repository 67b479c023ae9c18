package node

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/money"
)

// The fee sweep: every settled trade pays its fee to the desk's fee party as a new holding,
// and the fee party never spends, so left alone its holdings (and the ledger's memory and
// snapshots) would grow by one per trade for ever. The node consolidates them on the
// embedded ledger as any holder would: it locks the largest free fee holdings of an
// instrument (up to the ledger's limit of inputs per command) in one send allocation and
// withdraws it, which leaves one free holding of the same total. Both are ordinary ledger
// commands, journaled and replayed like the desk's own; the desk never refers to the fee
// party's holdings (it only names the party as a receiver), so it does not see the sweep.

// Fee sweep knobs: a sweep runs every feeSweepInterval and consolidates each instrument
// of which the fee party holds more than feeSweepAbove free holdings, feeSweepInputs at a
// time (ledgersim's default MaxInputs), until no more than feeSweepAbove are left.
const (
	feeSweepInterval = 5 * time.Second
	feeSweepAbove    = 64
	feeSweepInputs   = 256
)

// feeSweeper runs the fee sweep on a goroutine of its own until stopped.
type feeSweeper struct {
	stop chan struct{}
	done sync.WaitGroup
}

// startFeeSweep starts sweeping the fee party's holdings.
func (n *Node) startFeeSweep() {
	if n.Config.FeeParty == "" {
		return
	}
	s := &feeSweeper{stop: make(chan struct{})}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(feeSweepInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				if _, err := n.SweepFees(); err != nil {
					n.log.Warn("fee sweep", "err", err)
				}
			}
		}
	}()
	n.feeSweep = s
}

// stopFeeSweep stops the sweep and waits for a sweep in progress.
func (n *Node) stopFeeSweep() {
	if s := n.feeSweep; s != nil {
		close(s.stop)
		s.done.Wait()
		n.feeSweep = nil
	}
}

// SweepFees consolidates the fee party's free holdings of every instrument it holds more
// than feeSweepAbove of, and returns how many holdings it merged away.
func (n *Node) SweepFees() (int, error) {
	n.sweepMu.Lock()
	defer n.sweepMu.Unlock()
	l := n.Ledger.L
	fee := n.Config.FeeParty
	merged := 0
	for last := -1; ; {
		now := l.Config().Clock.Now()
		free := map[string][]money.Decimal{}
		for _, h := range l.Holdings(fee) {
			if h.FreeAt(now) {
				free[h.Instrument] = append(free[h.Instrument], h.Amount)
			}
		}
		instruments := make([]string, 0, len(free))
		for in, amounts := range free {
			if len(amounts) > feeSweepAbove {
				instruments = append(instruments, in)
			}
		}
		if len(instruments) == 0 || merged == last {
			return merged, nil // done, or a pass that merged nothing
		}
		last = merged
		sort.Strings(instruments)
		for _, in := range instruments {
			k, err := n.consolidate(l, fee, in, now)
			if err != nil {
				return merged, err
			}
			merged += k
		}
	}
}

// consolidate merges the largest free holdings of one instrument (at most feeSweepInputs)
// into one and returns how many fewer holdings the party has. The sweep names them as
// the allocation's inputs (the ledger picks nothing); nothing else spends the fee
// party's holdings, so they are still free when the allocation runs.
func (n *Node) consolidate(l *ledgersim.Ledger, party, instrument string, now time.Time) (int, error) {
	free := l.FreeHoldings(party, instrument) // largest first
	take := min(len(free), feeSweepInputs, l.MaxInputs())
	if take < 2 {
		return 0, nil
	}
	total := money.Zero
	inputs := make([]string, take)
	for i, h := range free[:take] {
		total = total.Add(h.Amount)
		inputs[i] = h.CID
	}
	// The command ids name the ledger's offset, which every commit (the sweep's own too)
	// moves on: never the same twice, across restarts too, so no sweep is deduplicated
	// into an earlier one.
	id := fmt.Sprintf("fee-sweep-%s-%d", instrument, l.Offset())
	u, err := l.Submit(party, ledgersim.Allocate{
		Settlement: ledgersim.SettlementRef{Executor: party, ID: id}, LegID: "sweep", Side: ledgersim.SideSend,
		Instrument: instrument, Amount: total, SettleBefore: now.Add(time.Hour), Inputs: inputs,
	}, id+":lock")
	if err != nil {
		return 0, fmt.Errorf("lock %d holdings of %s: %w", take, instrument, err)
	}
	if _, err := l.Submit(party, ledgersim.WithdrawAllocation{Allocation: u.Allocation}, id+":release"); err != nil {
		// The lock lapses by itself at SettleBefore; the holdings are merged either way.
		return take - 1, fmt.Errorf("release the merged %s holding: %w", instrument, err)
	}
	return take - 1, nil
}
