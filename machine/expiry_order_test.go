package machine

import (
	"testing"
	"time"
)

// Issue #18: on an RFQ's expiry every maker hears rfq.expired before the quote.status
// expired of its quote on it, so that it never re-quotes an RFQ that is already closed.
func TestRFQExpiry_RfqExpiredBeforeQuoteStatus(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	// Both quotes live until the deadline itself, so that the deadline ends them.
	for _, mk := range []actor{w.m1, w.m2} {
		h.submitUntil(mk, w.rfq.RfqID, "60000", t0.Add(120*time.Second))
		h.ok(h.sign(mk.id, mk.key, h.pending(mk)), 200)
	}
	mark := len(h.events)
	h.advance(120 * time.Second)
	for _, mk := range []string{w.m1.id, w.m2.id, houseTaker.id} {
		expired, status := -1, -1
		for i, e := range h.evs(mk, mark) {
			switch e.Type {
			case EvRfqExpired:
				expired = i
			case EvQuoteStatus:
				if status < 0 {
					status = i
				}
			}
		}
		if expired < 0 || status < 0 || expired > status {
			t.Fatalf("%s: rfq.expired at %d, first quote.status at %d: rfq.expired must come first", mk, expired, status)
		}
	}
}
