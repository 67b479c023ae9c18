package machine

import "testing"

// TestExecuteUnknownOutcomeIsRetriedNotReplaced: an execute whose outcome the ledger could
// not tell keeps its action executing and is sent again, never replaced by a fresh
// allocation beside one that may have landed (the simulator found trades failing on
// "leg already has an allocation" that way).
func TestExecuteUnknownOutcomeIsRetriedNotReplaced(t *testing.T) {
	w := newTradeWorld(t)
	h := w.h
	tr := h.accept(w.taker, w.q.QuoteID)
	h.ledger.failNext(LedgerUnknownOutcome, func(c LedgerCall) bool { return c.Op == OpExecute })
	res := h.ok(h.sign(w.taker.id, w.taker.key, tr.Actions), 200).(ExecBatchDTO)
	if res.Results[0].Status != "in-flight" || res.Results[1].Status != "executed" {
		t.Fatalf("results %+v, want the unknown one in flight", res.Results)
	}
	x := h.d.Actions[tr.Actions[0].ID]
	if x == nil || x.State != ActionExecuting {
		t.Fatalf("the action with an unknown outcome must stay executing, got %+v", x)
	}
	// Its lifetime passing changes nothing while the outcome is unknown.
	h.auto = false
	h.advance(executeRetryDelay)
	var retried []LedgerCall
	for _, c := range h.queued {
		if c.Op == OpPrepare {
			t.Fatalf("a fresh allocation was prepared: %+v", c)
		}
		if c.Op == OpExecute {
			retried = append(retried, c)
		}
	}
	if len(retried) != 1 || retried[0].PreparedID != x.PreparedID {
		t.Fatalf("want the same execute sent again, got %+v", retried)
	}
	h.flush()
	if got := h.d.Trades[tr.TradeID].State; got != TradeSettled {
		t.Fatalf("trade %s, want settled", got)
	}
}
