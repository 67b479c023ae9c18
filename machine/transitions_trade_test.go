package machine

import (
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// One test per row of SPEC.md's Trade table, with an external (self-signing) taker.

// tradeWorld is an external taker's SELL RFQ of 1 cbtc (ttl 1 h) with one live quote at
// 60000 whose validUntil is t0+60s.
type tradeWorld struct {
	h         *harness
	taker, mk actor
	rfq       RfqDTO
	q         QuoteWithActionsDTO
}

func newTradeWorld(t *testing.T) tradeWorld {
	h := newHarness(t)
	tk, mk := h.maker("Taker"), h.maker("Maker")
	rfq := h.newRFQ(tk, Sell, "1", 3600, mk)
	q := h.submitUntil(mk, rfq.RfqID, "60000", t0.Add(60*time.Second))
	h.ok(h.sign(mk.id, mk.key, q.Actions), 200)
	return tradeWorld{h: h, taker: tk, mk: mk, rfq: rfq, q: q}
}

func TestTrade_None_Accept_Settling(t *testing.T) {
	w := newTradeWorld(t)
	h := w.h
	// Unsigned withdrawals of both parties in the trade's instruments are dropped; others stay.
	other := h.maker("Other")
	wd := func(a actor, sym string) SignActionDTO {
		return h.ok(h.apply(Withdraw{Req: a.req(), Symbol: sym, Amount: money.MustParse("1"), Receiver: other.id}), 202).(ActionsDTO).Actions[0]
	}
	takerCbtc, makerUsdcx, takerCC, otherCbtc := wd(w.taker, "cbtc"), wd(w.mk, "USDCX"), wd(w.taker, "cc"), wd(other, "cbtc")
	mark := len(h.events)
	tr := h.accept(w.taker, w.q.QuoteID)
	if tr.Status != "settling" || tr.SettledAt != nil || tr.Price.String() != "60000" || tr.Fee.String() != "60" ||
		tr.Taker != h.hint(w.taker) || tr.Maker != h.hint(w.mk) || tr.Direction != Sell || tr.Base != "cbtc" || tr.Quote != "usdcx" {
		t.Fatalf("accept answer %+v", tr.TradeDTO)
	}
	// The taker's own allocations, one per instrument, tied to the trade.
	if len(tr.Actions) != 2 {
		t.Fatalf("actions %+v", tr.Actions)
	}
	for _, x := range tr.Actions {
		if x.TradeID != tr.TradeID || x.Purpose != PurposeAllocate {
			t.Fatalf("action %+v", x)
		}
	}
	// Taker: its withdrawals in cbtc dropped, then its actions requested. Maker: its usdcx
	// withdrawal dropped.
	h.expectEvents(w.taker.id, mark, "sign.completed,sign.requested,sign.requested")
	eq(t, "dropped", h.evs(w.taker.id, mark)[0].Payload, ActionIDPayload{ActionID: takerCbtc.ID})
	h.expectEvents(w.mk.id, mark, "sign.completed")
	eq(t, "dropped", h.evs(w.mk.id, mark)[0].Payload, ActionIDPayload{ActionID: makerUsdcx.ID})
	h.expectEvents(other.id, mark, "")
	for _, id := range []string{takerCC.ID, otherCbtc.ID} {
		if _, ok := h.d.Actions[id]; !ok {
			t.Fatalf("withdrawal %s outside the trade was dropped", id)
		}
	}
	// The quote is locked.
	q := h.d.quoteDTO(h.d.Quotes[w.q.QuoteID])
	if !q.Settling || q.Status != "pending" {
		t.Fatalf("quote %+v", q)
	}
	if h.d.Trades[tr.TradeID].State != TradeAllocating || h.d.RFQs[w.rfq.RfqID].SettlingTrade != tr.TradeID {
		t.Fatal("trade not settling")
	}
	// The dropped withdrawal is forgotten: the maker may withdraw usdcx again once the trade
	// no longer settles (meanwhile the trade blocks it).
	h.refused(h.apply(Withdraw{Req: w.mk.req(), Symbol: "usdcx", Amount: money.MustParse("1"), Receiver: other.id}), 409, CodeRetryLater)
	h.ok(h.sign(w.taker.id, w.taker.key, tr.Actions), 200)
	h.ok(h.apply(Withdraw{Req: w.mk.req(), Symbol: "usdcx", Amount: money.MustParse("1"), Receiver: other.id}), 202)
}

func TestTrade_Settling_EveryAllocationCommitted_StepAllocated(t *testing.T) {
	w := newTradeWorld(t)
	h := w.h
	tr := h.accept(w.taker, w.q.QuoteID)
	h.auto = false
	mark := len(h.events)
	h.sign(w.taker.id, w.taker.key, tr.Actions)
	h.answerWhere(isExecute)
	h.expectEvents(w.taker.id, mark, "sign.completed")
	h.answerWhere(isExecute)
	// Every allocation landed: maker 2, taker 2, fee 1.
	var refs []string
	for _, al := range append(append([]AllocationRef{}, h.d.Quotes[w.q.QuoteID].Allocations...), h.d.Trades[tr.TradeID].Allocations...) {
		refs = append(refs, al.CID)
	}
	if len(refs) != 5 {
		t.Fatalf("allocations %v", refs)
	}
	h.expectEvents(w.taker.id, mark, "sign.completed,sign.completed,trade.step")
	step := TradeStepPayload{TradeID: tr.TradeID, RfqID: w.rfq.RfqID, Step: "allocated", Refs: refs}
	eq(t, "taker step", h.evs(w.taker.id, mark)[2].Payload, step)
	h.expectEvents(w.mk.id, mark, "trade.step")
	// The atomic settle follows, over every allocation.
	if len(h.queued) != 1 || !isSettle(h.queued[0]) || len(h.queued[0].Command.Settle.Allocations) != 5 {
		t.Fatalf("calls %+v", h.queued)
	}
	if st := h.d.Trades[tr.TradeID].State; st != TradeSettling {
		t.Fatalf("state %s", st)
	}
}

func TestTrade_Settling_AtomicSettleExecutes_Settled(t *testing.T) {
	w := newTradeWorld(t)
	h := w.h
	tr := h.accept(w.taker, w.q.QuoteID)
	h.auto = false
	h.sign(w.taker.id, w.taker.key, tr.Actions)
	h.answerWhere(isExecute)
	h.answerWhere(isExecute)
	h.ok(h.heldOrReply(), 200)
	// In flight: not listed.
	if got := h.read(w.taker.key, QTrades{}).Body.([]TradeDTO); len(got) != 0 {
		t.Fatalf("a trade in flight is listed: %+v", got)
	}
	mark := len(h.events)
	h.answerWhere(isSettle)
	h.expectEvents(w.taker.id, mark, "trade.settled,rfq.closed")
	h.expectEvents(w.mk.id, mark, "trade.settled,quote.status,rfq.closed")
	got := h.evs(w.taker.id, mark)[0].Payload.(TradeDTO)
	if got.Status != "settled" || got.SettledAt == nil || *got.SettledAt != at(h.now) || len(got.Ledger.ReceiptCids) != 3 || got.Ledger.UpdateID == "" {
		t.Fatalf("trade.settled %+v", got)
	}
	for _, who := range []actor{w.taker, w.mk} {
		eq(t, "GET /trades", h.read(who.key, QTrades{}).Body, []TradeDTO{got})
	}
	eq(t, "maker trades", h.read(w.mk.key, QMakerTrades{}).Body, []TradeDTO{got})
	eq(t, "maker trades of the taker", h.read(w.taker.key, QMakerTrades{}).Body, []TradeDTO{})
	if h.d.RFQs[w.rfq.RfqID].open() {
		t.Fatal("a filled RFQ is still open")
	}
}

// heldOrReply returns the seq of the newest request (the batch execute above).
func (h *harness) heldOrReply() uint64 {
	var newest uint64
	for seq := range h.replies {
		if seq > newest {
			newest = seq
		}
	}
	return newest
}

func TestTrade_Settling_SettlementFails_Failed(t *testing.T) {
	cases := []struct {
		name   string
		fail   func(h *harness, w tradeWorld, tr TradeWithActionsDTO)
		reason string
	}{
		{"taker cannot fund", func(h *harness, w tradeWorld, tr TradeWithActionsDTO) {
			h.ledger.failNext(LedgerInsufficientFunds, isExecute)
			res := h.ok(h.sign(w.taker.id, w.taker.key, tr.Actions), 200).(ExecBatchDTO)
			if res.Results[0].Status != "error" || *res.Results[0].Retryable {
				t.Fatalf("entry %+v", res.Results[0])
			}
		}, reasonTakerFunds},
		{"window expired", func(h *harness, w tradeWorld, tr TradeWithActionsDTO) {
			h.ledger.failNext(LedgerExpired, isSettle)
			h.sign(w.taker.id, w.taker.key, tr.Actions)
		}, reasonWindow},
		{"maker allocation gone", func(h *harness, w tradeWorld, tr TradeWithActionsDTO) {
			h.ledger.failNext(LedgerNotFound, isSettle)
			h.sign(w.taker.id, w.taker.key, tr.Actions)
		}, reasonMakerGone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newTradeWorld(t)
			h := w.h
			tr := h.accept(w.taker, w.q.QuoteID)
			mark := len(h.events)
			c.fail(h, w, tr)
			failed := TradeFailedPayload{TradeID: tr.TradeID, RfqID: w.rfq.RfqID, Reason: c.reason}
			got, ok := h.lastOf(w.taker.id, EvTradeFailed)
			if !ok {
				t.Fatalf("no trade.failed; taker events %v", h.eventsFor(w.taker.id, mark))
			}
			eq(t, "trade.failed", got.Payload, failed)
			mk, _ := h.lastOf(w.mk.id, EvTradeFailed)
			eq(t, "maker's trade.failed", mk.Payload, failed)
			// Nothing moved: every allocation is released, the trade is not listed, the
			// quote is revoked, the history row says failed, the RFQ stays open.
			for _, al := range append(append([]AllocationRef{}, h.d.Quotes[w.q.QuoteID].Allocations...), h.d.Trades[tr.TradeID].Allocations...) {
				if al.CID != "" && !al.Cancelled {
					t.Fatalf("allocation %s not released", al.LegID)
				}
			}
			eq(t, "trades", h.read(w.taker.key, QTrades{}).Body, []TradeDTO{})
			st, _ := h.lastOf(w.mk.id, EvQuoteStatus)
			eq(t, "quote status", st.Payload, statusOf(w.q.QuoteID, w.rfq.RfqID, "revoked"))
			hist := h.read(w.taker.key, QRfqHistory{}).Body.([]RfqHistoryDTO)
			if len(hist) != 1 || hist[0].Kind != "failed" || hist[0].Reason != c.reason || hist[0].Maker != h.hint(w.mk) ||
				hist[0].RfqID != w.rfq.RfqID || hist[0].QuoteCount != 1 || hist[0].BestPrice.String() != "60000" {
				t.Fatalf("history %+v", hist)
			}
			rec, _ := h.lastOf(w.taker.id, EvHistoryRecorded)
			eq(t, "history.recorded", rec.Payload, hist[0])
			r := h.d.RFQs[w.rfq.RfqID]
			if !r.open() || r.SettlingTrade != "" || len(h.pending(w.taker)) != 0 {
				t.Fatalf("rfq %+v, pending %v", r, h.pending(w.taker))
			}
			// Another accept is possible until the deadline, then the RFQ expires.
			mark = len(h.events)
			h.advance(time.Hour)
			h.expectEvents(w.taker.id, mark, "rfq.expired,history.recorded")
			if r.State != RFQExpired {
				t.Fatalf("rfq state %s", r.State)
			}
		})
	}
}

