package machine

import (
	"testing"

	"github.com/deskco/rfqdesk/money"
)

// openRFQ registers a streaming maker and has the house taker ask it for a quote.
func openRFQ(t *testing.T, h *harness, dir Direction) (maker, key string, rfq RfqDTO) {
	t.Helper()
	maker, key = h.register("Maker")
	h.connect(key)
	rfq = h.ok(h.apply(CreateRFQ{Req: Req{KeyHash: keyHash("house-key")}, Direction: dir, Qty: money.MustParse("1"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{h.d.Parties[maker].Hint}, TTLSeconds: 120}), 200).(RfqDTO)
	return maker, key, rfq
}

// TestQuoteInsufficientFunds: a maker allocation the ledger cannot fund is 409
// INSUFFICIENT_FUNDS and records nothing.
func TestQuoteInsufficientFunds(t *testing.T) {
	h := newHarness(t)
	_, key, rfq := openRFQ(t, h, Sell)
	h.ledger.failNext(LedgerInsufficientFunds, func(c LedgerCall) bool { return c.Op == OpPrepare })
	seq := h.apply(SubmitQuote{Req: Req{KeyHash: keyHash(key)}, RFQID: rfq.RfqID, Price: money.MustParse("1")})
	h.refused(seq, 409, CodeInsufficientFunds)
	if n := len(h.d.RFQs[rfq.RfqID].Quotes); n != 0 || len(h.d.Quotes) != 0 || len(h.d.Actions) != 0 {
		t.Fatalf("a refused quote left state behind: %d quotes, %d actions", len(h.d.Quotes), len(h.d.Actions))
	}
}

// TestReplacementCancelsBeforeFunding: a second quote revokes the first, and its
// allocations are prepared only after the old ones were cancelled on the ledger.
func TestReplacementCancelsBeforeFunding(t *testing.T) {
	h := newHarness(t)
	maker, key, rfq := openRFQ(t, h, Sell)
	q1 := h.ok(h.apply(SubmitQuote{Req: Req{KeyHash: keyHash(key)}, RFQID: rfq.RfqID, Price: money.MustParse("90000")}), 200).(QuoteWithActionsDTO)
	h.ok(h.sign(maker, key, q1.Actions), 200)
	h.auto = false
	seq := h.apply(SubmitQuote{Req: Req{KeyHash: keyHash(key)}, RFQID: rfq.RfqID, Price: money.MustParse("91000")})
	if len(h.queued) != 2 {
		t.Fatalf("want 2 cancels first, got %d calls", len(h.queued))
	}
	for _, c := range h.queued {
		if c.Command == nil || c.Command.CancelAllocation == nil {
			t.Fatalf("a call before the cancels finished: %+v", c)
		}
	}
	if h.d.Quotes[q1.QuoteID].State != QuoteRevoked {
		t.Fatal("old quote not revoked at once")
	}
	h.flush()
	q2 := h.ok(seq, 200).(QuoteWithActionsDTO)
	if len(q2.Actions) != 2 {
		t.Fatalf("replacement actions %+v", q2.Actions)
	}
}
