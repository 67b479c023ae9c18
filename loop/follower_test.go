package loop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

type noLedger struct{}

func (noLedger) Do(_ context.Context, c machine.LedgerCall) machine.LedgerResult {
	return machine.LedgerResult{CommandID: c.CommandID}
}
func (noLedger) Holdings(string) []machine.LedgerHolding  { return nil }
func (noLedger) Incoming(string) []machine.LedgerTransfer { return nil }

type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

type noSink struct{}

func (noSink) Deliver(machine.Outputs) {}

// TestFollowerFailureFallsBack drives the loop's checkpoint steps by hand (the loop is not
// started, so the test goroutine is the loop's): the first checkpoint is taken on the loop
// and seeds a follower, the next is a mark the follower answers; once the follower fails
// (here on a record it cannot decode) it is dropped, counted, and the next checkpoint is
// taken on the loop again, seeding a new follower that answers the mark after it.
func TestFollowerFailureFallsBack(t *testing.T) {
	cfg := machine.DefaultConfig()
	cfg.Seed, cfg.Operator, cfg.FeeParty, cfg.Reservoir = 7, "operator::1220aa", "fees::1220bb", "reservoir::1220cc"
	cfg.Instruments = []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("0.01"), RegistryID: "reg:cbtc"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("1000"), RegistryID: "reg:usdcx"},
	}
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}}
	desk, err := machine.NewDesk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := journal.NewMemLog(true)
	var mu sync.Mutex
	var snapshots []uint64
	l, err := New(Config{Desk: desk, Ledger: noLedger{}, Clock: fixedClock{}, Sink: noSink{}, Journal: log,
		CheckpointEvery: 1, Snapshot: func(seq uint64, _ []byte) {
			mu.Lock()
			defer mu.Unlock()
			snapshots = append(snapshots, seq)
		}})
	if err != nil {
		t.Fatal(err)
	}
	l.timer = time.NewTimer(time.Hour)
	l.timer.Stop()
	defer l.stopFollower()
	// answer waits for the follower's answer to the outstanding mark and handles it.
	answer := func() {
		t.Helper()
		select {
		case d := <-l.fol.digests:
			l.followed(d)
		case <-time.After(10 * time.Second):
			t.Fatal("the follower did not answer")
		}
	}
	l.apply(machine.Boot{}, nil) // 1, then the first checkpoint on the loop: 2
	if l.fol == nil || l.stats.Checkpoints.Load() != 1 {
		t.Fatalf("the first checkpoint did not seed a follower")
	}
	l.apply(machine.Tick{}, nil) // 3, then a mark: 4
	if l.markOut != 4 || l.stats.MarkPending.Load() != 1 {
		t.Fatalf("mark outstanding %d, want 4", l.markOut)
	}
	l.apply(machine.Tick{}, nil) // 5: no mark while one is outstanding
	answer()                     // the digest of mark 4: 6
	l.fol.feed <- followItem{seq: 99, rec: []byte("not a record")}
	answer() // the follower's failure
	if l.fol != nil || l.stats.FollowerFailures.Load() != 1 || l.markOut != 0 {
		t.Fatalf("a failed follower was kept")
	}
	l.apply(machine.Tick{}, nil) // 7, then a checkpoint on the loop: 8, and a new follower
	l.apply(machine.Tick{}, nil) // 9, then a mark: 10
	answer()                     // its digest: 11
	if l.stats.Checkpoints.Load() != 4 {
		t.Fatalf("%d checkpoints, want 4", l.stats.Checkpoints.Load())
	}
	want := []string{"boot", "checkpoint", "tick", "checkpoint.mark", "tick", "checkpoint.digest",
		"tick", "checkpoint", "tick", "checkpoint.mark", "checkpoint.digest"}
	var got []string
	digests := map[uint64]string{} // mark → digest journaled
	err = log.ReadFrom(1, func(seq uint64, rec []byte) error {
		env, err := machine.DecodeEnvelope(rec)
		if err != nil {
			return err
		}
		got = append(got, env.Input.Kind())
		if d, ok := env.Input.(machine.CheckpointDigest); ok {
			digests[d.Mark] = d.Digest
		}
		return nil
	})
	if err != nil || len(got) != len(want) {
		t.Fatalf("journal %v (%v), want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("journal %v, want %v", got, want)
		}
	}
	if len(digests) != 2 || digests[4] == "" || digests[10] == "" {
		t.Fatalf("digests %v, want those of marks 4 and 10", digests)
	}
	// The follower hands its state to the snapshotter as of the input before its mark
	// (a save still running may skip one).
	l.stopFollower()
	l.workers.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(snapshots) == 0 || snapshots[0] != 1 {
		t.Errorf("snapshots at %v, want the first after input 1", snapshots)
	}
	for _, seq := range snapshots {
		if seq != 1 && seq != 3 && seq != 7 && seq != 9 {
			t.Errorf("a snapshot after input %d, which no checkpoint follows", seq)
		}
	}
}

// TestFollowerQueueFullIsCounted: the loop reports the follower's queue length after each
// record, and a record that finds the queue full waits for room and is counted as a stall.
func TestFollowerQueueFullIsCounted(t *testing.T) {
	l := &Loop{fol: &follower{feed: make(chan followItem, 2)}}
	l.feedFollower(followItem{seq: 1})
	if got := l.stats.FollowerLag.Load(); got != 1 || l.stats.FollowerStalls.Load() != 0 {
		t.Fatalf("after one record: lag %d, stalls %d; want 1, 0", got, l.stats.FollowerStalls.Load())
	}
	l.feedFollower(followItem{seq: 2})
	taken := make(chan uint64)
	go func() {
		// Long enough for the send below to have found the queue full.
		time.Sleep(50 * time.Millisecond)
		taken <- (<-l.fol.feed).seq
	}()
	l.feedFollower(followItem{seq: 3}) // the queue is full: waits for the reader above
	if seq := <-taken; seq != 1 {
		t.Fatalf("the follower took record %d first, want 1", seq)
	}
	if n, ns := l.stats.FollowerStalls.Load(), l.stats.FollowerStallNanos.Load(); n != 1 || ns == 0 {
		t.Fatalf("stalls %d over %d ns; want one, of some time", n, ns)
	}
	if got := l.stats.FollowerLag.Load(); got != 2 {
		t.Fatalf("lag %d, want 2", got)
	}
	l.fol.done = make(chan struct{})
	close(l.fol.done)
	l.stopFollower()
	if got := l.stats.FollowerLag.Load(); got != 0 {
		t.Fatalf("lag %d after the follower stopped, want 0", got)
	}
}
