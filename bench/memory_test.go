package bench

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// memoryRFQs is how many RFQs each state of BenchmarkDeskMemory holds.
const memoryRFQs = 1000

// buildDesk runs a desk in memory (embedded ledger, real signatures, no journal) with
// three makers and a taker, then `open` RFQs each holding three live quotes, or `closed`
// RFQs each settled (one quote won, two lost) and retained; it stops the loop and returns
// the desk state.
func buildDesk(b *testing.B, open, closed int) *machine.Desk {
	cat := []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("1000"), RegistryID: "cbtc-registry"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("100000000"), RegistryID: "usdcx-registry"},
	}
	adapter, parties, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: machine.Testnet, Seed: 7, Clock: drive.RealClock{}, Catalog: cat})
	if err != nil {
		b.Fatal(err)
	}
	cfg := machine.DefaultConfig()
	cfg.Seed, cfg.Instruments, cfg.FaucetCooldown = 7, cat, 0
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 30}}
	cfg.MinNotionalUSD = money.MustParse("1")
	cfg.QuoteLifetime = 10 * time.Minute
	parties.Apply(&cfg)
	desk, err := machine.NewDesk(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ev := drive.NewEvents()
	l, err := loop.New(loop.Config{Desk: desk, Ledger: adapter, Clock: drive.RealClock{}, Sink: ev, Workers: 4})
	if err != nil {
		b.Fatal(err)
	}
	l.Start()
	d := drive.Driver{T: b, Desk: l}
	var makers []drive.Party
	for i := range 3 {
		m := d.Register(fmt.Sprintf("mem maker %d", i))
		d.Fund(m, 2)
		if err := l.OpenSocket(context.Background(), uint64(i+1), m.KeyHash(), false); err != nil {
			b.Fatal(err)
		}
		makers = append(makers, m)
	}
	tk := d.Register("mem taker")
	d.Fund(tk, 2)
	if err := l.OpenSocket(context.Background(), 10, tk.KeyHash(), false); err != nil { // the taker hears quote.created
		b.Fatal(err)
	}
	hints := []string{makers[0].Hint, makers[1].Hint, makers[2].Hint}
	rfq := func(i int) (string, []string) {
		dir := machine.Sell
		if i%2 == 1 {
			dir = machine.Buy
		}
		r := d.Must(d.Do(machine.CreateRFQ{Req: tk.Req(), Direction: dir, Qty: money.MustParse("0.001"), Base: "cbtc", Quote: "usdcx",
			InvitedMakers: hints, TTLSeconds: 300}), 200).(machine.RfqDTO)
		var quotes []string
		for j, m := range makers {
			q := d.Must(d.Do(machine.SubmitQuote{Req: m.Req(), RFQID: r.RfqID, Price: money.MustParse(fmt.Sprint(100000 + j))}), 200).(machine.QuoteWithActionsDTO)
			d.Sign(m, q.Actions)
			quotes = append(quotes, q.QuoteID)
		}
		return r.RfqID, quotes
	}
	for i := range open {
		rfq(i)
	}
	for i := range closed {
		_, quotes := rfq(i)
		ev.WaitFor(b, tk.ID, machine.EvQuoteCreated, func(e machine.Event) bool { return e.Payload.(machine.QuoteDTO).QuoteID == quotes[0] })
		tr := d.Must(d.Do(machine.AcceptQuote{Req: tk.Req(), QuoteID: quotes[0]}), 202).(machine.TradeWithActionsDTO)
		d.Sign(tk, tr.Actions)
		ev.WaitFor(b, tk.ID, machine.EvTradeSettled, func(e machine.Event) bool { return e.Payload.(machine.TradeDTO).TradeID == tr.TradeID })
	}
	// Every quote of the open RFQs is live once the taker has heard of all of them.
	if open > 0 {
		waitCount(b, ev, tk.ID, machine.EvQuoteCreated, 3*open)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	return desk
}

// waitCount waits until the party received n events of type typ.
func waitCount(b *testing.B, ev *drive.Events, party, typ string, n int) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		c := 0
		for _, t := range ev.TypesFor(party) {
			if t == typ {
				c++
			}
		}
		if c >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s received %d %s events, want %d", party, c, typ, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stateBytes returns the snapshot size of a desk and the heap its state takes once
// restored from that snapshot (live heap after a GC, before and after machine.Restore).
func stateBytes(b *testing.B, d *machine.Desk) (snapshot, heap float64) {
	snap, err := d.EncodeSnapshot()
	if err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	restored, err := machine.Restore(snap)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(restored)
	return float64(len(snap)), float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

// BenchmarkDeskMemory reports the bytes of desk state per open RFQ with three live quotes
// and per retained closed (settled) RFQ: the heap of the state restored from its snapshot
// and the snapshot's size, each as the difference from a desk with the same parties and no
// RFQ, divided by the number of RFQs. Run it with -benchtime=1x: the desks are built once.
func BenchmarkDeskMemory(b *testing.B) {
	empty := buildDesk(b, 0, 0)
	open := buildDesk(b, memoryRFQs, 0)
	closed := buildDesk(b, 0, memoryRFQs)
	s0, h0 := stateBytes(b, empty)
	so, ho := stateBytes(b, open)
	sc, hc := stateBytes(b, closed)
	b.Logf("open RFQs %d, quotes %d; closed desk: RFQs %d, quotes %d, trades %d", len(open.RFQs), len(open.Quotes), len(closed.RFQs), len(closed.Quotes), len(closed.Trades))
	for b.Loop() {
	}
	b.ReportMetric((ho-h0)/memoryRFQs, "heap-B/open-rfq")
	b.ReportMetric((so-s0)/memoryRFQs, "snap-B/open-rfq")
	b.ReportMetric((hc-h0)/memoryRFQs, "heap-B/closed-rfq")
	b.ReportMetric((sc-s0)/memoryRFQs, "snap-B/closed-rfq")
}
