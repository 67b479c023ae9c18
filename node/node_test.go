package node_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// options are OptionsForTest (options_test.go, shared with the package's own tests).
func options(dir string, sink *drive.Events) node.Options { return node.OptionsForTest(dir, sink) }

func open(t *testing.T, dir string, sink *drive.Events) (*node.Node, drive.Driver) {
	t.Helper()
	n, err := node.Open(options(dir, sink))
	if err != nil {
		t.Fatal(err)
	}
	return n, drive.Driver{T: t, Desk: n.Loop}
}

func closeNode(t *testing.T, n *node.Node) {
	t.Helper()
	closeWithin(t, n, 5*time.Second)
}

// state is what a party sees of the desk, for comparing across a restart.
func state(d drive.Driver, p drive.Party) string {
	b, err := json.Marshal([]any{d.Balances(p), d.Read(p, machine.QTrades{}), d.Read(p, machine.QTxPending{}),
		d.Read(p, machine.QRfqMine{}), d.Read(p, machine.QRfqIncoming{}), d.Read(p, machine.QRfqHistory{}),
		d.Read(p, machine.QMakerStatus{})})
	if err != nil {
		d.T.Fatal(err)
	}
	return string(b)
}

// TestRestart: a desk with registered parties, a settled trade, and an accepted trade
// waiting for the taker's signatures is closed and opened again on the same data: the
// API keys still work, balances, trades, history and pending actions are as before, and
// the waiting trade can still be signed and settles.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	events := drive.NewEvents()
	n, d := open(t, dir, events)
	maker, taker := fundedPair(d)
	waiting, before := settleOne(t, n, d, events, maker, taker, true)
	closeNode(t, n)

	events = drive.NewEvents()
	n, d = open(t, dir, events)
	defer closeNode(t, n)
	rec := n.Recovered
	// Every desk snapshot takes a ledger snapshot along (CheckpointEvery 5): the ledger
	// comes back from one, with whatever inputs followed it replayed (maybe none).
	if rec.Fresh || rec.SnapshotSeq == 0 || rec.Checkpoints == 0 || rec.DigestMismatch != 0 || rec.LedgerSnapshotSeq == 0 {
		t.Fatalf("recovery %+v", rec)
	}
	sameDesk(t, d, before, "the restart", maker, taker)
	d.Sign(taker, waiting.Actions)
	settled := events.WaitFor(t, taker.ID, machine.EvTradeSettled, nil).Payload.(machine.TradeDTO)
	if settled.TradeID != waiting.TradeID {
		t.Fatalf("settled %s, want %s", settled.TradeID, waiting.TradeID)
	}
	// Two fills of 0.1 cbtc at 50000: the taker sold 0.2 cbtc for 10000 usdcx less 25 bps.
	if got := fmt.Sprint(d.Balances(taker)); got != "map[cbtc:0.8 usdcx:109975]" {
		t.Fatalf("taker balances %s", got)
	}
	if err := n.Ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryNode: without a data directory a node runs and forgets.
func TestMemoryNode(t *testing.T) {
	n, d := open(t, "", drive.NewEvents())
	defer closeNode(t, n)
	p := d.Register("Solo")
	d.Fund(p, 2)
	if !n.Recovered.Fresh {
		t.Fatal("a memory node is always fresh")
	}
}
