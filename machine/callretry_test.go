package machine

import (
	"strings"
	"testing"
	"time"
)

// TestUnknownExecuteOfALeavingActionIsAskedAgain: an action whose execute had an unknown
// outcome, leaving the queue with its quote before the retry, is asked once more; the
// allocation that execute made is then released.
func TestUnknownExecuteOfALeavingActionIsAskedAgain(t *testing.T) {
	h := newHarness(t)
	tk, mk := h.maker("Taker"), h.maker("Maker")
	rfq := h.newRFQ(tk, Sell, "1", 3600, mk)
	q := h.submitUntil(mk, rfq.RfqID, "60000", t0.Add(60*time.Second))
	h.ledger.failNext(LedgerUnknownOutcome, func(c LedgerCall) bool { return c.Op == OpExecute })
	h.sign(mk.id, mk.key, q.Actions)
	var x *Action
	for _, a := range q.Actions {
		if y := h.d.Actions[a.ID]; y != nil && y.State == ActionExecuting {
			x = y
		}
	}
	if x == nil {
		t.Fatal("no action left executing after an unknown outcome")
	}
	prepared := x.PreparedID
	h.auto = false
	h.apply(DeleteQuote{Req: mk.req(), QuoteID: q.QuoteID})
	sent := h.drain()
	asked, cancelled := false, false
	for _, c := range sent {
		if c.Op == OpExecute && c.PreparedID == prepared {
			asked = true
		}
		if strings.HasPrefix(c.CommandID, "cancel:") {
			cancelled = true
		}
	}
	if !asked {
		t.Fatalf("the execute of action %s, outcome unknown, was not asked again as its quote ended: sent %+v", x.ID, sent)
	}
	if !cancelled {
		t.Fatalf("the allocation the execute made was not released: sent %+v", sent)
	}
	if len(h.d.Pending) != 0 {
		t.Fatalf("calls left pending: %v", sortedKeys(h.d.Pending))
	}
}

// TestFailedCancelIsRetried: a cancel the ledger could not run stays pending and is sent
// again after callRetryDelay, until it runs.
func TestFailedCancelIsRetried(t *testing.T) {
	h := newHarness(t)
	tk, mk := h.maker("Taker"), h.maker("Maker")
	rfq := h.newRFQ(tk, Sell, "1", 3600, mk)
	q := h.submitUntil(mk, rfq.RfqID, "60000", t0.Add(60*time.Second))
	h.ok(h.sign(mk.id, mk.key, q.Actions), 200)
	h.ledger.failNext(LedgerUnavailable, func(c LedgerCall) bool { return strings.HasPrefix(c.CommandID, "cancel:") })
	h.auto = false
	h.apply(DeleteQuote{Req: mk.req(), QuoteID: q.QuoteID})
	first := h.drain()
	if len(h.d.Pending) == 0 {
		t.Fatalf("a cancel refused as unavailable was given up: sent %+v", first)
	}
	h.advance(callRetryDelay)
	again := h.drain()
	retried := false
	for _, c := range again {
		if strings.HasPrefix(c.CommandID, "cancel:") {
			retried = true
		}
	}
	if !retried || len(h.d.Pending) != 0 {
		t.Fatalf("the cancel was not sent again until it ran: sent %+v, pending %v", again, sortedKeys(h.d.Pending))
	}
}
