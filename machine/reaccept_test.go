package machine

import "testing"

// takeQueued removes and returns the first queued call that matches (manual mode).
func (h *harness) takeQueued(match func(LedgerCall) bool) LedgerCall {
	h.t.Helper()
	for i, c := range h.queued {
		if match(c) {
			h.queued = append(h.queued[:i:i], h.queued[i+1:]...)
			return c
		}
	}
	h.t.Fatal("no queued ledger call matches")
	return LedgerCall{}
}

// landAndExpectCancel lets the fake ledger make the allocation of call c, feeds its answer
// and checks that the desk sends the cancel of what it made.
func (h *harness) landAndExpectCancel(c LedgerCall) {
	h.t.Helper()
	res := h.ledger.answer(c, h.now)
	if res.Failure != nil || res.AllocationCID == "" {
		h.t.Fatalf("the fake ledger did not make the allocation: %+v", res)
	}
	h.seq++
	h.collect(Apply(h.d, Envelope{Seq: h.seq, At: h.now, Input: res}))
	for _, q := range h.queued {
		if isCancel(q) && q.Command.CancelAllocation.AllocationCID == res.AllocationCID {
			return
		}
	}
	h.t.Fatalf("allocation %s made by %s after its accept was undone is never cancelled (queued %+v)",
		res.AllocationCID, c.CommandID, h.queued)
}

// TestReacceptKeepsUndoneAcceptsCallsApart: an accept undone while one of the house taker's
// allocation submits was still with the ledger leaves that call pending, so that what it
// makes is released. A second accept of the same quote used to number its submits from 1
// again, taking over the first accept's command ids: the first call's answer then went to
// the second trade or to nobody, and its allocation stayed on the ledger (make sim, seeds
// 56 and 96: "orphan: allocation … (leg taker-base …, owner house-taker)").
func TestReacceptKeepsUndoneAcceptsCallsApart(t *testing.T) {
	h := newHarness(t)
	_, _, _, q := liveWorld(h)
	h.auto = false

	first := h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID})
	base1 := h.takeQueued(legIs(legTakerBase)) // still with the ledger
	h.failWhere(LedgerRejected, legIs(legTakerQuote))
	if r := h.reply(first); r.Err == nil {
		t.Fatalf("first accept: got %d, want a refusal", r.Status)
	}

	second := h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID})
	base2 := h.takeQueued(legIs(legTakerBase))
	if base2.CommandID == base1.CommandID {
		t.Errorf("the second accept's submit reuses the first accept's command id %s, still in flight", base1.CommandID)
	}
	// The second accept's own submit is refused: it is undone in turn.
	h.seq++
	h.collect(Apply(h.d, Envelope{Seq: h.seq, At: h.now, Input: LedgerResult{CommandID: base2.CommandID,
		Failure: &LedgerFailure{Category: LedgerUnavailable, Message: "scripted"}}}))
	if r := h.reply(second); r.Err == nil {
		t.Fatalf("second accept: got %d, want a refusal", r.Status)
	}
	// The first accept's submit lands late: the desk must release it.
	h.landAndExpectCancel(base1)
	h.flush()
	if len(h.d.Pending) != 0 {
		t.Fatalf("calls left pending: %v", sortedKeys(h.d.Pending))
	}
}

// TestUndoneAcceptsUnknownSubmitIsAskedAgain: a taker submit whose accept was undone
// meanwhile and whose answer is 'unknown outcome' may still have made its allocation: the
// desk asks again under the same command id and releases what the answer names.
func TestUndoneAcceptsUnknownSubmitIsAskedAgain(t *testing.T) {
	h := newHarness(t)
	_, _, _, q := liveWorld(h)
	h.auto = false

	first := h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID})
	base1 := h.takeQueued(legIs(legTakerBase))
	h.failWhere(LedgerRejected, legIs(legTakerQuote))
	if r := h.reply(first); r.Err == nil {
		t.Fatalf("accept: got %d, want a refusal", r.Status)
	}
	h.seq++
	h.collect(Apply(h.d, Envelope{Seq: h.seq, At: h.now, Input: LedgerResult{CommandID: base1.CommandID,
		Failure: &LedgerFailure{Category: LedgerUnknownOutcome, Message: "scripted"}}}))
	h.advance(callRetryDelay)
	again := h.takeQueued(func(c LedgerCall) bool { return c.CommandID == base1.CommandID })
	h.landAndExpectCancel(again)
}
