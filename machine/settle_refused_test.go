package machine

import "testing"

// refusedSettle runs a trade up to its settle and refuses the settle; the calls that follow
// stay queued for the test to answer.
func refusedSettle(t *testing.T) (tradeWorld, string) {
	w := newTradeWorld(t)
	h := w.h
	tr := h.accept(w.taker, w.q.QuoteID)
	h.auto = false
	h.sign(w.taker.id, w.taker.key, tr.Actions)
	for range 2 {
		h.answerWhere(isExecute)
	}
	h.failWhere(LedgerRejected, isSettle)
	return w, tr.TradeID
}

// TestRefusedSettleFailsOnlyOnceReleased: a refused settle does not fail the trade at once —
// another submission of the same settle may still arrive — but once every allocation is
// released, when nothing can settle any more.
func TestRefusedSettleFailsOnlyOnceReleased(t *testing.T) {
	w, id := refusedSettle(t)
	h := w.h
	if got := h.d.Trades[id].State; got != TradeSettling {
		t.Fatalf("trade %s right after the refusal, want still settling", got)
	}
	if _, failed := h.lastOf(w.taker.id, EvTradeFailed); failed {
		t.Fatal("trade.failed sent before the allocations were released")
	}
	cancels := 0
	for _, c := range h.queued {
		if isCancel(c) {
			cancels++
		}
	}
	if cancels != 5 { // the maker's two, the taker's two and the fee's
		t.Fatalf("%d cancels issued, want every allocation of the trade released", cancels)
	}
	h.flush()
	if got := h.d.Trades[id].State; got != TradeFailed {
		t.Fatalf("trade %s after the releases, want failed", got)
	}
	ev, ok := h.lastOf(w.taker.id, EvTradeFailed)
	if !ok || ev.Payload.(TradeFailedPayload).Reason != reasonLedgerRefuse {
		t.Fatalf("trade.failed %+v", ev)
	}
}

// TestRefusedSettleThatSettledAnywayIsSettled: when an allocation cannot be released
// because a settle consumed it, the settle is sent again under its command id and the
// ledger's answer (its deduplicated settlement) settles the trade: the desk never reports
// failed a trade the ledger settled.
func TestRefusedSettleThatSettledAnywayIsSettled(t *testing.T) {
	w, id := refusedSettle(t)
	h := w.h
	h.failWhere(LedgerNotFound, isCancel) // consumed by a settle that got through
	h.flush()
	if got := h.d.Trades[id].State; got != TradeSettled {
		t.Fatalf("trade %s, want settled", got)
	}
	if _, failed := h.lastOf(w.taker.id, EvTradeFailed); failed {
		t.Fatal("trade.failed sent for a trade that settled")
	}
	if _, ok := h.lastOf(w.taker.id, EvTradeSettled); !ok {
		t.Fatal("no trade.settled")
	}
}
