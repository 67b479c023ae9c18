package machine

import (
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// TestLifecycleSell drives the whole happy path: two makers register and stream, a house
// taker sells 0.5 cbtc, both quote and sign, the taker accepts the better quote, the
// allocations land and the trade settles; the loser hears rfq.closed then quote.status lost.
func TestLifecycleSell(t *testing.T) {
	h := newHarness(t)
	m1, k1 := h.register("Alpha Maker")
	m2, k2 := h.register("Beta")
	h.connect(k1)
	h.connect(k2)
	taker := "house-taker::1220dd"
	takerKey := "house-key"

	rfq := h.ok(h.apply(CreateRFQ{Req: Req{KeyHash: keyHash(takerKey)}, Direction: Sell, Qty: money.MustParse("0.5"),
		Base: "CBTC", Quote: "usdcx", InvitedMakers: []string{h.d.Parties[m1].Hint, h.d.Parties[m2].Hint}, TTLSeconds: 60}), 200).(RfqDTO)
	if rfq.FeeBps != 25 || rfq.Base != "cbtc" || !rfq.Open {
		t.Fatalf("rfq %+v", rfq)
	}

	q1 := h.ok(h.apply(SubmitQuote{Req: Req{KeyHash: keyHash(k1)}, RFQID: rfq.RfqID, Price: money.MustParse("60000")}), 200).(QuoteWithActionsDTO)
	q2 := h.ok(h.apply(SubmitQuote{Req: Req{KeyHash: keyHash(k2)}, RFQID: rfq.RfqID, Price: money.MustParse("59000")}), 200).(QuoteWithActionsDTO)
	if len(q1.Actions) != 2 || q1.Status != "pending" || len(q1.AnchorCids) != 0 {
		t.Fatalf("quote answer %+v", q1)
	}
	// Unanchored quotes are invisible to the taker.
	if mine := h.read(takerKey, QRfqMine{}).Body.([]RfqDTO); len(*mine[0].Quotes) != 0 {
		t.Fatalf("unanchored quote visible: %+v", mine)
	}
	mark := len(h.events)
	h.ok(h.sign(m1, k1, q1.Actions), 200)
	h.ok(h.sign(m2, k2, q2.Actions), 200)
	if got := joined(h.eventsFor(m1, mark)); got != "sign.completed,sign.completed,quote.anchored" {
		t.Fatalf("maker events after signing: %s", got)
	}
	if got := joined(h.eventsFor(taker, mark)); got != "quote.created,quote.created" {
		t.Fatalf("taker events after anchoring: %s", got)
	}
	mine := h.read(takerKey, QRfqMine{}).Body.([]RfqDTO)
	if len(*mine[0].Quotes) != 2 {
		t.Fatalf("anchored quotes not visible: %+v", mine)
	}

	mark = len(h.events)
	trade := h.ok(h.apply(AcceptQuote{Req: Req{KeyHash: keyHash(takerKey)}, QuoteID: q1.QuoteID}), 202).(TradeWithActionsDTO)
	if trade.Status != "settled" && trade.Status != "settling" {
		t.Fatalf("trade status %q", trade.Status)
	}
	if len(trade.Actions) != 0 {
		t.Fatalf("a house taker got actions: %+v", trade.Actions)
	}
	// 0.5 × 60000 = 30000 USDCx, fee 25 bps = 75.
	if trade.Fee.String() != "75" || trade.Price.String() != "60000" {
		t.Fatalf("trade amounts %+v", trade)
	}
	if got := joined(h.eventsFor(m1, mark)); got != "trade.step,trade.settled,quote.status,rfq.closed" {
		t.Fatalf("winner events: %s", got)
	}
	if got := joined(h.eventsFor(m2, mark)); got != "rfq.closed,quote.status" {
		t.Fatalf("loser events: %s", got)
	}
	var last Event
	for _, e := range h.events {
		if e.Party == m2 {
			last = e
		}
	}
	if st, ok := last.Payload.(QuoteStatusPayload); !ok || st.Status != "lost" || st.QuoteID != q2.QuoteID {
		t.Fatalf("loser's last event %+v", last)
	}
	trades := h.read(k1, QTrades{}).Body.([]TradeDTO)
	if len(trades) != 1 || trades[0].Status != "settled" || len(trades[0].Ledger.ReceiptCids) != 3 {
		t.Fatalf("maker trades %+v", trades)
	}
	incoming := h.read(k2, QRfqIncoming{}).Body.([]IncomingRfqDTO)
	if incoming[0].Open || incoming[0].MyQuote == nil || incoming[0].MyQuote.Status != "lost" {
		t.Fatalf("loser's incoming view %+v", incoming[0])
	}
	// Closed RFQs stay readable for 10 minutes, then go.
	h.advance(10*time.Minute + time.Second)
	if got := h.read(k2, QRfqIncoming{}).Body.([]IncomingRfqDTO); len(got) != 0 {
		t.Fatalf("closed RFQ still listed after retention: %+v", got)
	}
}
