package loop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// testDesk is a running in-process desk on the embedded ledger, without a journal.
type testDesk struct {
	drive.Driver
	loop   *loop.Loop
	ledger *ledgeradapter.Adapter
	cfg    machine.Config
}

func startDesk(tb testing.TB, cat []machine.Instrument, feeBps int, sink loop.Sink) *testDesk {
	tb.Helper()
	return startDeskWith(tb, cat, feeBps, sink, nil)
}

// startDeskWith is startDesk with the loop's configuration adjusted by tune.
func startDeskWith(tb testing.TB, cat []machine.Instrument, feeBps int, sink loop.Sink, tune func(*loop.Config)) *testDesk {
	tb.Helper()
	adapter, parties, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{
		Network: machine.Testnet, Seed: 7, Clock: drive.RealClock{}, Catalog: cat,
	})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := drive.Config(7, cat, feeBps)
	parties.Apply(&cfg)
	d, err := machine.NewDesk(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	lc := loop.Config{Desk: d, Ledger: adapter, Clock: drive.RealClock{}, Sink: sink, Workers: 4}
	if tune != nil {
		tune(&lc)
	}
	l, err := loop.New(lc)
	if err != nil {
		tb.Fatal(err)
	}
	l.Start()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.Stop(ctx); err != nil {
			tb.Error(err)
		}
	})
	return &testDesk{Driver: drive.Driver{T: tb, Desk: l}, loop: l, ledger: adapter, cfg: cfg}
}

// TestEndToEndInProcess: two makers and a taker register, fund through the faucet and
// deposit accepts, the taker asks both, both quote and sign, the taker accepts the better
// quote and signs, and the trade settles: balances move by exactly qty, price and fee, and
// the loser hears rfq.closed then quote.status lost.
func TestEndToEndInProcess(t *testing.T) {
	events := drive.NewEvents()
	d := startDesk(t, drive.Catalog("0.1", "10000"), 25, events)
	m1, m2, taker := d.Register("Maker One"), d.Register("Maker Two"), d.Register("Taker")
	for _, p := range []drive.Party{m1, m2, taker} {
		d.Fund(p, 2)
	}
	if got := d.Balances(taker); fmt.Sprint(got) != "map[cbtc:0.1 usdcx:10000]" {
		t.Fatalf("funded balances %v", got)
	}
	for i, p := range []drive.Party{m1, m2} {
		if err := d.loop.OpenSocket(context.Background(), uint64(i+1), p.KeyHash(), false); err != nil {
			t.Fatal(err)
		}
	}
	rfq := d.Must(d.Do(machine.CreateRFQ{Req: taker.Req(), Direction: machine.Sell,
		Qty: money.MustParse("0.05"), Base: "cbtc", Quote: "USDCX", InvitedMakers: []string{m1.Hint, m2.Hint}, TTLSeconds: 120}), 200).(machine.RfqDTO)

	quote := func(m drive.Party, price string) machine.QuoteWithActionsDTO {
		q := d.Must(d.Do(machine.SubmitQuote{Req: m.Req(), RFQID: rfq.RfqID, Price: money.MustParse(price)}), 200).(machine.QuoteWithActionsDTO)
		d.Sign(m, q.Actions)
		events.WaitFor(t, m.ID, machine.EvQuoteAnchored, nil)
		return q
	}
	q1 := quote(m1, "60000")
	quote(m2, "59000")
	events.WaitFor(t, taker.ID, machine.EvQuoteCreated, func(e machine.Event) bool { return e.Payload.(machine.QuoteDTO).QuoteID == q1.QuoteID })

	trade := d.Must(d.Do(machine.AcceptQuote{Req: taker.Req(), QuoteID: q1.QuoteID}), 202).(machine.TradeWithActionsDTO)
	if len(trade.Actions) != 2 || trade.Status != "settling" {
		t.Fatalf("accept answer %+v", trade)
	}
	d.Sign(taker, trade.Actions)
	settled := events.WaitFor(t, taker.ID, machine.EvTradeSettled, nil).Payload.(machine.TradeDTO)
	if settled.Status != "settled" || settled.Fee.String() != "7.5" || len(settled.Ledger.ReceiptCids) != 3 || settled.Ledger.UpdateID == "" {
		t.Fatalf("settled trade %+v", settled)
	}

	// 0.05 cbtc × 60000 = 3000 usdcx; fee 25 bps = 7.5, paid by the taker. The loser's
	// allocation is cancelled by a ledger call of its own, which may land after the
	// settlement: its funds are free again within moments, not at once.
	for _, c := range []struct {
		p    drive.Party
		want string
	}{
		{taker, "map[cbtc:0.05 usdcx:12992.5]"},
		{m1, "map[cbtc:0.15 usdcx:7000]"},
		{m2, "map[cbtc:0.1 usdcx:10000]"},
	} {
		got := fmt.Sprint(d.Balances(c.p))
		for deadline := time.Now().Add(5 * time.Second); got != c.want && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			got = fmt.Sprint(d.Balances(c.p))
		}
		if got != c.want {
			t.Errorf("%s balances %s, want %s", c.p.Hint, got, c.want)
		}
	}
	fees := d.ledger.L.Balances(d.cfg.FeeParty)
	if len(fees) != 1 || fees[0].Free.String() != "7.5" {
		t.Errorf("fee party balances %+v", fees)
	}
	events.WaitFor(t, m2.ID, machine.EvQuoteStatus, func(e machine.Event) bool { return e.Payload.(machine.QuoteStatusPayload).Status == "lost" })
	loser := events.TypesFor(m2.ID)
	if n := len(loser); n < 2 || loser[n-2] != machine.EvRfqClosed || loser[n-1] != machine.EvQuoteStatus {
		t.Fatalf("loser's events end with %v, want rfq.closed then quote.status", loser)
	}
	if err := d.ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
