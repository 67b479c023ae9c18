package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

func testLedgerSpec() LedgerSpec {
	return LedgerSpec{Network: machine.Testnet, Seed: 7, Catalog: []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("1"), RegistryID: "cbtc-registry"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("100000"), RegistryID: "usdcx-registry"},
	}}
}

// ledgerNode is the ledger half of a node over an in-memory ledger journal: genesis
// record, recorder and ledger snapshots as Open wires them.
func ledgerNode(t *testing.T, log journal.Log, spec LedgerSpec, clk Clock) (*Node, ledgeradapter.Parties) {
	t.Helper()
	n := &Node{ledgerLog: log, ledgerSpec: spec, log: slog.New(slog.DiscardHandler)}
	if log.LastSeq() == 0 {
		rec, err := ledgerGenesisRecord(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.Append(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	ad, ps, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: spec.Network, Seed: spec.Seed, Clock: clk,
		Catalog: spec.Catalog, Reservoir: spec.Reservoir, House: spec.House, Recorder: n.recordLedger})
	if err != nil {
		t.Fatal(err)
	}
	n.Ledger = ad
	return n, ps
}

// faucet moves one drip of cbtc from the reservoir to the fee party and accepts it: two
// ledger inputs.
func faucet(t *testing.T, l *ledgersim.Ledger, ps ledgeradapter.Parties, id string) {
	t.Helper()
	amount := money.MustParse("0.01")
	var u ledgersim.Update
	for {
		// The input holdings are named by the submitter; a concurrent faucet may spend
		// them first (not found): choose again.
		inputs, short := ledgeradapter.SelectInputs(l.FreeHoldings(ps.Reservoir, "cbtc-registry"), nil, amount, l.MaxInputs())
		if short != nil {
			t.Fatalf("the reservoir cannot cover %s: %+v", amount, short)
		}
		var err error
		u, err = l.Submit(ps.Reservoir, ledgersim.Transfer{Receiver: ps.FeeParty, Instrument: "cbtc-registry", Amount: amount, Inputs: inputs}, "t-"+id)
		if ledgersim.CategoryOf(err) == ledgersim.CategoryNotFound {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if _, err := l.Submit(ps.FeeParty, ledgersim.AcceptTransfer{Instruction: u.TransferInstruction}, "a-"+id); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerSnapshotPrunedGenesis: ledger snapshots taken alongside desk snapshots let
// the journal be pruned past its genesis record; a restart reads the spec from the newest
// snapshot, restores it and replays only the records after it, reaching the live digest.
func TestLedgerSnapshotPrunedGenesis(t *testing.T) {
	log := journal.NewMemLog(true)
	spec := testLedgerSpec()
	clk := ledgersim.NewManualClock(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	n, ps := ledgerNode(t, log, spec, clk)
	for round := 0; round < 3; round++ {
		for i := 0; i < 5; i++ {
			faucet(t, n.Ledger.L, ps, fmt.Sprintf("%d-%d", round, i))
			clk.Advance(time.Second)
		}
		n.saveLedgerSnapshot()
	}
	n.saveLedgerSnapshot() // nothing new: no second snapshot at the same record
	faucet(t, n.Ledger.L, ps, "after")
	if log.FirstSeq() <= 1 {
		t.Fatalf("the journal was not pruned past genesis (first record %d)", log.FirstSeq())
	}
	if _, err := ReplayLedger(log, n.Ledger.L); err == nil {
		t.Fatal("ReplayLedger from genesis should fail on a pruned journal")
	}

	got, err := readLedgerGenesis(log) // as Open reads it
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, got), mustJSON(t, spec); !bytes.Equal(a, b) {
		t.Fatalf("spec from the snapshot %s, want %s", a, b)
	}
	restarted, _ := ledgerNode(t, log, got, clk)
	l, rec, err := RecoverLedger(log, restarted.Ledger.L)
	if err != nil {
		t.Fatal(err)
	}
	if rec.SnapshotSeq != 31 || rec.Inputs != 2 {
		t.Fatalf("recovery %+v, want the snapshot at record 31 and 2 inputs after it", rec)
	}
	if l.Digest() != n.Ledger.L.Digest() {
		t.Fatal("recovered ledger differs from the live one")
	}
	if err := l.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	// The restored ledger journals like the genesis one: its recorder is the node's.
	restarted.Ledger.L = l
	before := log.LastSeq()
	faucet(t, l, ps, "restarted")
	if log.LastSeq() != before+2 {
		t.Fatalf("the restored ledger journaled %d records, want 2", log.LastSeq()-before)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLedgerSnapshotUnderLoad: snapshots taken while other goroutines drive the ledger
// hold exactly the records up to the sequence number they were taken at: each, restored
// and fed the records after it, reaches the live ledger's final digest.
func TestLedgerSnapshotUnderLoad(t *testing.T) {
	log := journal.NewMemLog(true)
	spec := testLedgerSpec()
	n, ps := ledgerNode(t, log, spec, ledgersim.NewManualClock(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)))
	type snap struct {
		seq  uint64
		data []byte
	}
	var snaps []snap
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				faucet(t, n.Ledger.L, ps, fmt.Sprintf("w%d-%d", w, i))
			}
		}()
	}
	for len(snaps) < 20 {
		data, seq, err := n.Ledger.L.SnapshotWith(log.LastSeq)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap{seq, data})
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	want := n.Ledger.L.Digest()
	for _, s := range snaps {
		fresh, _ := ledgerNode(t, journal.NewMemLog(true), spec, ledgersim.NewManualClock(time.Time{}))
		l, err := ledgersim.Restore(fresh.Ledger.L.Config(), s.data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := replayLedgerFrom(log, s.seq+1, l); err != nil {
			t.Fatalf("snapshot at %d: %v", s.seq, err)
		}
		if l.Digest() != want {
			t.Fatalf("the snapshot at record %d, with the records after it, differs from the live ledger", s.seq)
		}
	}
}
