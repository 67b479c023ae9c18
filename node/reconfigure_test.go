package node_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// TestReconfigureAtOpen: a node opened again with a changed configuration journals the
// change as one input after Boot (n.Changed names the keys), the change survives the next
// start with the same configuration (no second change), and the journal replayed from
// genesis and from the snapshot reach the same desk; changes that cannot apply are refused
// with their reason and journal nothing (an instrument added: TestInstrumentAdded), and KeepConfig opens the data as it is.
func TestReconfigureAtOpen(t *testing.T) {
	dir := t.TempDir()
	n, _ := open(t, dir, drive.NewEvents())
	closeNode(t, n)

	changed := options(dir, drive.NewEvents())
	changed.Desk.QuoteLifetime = 45 * time.Second
	changed.Desk.Instruments = append([]machine.Instrument(nil), changed.Desk.Instruments...)
	changed.Desk.Instruments[0].USDPrice = money.MustParse("90000")
	n, err := node.Open(changed)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, d := range n.Changed {
		keys = append(keys, d.String())
	}
	if got := strings.Join(keys, "|"); got != "quote_lifetime: 30s -> 45s|instrument.cbtc.usd_price: 100000 -> 90000" {
		t.Fatalf("changed %q", got)
	}
	if n.Config.QuoteLifetime != 45*time.Second {
		t.Fatalf("config in force: quote lifetime %s", n.Config.QuoteLifetime)
	}
	closeNode(t, n)

	refusals := []struct {
		name   string
		change func(*node.Options)
		reason string
	}{
		{"instrument removed", func(o *node.Options) {
			o.Desk.Instruments = o.Desk.Instruments[1:]
		}, `instrument "cbtc" cannot be removed`},
		{"house party added", func(o *node.Options) {
			o.Ledger.House = []ledgeradapter.House{{Hint: "late", Role: machine.HouseTaker, KeyHash: strings.Repeat("b", 64)}}
		}, `house party "late" cannot be added`},
		{"reservoir", func(o *node.Options) {
			o.Ledger.Reservoir = map[string]money.Decimal{"cbtc": money.MustParse("5")}
		}, "instrument.cbtc.reservoir is funded at genesis only"},
		{"network", func(o *node.Options) {
			o.Ledger.Network, o.Desk.Network = machine.Mainnet, machine.Mainnet
		}, "network cannot change"},
	}
	lastSeq := func() uint64 {
		l := deskJournal(t, dir)
		defer l.Close()
		return l.LastSeq()
	}
	before := lastSeq()
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			o := options(dir, drive.NewEvents())
			o.Desk.QuoteLifetime = 45 * time.Second
			o.Desk.Instruments = append([]machine.Instrument(nil), o.Desk.Instruments...)
			o.Desk.Instruments[0].USDPrice = money.MustParse("90000")
			r.change(&o)
			n, err := node.Open(o)
			if err == nil {
				closeNode(t, n)
				t.Fatal("the change was accepted")
			}
			if !errors.Is(err, node.ErrConfigRefused) || !strings.Contains(err.Error(), r.reason) {
				t.Fatalf("got %v, want %q", err, r.reason)
			}
			if got := lastSeq(); got != before {
				t.Fatalf("the refused start journaled %d records", got-before)
			}
		})
	}

	// The same changed configuration again: nothing to change; KeepConfig ignores the options.
	again := changed
	again.Sink = drive.NewEvents()
	n, err = node.Open(again)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Changed) != 0 || n.Config.Instruments[0].USDPrice.String() != "90000" {
		t.Fatalf("second start changed %v, cbtc at %s", n.Changed, n.Config.Instruments[0].USDPrice)
	}
	closeNode(t, n)
	keep := options(dir, drive.NewEvents())
	keep.KeepConfig, keep.Desk.Network = true, machine.Mainnet
	n, err = node.Open(keep)
	if err != nil {
		t.Fatal(err)
	}
	if n.Config.QuoteLifetime != 45*time.Second || len(n.Changed) != 0 {
		t.Fatalf("KeepConfig: %s, changed %v", n.Config.QuoteLifetime, n.Changed)
	}
	closeNode(t, n)

	if g := replaysAgree(t, dir); g.Cfg.QuoteLifetime != 45*time.Second {
		t.Fatalf("replayed quote lifetime %s", g.Cfg.QuoteLifetime)
	}
}
