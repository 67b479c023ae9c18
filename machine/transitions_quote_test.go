package machine

import (
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// One test per row of SPEC.md's Quote status table.

// quoteWorld is a house-taker SELL RFQ of 1 cbtc with two streaming makers.
type quoteWorld struct {
	h      *harness
	m1, m2 actor
	rfq    RfqDTO
}

func newQuoteWorld(t *testing.T) quoteWorld {
	h := newHarness(t)
	m1, m2 := h.maker("Alpha"), h.maker("Beta")
	return quoteWorld{h: h, m1: m1, m2: m2, rfq: h.newRFQ(houseTaker, Sell, "1", 120, m1, m2)}
}

func statusOf(id, rfq, status string) QuoteStatusPayload {
	return QuoteStatusPayload{QuoteID: id, RfqID: rfq, Status: status}
}

func TestQuote_None_PostMakerQuotes_PendingUnanchored(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	mark := len(h.events)
	q := h.submit(w.m1, w.rfq.RfqID, "60000.50")
	// The answer: a pending, unanchored QuoteDTO with the default lifetime, and two allocate
	// actions (the asset sent and the asset received).
	eq(t, "quote answer", q.QuoteDTO, QuoteDTO{QuoteID: q.QuoteID, RfqID: w.rfq.RfqID, Maker: h.hint(w.m1),
		Price: money.MustParse("60000.5"), ValidUntil: at(t0.Add(30 * time.Second)), Status: "pending", AnchorCids: []string{}})
	if len(q.Actions) != 2 {
		t.Fatalf("actions %+v", q.Actions)
	}
	for _, x := range q.Actions {
		if x.Purpose != PurposeAllocate || x.Kind != "hash" || len(x.Hash) == 0 || x.TradeID != "" ||
			x.CreatedAt != at(t0) || x.ExpiresAt != at(t0.Add(30*time.Second)) {
			t.Fatalf("action %+v", x)
		}
	}
	// quote.created to the maker, then one sign.requested per action; nothing to the taker.
	h.expectEvents(w.m1.id, mark, "quote.created,sign.requested,sign.requested")
	eq(t, "quote.created payload", h.evs(w.m1.id, mark)[0].Payload, q.QuoteDTO)
	h.expectEvents(houseTaker.id, mark, "")
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteFunding {
		t.Fatalf("state %s", st)
	}
	mine := h.read(houseTaker.key, QRfqMine{}).Body.([]RfqDTO)
	if len(*mine[0].Quotes) != 0 {
		t.Fatalf("unanchored quote visible to the taker: %+v", mine[0].Quotes)
	}
	eq(t, "pending actions", h.pending(w.m1), q.Actions)
}

func TestQuote_PendingUnanchored_AllActionsExecuted_AnchoredLive(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q := h.submit(w.m1, w.rfq.RfqID, "60000")
	mark := len(h.events)
	res := h.ok(h.sign(w.m1.id, w.m1.key, q.Actions), 200).(ExecBatchDTO)
	for _, r := range res.Results {
		if r.Status != "executed" || r.Error != "" || r.Retryable != nil {
			t.Fatalf("batch entry %+v", r)
		}
	}
	h.expectEvents(w.m1.id, mark, "sign.completed,sign.completed,quote.anchored")
	cids := []string{}
	for _, al := range h.d.Quotes[q.QuoteID].Allocations {
		cids = append(cids, al.CID)
	}
	evs := h.evs(w.m1.id, mark)
	eq(t, "quote.anchored", evs[2].Payload, QuoteAnchoredPayload{QuoteID: q.QuoteID, RfqID: w.rfq.RfqID, AnchorCids: cids})
	// The taker sees the quote now, as quote.created and in GET /rfq/mine.
	h.expectEvents(houseTaker.id, mark, "quote.created")
	want := q.QuoteDTO
	want.AnchorCids = cids
	eq(t, "taker's quote.created", h.evs(houseTaker.id, mark)[0].Payload, want)
	mine := h.read(houseTaker.key, QRfqMine{}).Body.([]RfqDTO)
	eq(t, "rfq/mine quotes", *mine[0].Quotes, []QuoteDTO{want})
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteLive {
		t.Fatalf("state %s", st)
	}
	if len(h.pending(w.m1)) != 0 {
		t.Fatal("executed actions still pending")
	}
}

func TestQuote_PendingUnanchored_ValidUntilPassesUnsigned_Revoked(t *testing.T) {
	for _, signed := range []int{0, 1} {
		w := newQuoteWorld(t)
		h := w.h
		q := h.submit(w.m1, w.rfq.RfqID, "60000")
		if signed == 1 {
			h.ok(h.signOne(w.m1, q.Actions[0]), 200)
		}
		mark := len(h.events)
		h.auto = false
		h.advance(30 * time.Second)
		// The unsigned actions go with the quote (sign.completed), then quote.status revoked.
		want := "sign.completed,sign.completed,quote.status"
		if signed == 1 {
			want = "sign.completed,quote.status"
		}
		h.expectEvents(w.m1.id, mark, want)
		last, _ := h.lastOf(w.m1.id, EvQuoteStatus)
		eq(t, "status", last.Payload, statusOf(q.QuoteID, w.rfq.RfqID, "revoked"))
		h.expectEvents(houseTaker.id, mark, "") // the taker never saw it
		if st := h.d.Quotes[q.QuoteID].State; st != QuoteRevoked {
			t.Fatalf("state %s", st)
		}
		// A landed allocation is released on the ledger.
		if cancels := len(h.queued); cancels != signed || (signed == 1 && !isCancel(h.queued[0])) {
			t.Fatalf("ledger calls after expiry: %+v", h.queued)
		}
		h.flush()
		if len(h.pending(w.m1)) != 0 || len(h.d.Actions) != 0 {
			t.Fatal("actions survived their quote")
		}
	}
}

func TestQuote_Pending_TradeSettles_ThisQuoteAccepted_Won(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q := h.live(w.m1, w.rfq.RfqID, "60000")
	mark := len(h.events)
	tr := h.accept(houseTaker, q.QuoteID)
	h.expectEvents(w.m1.id, mark, "trade.step,trade.settled,quote.status,rfq.closed")
	evs := h.evs(w.m1.id, mark)
	settled := h.d.tradeDTO(h.d.Trades[tr.TradeID])
	eq(t, "trade.settled", evs[1].Payload, settled)
	eq(t, "quote.status", evs[2].Payload, statusOf(q.QuoteID, w.rfq.RfqID, "won"))
	if settled.Status != "settled" || settled.SettledAt == nil || len(settled.Ledger.ReceiptCids) != 3 || settled.Ledger.UpdateID == "" {
		t.Fatalf("settled trade %+v", settled)
	}
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteWon {
		t.Fatalf("state %s", st)
	}
}

func TestQuote_Pending_TradeSettles_AnotherMakerFilled_Lost(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q1 := h.live(w.m1, w.rfq.RfqID, "60000")
	q2 := h.live(w.m2, w.rfq.RfqID, "59000")
	mark := len(h.events)
	h.accept(houseTaker, q1.QuoteID)
	// The loser: rfq.closed, then quote.status lost; the taker likewise after its trade news.
	h.expectEvents(w.m2.id, mark, "rfq.closed,quote.status")
	eq(t, "loser's status", h.evs(w.m2.id, mark)[1].Payload, statusOf(q2.QuoteID, w.rfq.RfqID, "lost"))
	h.expectEvents(houseTaker.id, mark, "trade.step,trade.settled,rfq.closed,quote.status")
	eq(t, "rfq.closed", h.evs(houseTaker.id, mark)[2].Payload, RfqIDPayload{RfqID: w.rfq.RfqID})
	if st := h.d.Quotes[q2.QuoteID].State; st != QuoteLost {
		t.Fatalf("state %s", st)
	}
	// The loser's allocations are released.
	for _, al := range h.d.Quotes[q2.QuoteID].Allocations {
		if !al.Cancelled {
			t.Fatalf("loser's allocation %s not cancelled", al.LegID)
		}
	}
}

func TestQuote_Pending_SecondQuoteSameMakerSameRFQ_OldRevoked(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q1 := h.live(w.m1, w.rfq.RfqID, "60000")
	mark := len(h.events)
	h.auto = false
	seq := h.apply(SubmitQuote{Req: w.m1.req(), RFQID: w.rfq.RfqID, Price: money.MustParse("61000")})
	// The old quote is revoked at once and its allocations are cancelled before anything of
	// the new quote reaches the ledger.
	h.expectEvents(w.m1.id, mark, "quote.status")
	eq(t, "old status", h.evs(w.m1.id, mark)[0].Payload, statusOf(q1.QuoteID, w.rfq.RfqID, "revoked"))
	h.expectEvents(houseTaker.id, mark, "quote.status")
	if len(h.queued) != 2 || !isCancel(h.queued[0]) || !isCancel(h.queued[1]) {
		t.Fatalf("calls before the cancels finished: %+v", h.queued)
	}
	h.answerWhere(isCancel)
	if len(h.queued) != 1 {
		t.Fatalf("new allocations prepared before every cancel finished: %+v", h.queued)
	}
	h.flush()
	q2 := h.ok(seq, 200).(QuoteWithActionsDTO)
	if len(q2.Actions) != 2 || q2.QuoteID == q1.QuoteID {
		t.Fatalf("replacement %+v", q2)
	}
	if st := h.d.Quotes[q1.QuoteID].State; st != QuoteRevoked {
		t.Fatalf("old state %s", st)
	}
}

// A failed replacement leaves the maker with no quote on the RFQ.
func TestQuote_Pending_SecondQuoteFails_NoQuoteLeft(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q1 := h.live(w.m1, w.rfq.RfqID, "60000")
	h.ledger.failNext(LedgerInsufficientFunds, isPrepare)
	h.refused(h.apply(SubmitQuote{Req: w.m1.req(), RFQID: w.rfq.RfqID, Price: money.MustParse("61000")}), 409, CodeInsufficientFunds)
	for _, q := range h.d.Quotes {
		if q.Maker == w.m1.id && q.pending() {
			t.Fatalf("quote %s still pending", q.ID)
		}
	}
	in := h.read(w.m1.key, QRfqIncoming{}).Body.([]IncomingRfqDTO)
	if in[0].MyQuote == nil || in[0].MyQuote.QuoteID != q1.QuoteID || in[0].MyQuote.Status != "revoked" {
		t.Fatalf("myQuote %+v", in[0].MyQuote)
	}
}

func TestQuote_Pending_DeleteNotSettling_Revoked(t *testing.T) {
	for _, anchored := range []bool{false, true} {
		w := newQuoteWorld(t)
		h := w.h
		var q QuoteWithActionsDTO
		if anchored {
			q = h.live(w.m1, w.rfq.RfqID, "60000")
		} else {
			q = h.submit(w.m1, w.rfq.RfqID, "60000")
		}
		mark := len(h.events)
		if r := h.reply(h.apply(DeleteQuote{Req: w.m1.req(), QuoteID: q.QuoteID})); r.Status != 204 || r.Err != nil || r.Body != nil {
			t.Fatalf("delete answer %+v", r)
		}
		if anchored {
			h.expectEvents(w.m1.id, mark, "quote.status")
			h.expectEvents(houseTaker.id, mark, "quote.status")
		} else {
			h.expectEvents(w.m1.id, mark, "sign.completed,sign.completed,quote.status")
			h.expectEvents(houseTaker.id, mark, "")
		}
		last, _ := h.lastOf(w.m1.id, EvQuoteStatus)
		eq(t, "status", last.Payload, statusOf(q.QuoteID, w.rfq.RfqID, "revoked"))
		if st := h.d.Quotes[q.QuoteID].State; st != QuoteRevoked {
			t.Fatalf("state %s", st)
		}
	}
}

func TestQuote_Accepted_SettlementFails_Revoked(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q := h.live(w.m1, w.rfq.RfqID, "60000")
	h.ledger.failNext(LedgerNotFound, isSettle) // the maker's allocation is gone
	mark := len(h.events)
	tr := h.accept(houseTaker, q.QuoteID)
	h.expectEvents(w.m1.id, mark, "trade.step,trade.failed,quote.status")
	eq(t, "trade.failed", h.evs(w.m1.id, mark)[1].Payload, TradeFailedPayload{TradeID: tr.TradeID, RfqID: w.rfq.RfqID, Reason: reasonMakerGone})
	eq(t, "quote.status", h.evs(w.m1.id, mark)[2].Payload, statusOf(q.QuoteID, w.rfq.RfqID, "revoked"))
	h.expectEvents(houseTaker.id, mark, "trade.step,trade.failed,quote.status,history.recorded")
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteRevoked {
		t.Fatalf("state %s", st)
	}
	if !h.d.RFQs[w.rfq.RfqID].open() {
		t.Fatal("the RFQ must stay open until its deadline")
	}
}

func TestQuote_Pending_TakerCancelsRFQ_Cancelled(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q1 := h.live(w.m1, w.rfq.RfqID, "60000")
	q2 := h.submit(w.m2, w.rfq.RfqID, "59000") // unanchored: the taker never saw it
	mark := len(h.events)
	if r := h.reply(h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: w.rfq.RfqID})); r.Status != 204 || r.Err != nil {
		t.Fatalf("cancel answer %+v", r)
	}
	h.expectEvents(w.m1.id, mark, "rfq.closed,quote.status")
	eq(t, "m1 status", h.evs(w.m1.id, mark)[1].Payload, statusOf(q1.QuoteID, w.rfq.RfqID, "cancelled"))
	h.expectEvents(w.m2.id, mark, "rfq.closed,sign.completed,sign.completed,quote.status")
	eq(t, "m2 status", h.evs(w.m2.id, mark)[3].Payload, statusOf(q2.QuoteID, w.rfq.RfqID, "cancelled"))
	h.expectEvents(houseTaker.id, mark, "rfq.closed,quote.status,history.recorded")
	for _, id := range []string{q1.QuoteID, q2.QuoteID} {
		if st := h.d.Quotes[id].State; st != QuoteCancelled {
			t.Fatalf("%s state %s", id, st)
		}
	}
}