func TestTrade_Settling_AllocationsUnsigned_FailsAtWindow(t *testing.T) {
	w := newTradeWorld(t)
	h := w.h
	h.advance(time.Second)
	tr := h.accept(w.taker, w.q.QuoteID)
	window := t0.Add(60*time.Second + 11*time.Minute)
	if got := h.d.Trades[tr.TradeID].WindowEnds; !got.Equal(window) {
		t.Fatalf("window ends %v, want validUntil + 10 m + 1 m", got)
	}
	// An action expires after 10 minutes; the window is open, so a fresh one replaces it.
	mark := len(h.events)
	h.advance(10 * time.Minute)
	h.expectEvents(w.taker.id, mark, "sign.completed,sign.completed,sign.requested,sign.requested")
	fresh := h.pending(w.taker)
	if len(fresh) != 2 || fresh[0].ID == tr.Actions[0].ID || fresh[0].TradeID != tr.TradeID {
		t.Fatalf("fresh actions %+v", fresh)
	}
	// A blind resend of an expired action is 410 (batch: error, not retryable).
	res := h.ok(h.sign(w.taker.id, w.taker.key, tr.Actions[:1]), 200).(ExecBatchDTO)
	if res.Results[0].Status != "error" || *res.Results[0].Retryable {
		t.Fatalf("resend of expired %+v", res.Results[0])
	}
	h.refused(h.signOne(w.taker, tr.Actions[0]), 410, "")
	// Still unsigned when the window closes: the trade fails.
	mark = len(h.events)
	h.advance(window.Sub(h.now) - time.Millisecond)
	h.expectEvents(w.taker.id, mark, "")
	h.advance(time.Millisecond)
	h.expectEvents(w.taker.id, mark, "sign.completed,sign.completed,trade.failed,quote.status,history.recorded")
	got, _ := h.lastOf(w.taker.id, EvTradeFailed)
	eq(t, "trade.failed", got.Payload, TradeFailedPayload{TradeID: tr.TradeID, RfqID: w.rfq.RfqID, Reason: reasonWindow})
	if len(h.pending(w.taker)) != 0 || h.d.Trades[tr.TradeID].State != TradeFailed {
		t.Fatal("trade not failed cleanly")
	}
}
