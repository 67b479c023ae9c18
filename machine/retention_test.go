package machine

import (
	"testing"

	"github.com/deskco/rfqdesk/money"
)

// TestSettledTradesAreForgottenWithTheirLists: with a retention of 2, the trade lists keep
// the 2 newest trades and the desk forgets a settled trade once no list names it, so state
// stays bounded however many trades settle.
func TestSettledTradesAreForgottenWithTheirLists(t *testing.T) {
	cfg := testConfig()
	cfg.HistoryRetention = 2
	h := newHarnessWith(t, cfg)
	maker, key := h.register("Maker")
	h.connect(key)
	var settled []string
	for range 5 {
		rfq := h.ok(h.apply(CreateRFQ{Req: Req{KeyHash: keyHash("house-key")}, Direction: Sell, Qty: money.MustParse("0.1"),
			Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{h.d.Parties[maker].Hint}, TTLSeconds: 60}), 200).(RfqDTO)
		q := h.ok(h.apply(SubmitQuote{Req: Req{KeyHash: keyHash(key)}, RFQID: rfq.RfqID, Price: money.MustParse("50000")}), 200).(QuoteWithActionsDTO)
		h.ok(h.sign(maker, key, q.Actions), 200)
		tr := h.ok(h.apply(AcceptQuote{Req: Req{KeyHash: keyHash("house-key")}, QuoteID: q.QuoteID}), 202).(TradeWithActionsDTO)
		settled = append(settled, tr.TradeID)
	}
	if n := len(h.d.Trades); n != 2 {
		t.Fatalf("the desk holds %d trades, want the 2 the lists name", n)
	}
	got := h.read(key, QTrades{}).Body.([]TradeDTO)
	if len(got) != 2 || got[0].TradeID != settled[4] || got[1].TradeID != settled[3] {
		t.Fatalf("maker's trades %+v, want the two newest", got)
	}
}
