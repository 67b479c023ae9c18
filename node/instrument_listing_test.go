package node_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

var xau = machine.Instrument{Symbol: "xau", Display: "XAU", Decimals: 4, USDPrice: money.MustParse("2000"),
	FaucetAmount: money.MustParse("5"), RegistryID: "xau-registry"}

// withXAU is the test configuration with xau added to the catalog, its reservoir funded
// with 1000.
func withXAU(dir string, events *drive.Events) node.Options {
	o := options(dir, events)
	o.Desk.Instruments = append(slices.Clone(o.Desk.Instruments), xau)
	o.Ledger.Catalog = o.Desk.Instruments
	o.Ledger.Reservoir = map[string]money.Decimal{"xau": money.MustParse("1000")}
	return o
}

// TestInstrumentAdded: a desk stopped and started with an instrument added to its
// configuration lists it on the embedded ledger (the reservoir funded in the same
// update) before journaling the change; GET /instruments lists it, the faucet hands it
// out, a trade in it settles; a restart with the same configuration changes nothing and
// sees the same desk, and both journals replayed from genesis and from their snapshots
// reach the same state. Removing it again is refused.
func TestInstrumentAdded(t *testing.T) {
	dir := t.TempDir()
	events := drive.NewEvents()
	n, d := open(t, dir, events)
	maker, taker := d.Register("Maker"), d.Register("Taker")
	d.Fund(maker, 2)
	closeNode(t, n)

	events = drive.NewEvents()
	var logged bytes.Buffer
	o := withXAU(dir, events)
	o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	n, err := node.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	d = drive.Driver{T: t, Desk: n.Loop}
	for _, want := range []string{`msg="instrument listed on the ledger" symbol=xau registry_id=xau-registry reservoir=1000`,
		`msg="configuration changed" key=instrument.xau`} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the log does not say %s:\n%s", want, logged.String())
		}
	}
	var keys []string
	for _, c := range n.Changed {
		keys = append(keys, c.Key)
	}
	if got := strings.Join(keys, "|"); got != "instrument.xau|instrument order" {
		t.Fatalf("changed %q, want instrument.xau|instrument order", got)
	}
	in, err := n.Ledger.L.Instrument("xau-registry")
	if err != nil || !in.Listed || in.Symbol != "xau" || in.Decimals != 4 {
		t.Fatalf("ledger instrument %+v, %v", in, err)
	}
	if s, err := n.Ledger.L.Supply("xau-registry"); err != nil || s.String() != "1000" {
		t.Fatalf("xau supply %s, %v", s, err)
	}
	var symbols []string
	for _, i := range d.Read(taker, machine.QInstruments{}).([]machine.InstrumentDTO) {
		symbols = append(symbols, i.Symbol)
	}
	if got := strings.Join(symbols, ","); got != "cbtc,usdcx,xau" {
		t.Fatalf("GET /instruments lists %s", got)
	}
	d.Fund(taker, 3) // cbtc, usdcx and xau
	if got := d.Balances(taker)["xau"]; got != "5" {
		t.Fatalf("taker holds %q xau after a faucet draw, want 5", got)
	}

	if err := n.Loop.OpenSocket(context.Background(), 1, maker.KeyHash(), false); err != nil {
		t.Fatal(err)
	}
	rfq := d.Must(d.Do(machine.CreateRFQ{Req: taker.Req(), Direction: machine.Sell, Qty: money.MustParse("2"),
		Base: "xau", Quote: "usdcx", InvitedMakers: []string{maker.Hint}, TTLSeconds: 600}), 200).(machine.RfqDTO)
	q := d.Must(d.Do(machine.SubmitQuote{Req: maker.Req(), RFQID: rfq.RfqID, Price: money.MustParse("2000")}), 200).(machine.QuoteWithActionsDTO)
	d.Sign(maker, q.Actions)
	events.WaitFor(t, maker.ID, machine.EvQuoteAnchored, func(e machine.Event) bool {
		return e.Payload.(machine.QuoteAnchoredPayload).QuoteID == q.QuoteID
	})
	tr := d.Must(d.Do(machine.AcceptQuote{Req: taker.Req(), QuoteID: q.QuoteID}), 202).(machine.TradeWithActionsDTO)
	d.Sign(taker, tr.Actions)
	events.WaitFor(t, taker.ID, machine.EvTradeSettled, nil)
	if got := fmt.Sprint(d.Balances(maker)["xau"], " ", d.Balances(taker)["xau"]); got != "2 3" {
		t.Fatalf("xau after the trade: maker, taker %s; want 2 3", got)
	}
	if err := n.Loop.CloseSocket(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{maker.ID: state(d, maker), taker.ID: state(d, taker)}
	ledgerDigest := n.Ledger.L.Digest()
	closeNode(t, n)

	// Restart with the same configuration: nothing changes, the desk is the same.
	events = drive.NewEvents()
	n, err = node.Open(withXAU(dir, events))
	if err != nil {
		t.Fatal(err)
	}
	d = drive.Driver{T: t, Desk: n.Loop}
	if len(n.Changed) != 0 || n.Recovered.LedgerSnapshotSeq == 0 {
		t.Fatalf("second start: changed %v, recovery %+v", n.Changed, n.Recovered)
	}
	sameDesk(t, d, before, "the restart", maker, taker)
	if n.Ledger.L.Digest() != ledgerDigest {
		t.Fatal("the ledger restored from its snapshot reached another digest")
	}
	if err := n.Ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	closeNode(t, n)

	// Removing the instrument again is refused.
	if n, err := node.Open(options(dir, drive.NewEvents())); err == nil {
		closeNode(t, n)
		t.Fatal("removing xau was accepted")
	} else if !strings.Contains(err.Error(), `instrument "xau" cannot be removed`) {
		t.Fatalf("removing xau: %v", err)
	}

	// Changing its decimals is refused.
	o = withXAU(dir, drive.NewEvents())
	o.Desk.Instruments[2].Decimals = 6
	if n, err := node.Open(o); err == nil {
		closeNode(t, n)
		t.Fatal("changing the decimals of xau was accepted")
	} else if !errors.Is(err, node.ErrConfigRefused) || !strings.Contains(err.Error(), "decimals") {
		t.Fatalf("changing the decimals of xau: %v", err)
	}

	// The ledger journal replayed from genesis reaches the same ledger.
	ll, err := journal.OpenDir(dir+"/ledger", journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	o = options(dir, nil)
	fresh, _, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: o.Ledger.Network, Seed: o.Ledger.Seed,
		Clock: drive.RealClock{}, Catalog: o.Ledger.Catalog})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.ReplayLedger(ll, fresh.L); err != nil {
		t.Fatal(err)
	}
	if fresh.L.Digest() != ledgerDigest {
		t.Fatal("the ledger journal replayed from genesis reached another digest")
	}

	// The desk journal replayed from genesis and from its snapshot reach the same desk.
	if g := replaysAgree(t, dir); len(g.Cfg.Instruments) != 3 || g.Cfg.Instruments[2].Symbol != "xau" {
		t.Fatalf("replayed instruments %+v", g.Cfg.Instruments)
	}
}

// TestInstrumentListedBeforeTheDesk: a start that listed the instrument on the ledger but
// stopped before the desk journaled its config.change (simulated by listing it on a node
// whose configuration does not add it) lists nothing again at the next start: the
// reservoir is funded once, and the desk puts the instrument in force.
func TestInstrumentListedBeforeTheDesk(t *testing.T) {
	dir := t.TempDir()
	n, _ := open(t, dir, drive.NewEvents())
	if err := n.Ledger.ListInstrument(xau, money.MustParse("1000")); err != nil {
		t.Fatal(err)
	}
	closeNode(t, n)

	n, err := node.Open(withXAU(dir, drive.NewEvents()))
	if err != nil {
		t.Fatal(err)
	}
	defer closeNode(t, n)
	if len(n.Config.Instruments) != 3 || n.Config.Instruments[2].Symbol != "xau" {
		t.Fatalf("instruments in force %+v", n.Config.Instruments)
	}
	if s, err := n.Ledger.L.Supply("xau-registry"); err != nil || s.String() != "1000" {
		t.Fatalf("xau supply %s, %v: want the reservoir funded once", s, err)
	}
	if err := n.Ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