func TestQuote_Pending_ValidUntilOrDeadlinePasses_Expired(t *testing.T) {
	t.Run("validUntil", func(t *testing.T) {
		w := newQuoteWorld(t)
		h := w.h
		q := h.live(w.m1, w.rfq.RfqID, "60000")
		mark := len(h.events)
		h.advance(30 * time.Second)
		h.expectEvents(w.m1.id, mark, "quote.status")
		eq(t, "status", h.evs(w.m1.id, mark)[0].Payload, statusOf(q.QuoteID, w.rfq.RfqID, "expired"))
		h.expectEvents(houseTaker.id, mark, "quote.status")
		if !h.d.RFQs[w.rfq.RfqID].open() {
			t.Fatal("a quote's expiry must not close its RFQ")
		}
	})
	t.Run("deadline", func(t *testing.T) {
		w := newQuoteWorld(t)
		h := w.h
		q := h.d.Quotes[h.submitUntil(w.m1, w.rfq.RfqID, "60000", t0.Add(120*time.Second)).QuoteID]
		h.ok(h.sign(w.m1.id, w.m1.key, h.pending(w.m1)), 200)
		mark := len(h.events)
		h.advance(120 * time.Second)
		h.expectEvents(w.m1.id, mark, "rfq.expired,quote.status")
		eq(t, "status", h.evs(w.m1.id, mark)[1].Payload, statusOf(q.ID, w.rfq.RfqID, "expired"))
		if q.State != QuoteExpired {
			t.Fatalf("state %s", q.State)
		}
	})
}

// open reports whether the RFQ is open (test helper).
func (r *RFQ) open() bool { return r.State == RFQOpen }
