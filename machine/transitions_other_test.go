package machine

import (
	"crypto/ed25519"
	"testing"
	"time"
)

// One test per bullet of SPEC.md's RFQ and Sign action lists, and the Registration rule.

func TestRFQ_Create_OpenTrue(t *testing.T) {
	h := newHarness(t)
	m1, m2 := h.maker("Alpha"), h.maker("Beta")
	mark := len(h.events)
	rfq := h.newRFQ(houseTaker, Buy, "0.25", 60, m2, m1)
	eq(t, "rfq answer", rfq, RfqDTO{RfqID: rfq.RfqID, Taker: "house-taker", Direction: Buy, Qty: rfq.Qty, Base: "cbtc",
		Quote: "usdcx", Deadline: at(t0.Add(time.Minute)), InvitedMakers: []string{h.hint(m2), h.hint(m1)}, FeeBps: 25, Open: true})
	for _, m := range []actor{m1, m2} {
		h.expectEvents(m.id, mark, "rfq.created")
		eq(t, "rfq.created", h.evs(m.id, mark)[0].Payload, rfq)
	}
	h.expectEvents(houseTaker.id, mark, "")
}

func TestRFQ_TakerCancelOrFill_RfqClosed(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		w := newQuoteWorld(t)
		mark := len(w.h.events)
		w.h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: w.rfq.RfqID})
		for _, p := range []string{w.m1.id, w.m2.id, houseTaker.id} {
			e, ok := w.h.lastOf(p, EvRfqClosed)
			if !ok {
				t.Fatalf("%s got no rfq.closed: %v", p, w.h.eventsFor(p, mark))
			}
			eq(t, "payload", e.Payload, RfqIDPayload{RfqID: w.rfq.RfqID})
		}
		if r := w.h.d.RFQs[w.rfq.RfqID]; r.State != RFQCancelled {
			t.Fatalf("state %s", r.State)
		}
		hist := w.h.read(houseTaker.key, QRfqHistory{}).Body.([]RfqHistoryDTO)
		if len(hist) != 1 || hist[0].Kind != "cancelled" || hist[0].QuoteCount != 0 || hist[0].BestPrice != nil {
			t.Fatalf("history %+v", hist)
		}
	})
	t.Run("fill", func(t *testing.T) {
		w := newQuoteWorld(t)
		q := w.h.live(w.m1, w.rfq.RfqID, "60000")
		w.h.accept(houseTaker, q.QuoteID)
		for _, p := range []string{w.m1.id, w.m2.id, houseTaker.id} {
			if _, ok := w.h.lastOf(p, EvRfqClosed); !ok {
				t.Fatalf("%s got no rfq.closed", p)
			}
		}
		if r := w.h.d.RFQs[w.rfq.RfqID]; r.State != RFQFilled {
			t.Fatalf("state %s", r.State)
		}
		// A fill is not a history row: rows never overlap with GET /trades.
		eq(t, "history", w.h.read(houseTaker.key, QRfqHistory{}).Body, []RfqHistoryDTO{})
	})
}

func TestRFQ_DeadlineNoTrade_RfqExpired(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	h.live(w.m1, w.rfq.RfqID, "60000")
	h.live(w.m2, w.rfq.RfqID, "61000")
	mark := len(h.events)
	h.advance(120*time.Second - time.Millisecond)
	if !h.d.RFQs[w.rfq.RfqID].open() {
		t.Fatal("expired early")
	}
	h.advance(time.Millisecond)
	h.expectEvents(houseTaker.id, mark, "quote.status,quote.status,rfq.expired,history.recorded")
	hist := h.read(houseTaker.key, QRfqHistory{}).Body.([]RfqHistoryDTO)
	// As the taker sells, the best price is the highest.
	if len(hist) != 1 || hist[0].Kind != "expired" || hist[0].QuoteCount != 2 || hist[0].BestPrice.String() != "61000" {
		t.Fatalf("history %+v", hist)
	}
}

func TestRFQ_AfterFailedSettlement_StaysOpenUntilDeadline(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q1 := h.live(w.m1, w.rfq.RfqID, "60000")
	q2 := h.live(w.m2, w.rfq.RfqID, "59000")
	h.ledger.failNext(LedgerNotFound, isSettle)
	h.accept(houseTaker, q1.QuoteID)
	if !h.d.RFQs[w.rfq.RfqID].open() {
		t.Fatal("closed by a failed settlement")
	}
	// Another accept settles.
	h.accept(houseTaker, q2.QuoteID)
	if r := h.d.RFQs[w.rfq.RfqID]; r.State != RFQFilled {
		t.Fatalf("state %s", r.State)
	}
}

func TestRFQ_ClosedReadableTenMinutes(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q := h.live(w.m1, w.rfq.RfqID, "60000")
	h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: w.rfq.RfqID})
	check := func(want int) {
		t.Helper()
		mine := h.read(houseTaker.key, QRfqMine{}).Body.([]RfqDTO)
		in := h.read(w.m1.key, QRfqIncoming{}).Body.([]IncomingRfqDTO)
		if len(mine) != want || len(in) != want {
			t.Fatalf("mine %d incoming %d, want %d", len(mine), len(in), want)
		}
		if want == 1 {
			if mine[0].Open || in[0].Open || len(*mine[0].Quotes) != 1 || (*mine[0].Quotes)[0].Status != "cancelled" {
				t.Fatalf("closed RFQ view %+v", mine[0])
			}
			// myQuote keeps its final status after the close.
			if in[0].MyQuote == nil || in[0].MyQuote.QuoteID != q.QuoteID || in[0].MyQuote.Status != "cancelled" {
				t.Fatalf("myQuote %+v", in[0].MyQuote)
			}
		}
	}
	check(1)
	h.advance(10*time.Minute - time.Millisecond)
	check(1)
	h.advance(time.Millisecond)
	check(0)
}

func TestRFQ_ExpiresAfterTTLUnlessTradeSettlesFirst(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q := h.submitUntil(w.m1, w.rfq.RfqID, "60000", t0.Add(120*time.Second))
	h.ok(h.sign(w.m1.id, w.m1.key, q.Actions), 200)
	// Accepted just before the deadline, settled just after it: filled, not expired.
	h.advance(119 * time.Second)
	h.auto = false
	seq := h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID})
	h.answerWhere(legIs(legTakerBase))
	h.answerWhere(legIs(legTakerQuote))
	h.ok(seq, 202)
	h.advance(2 * time.Second)
	if r := h.d.RFQs[w.rfq.RfqID]; !r.open() {
		t.Fatalf("expired with a settlement in flight: %s", r.State)
	}
	h.flush()
	if r := h.d.RFQs[w.rfq.RfqID]; r.State != RFQFilled {
		t.Fatalf("state %s", r.State)
	}
	if _, ok := h.lastOf(houseTaker.id, EvRfqExpired); ok {
		t.Fatal("rfq.expired after a fill")
	}
}

// ---- Sign action ----

func TestSignAction_CreatedByCallOrQueuedForTrade(t *testing.T) {
	w := newTradeWorld(t)
	h := w.h
	// Created by a call: the answer's actions equal GET /tx/pending and the sign.requested.
	tr := h.accept(w.taker, w.q.QuoteID)
	eq(t, "pending", h.pending(w.taker), tr.Actions)
	// Queued by the desk: an allocation that could not be prepared at once follows as
	// sign.requested (a contended execute leaves the queue and a fresh one is prepared).
	h.ledger.failNext(LedgerContention, isExecute)
	mark := len(h.events)
	h.refused(h.signOne(w.taker, tr.Actions[0]), 409, "")
	h.expectEvents(w.taker.id, mark, "sign.completed,sign.requested")
	fresh := h.evs(w.taker.id, mark)[1].Payload.(SignActionDTO)
	if fresh.TradeID != tr.TradeID || fresh.ID == tr.Actions[0].ID {
		t.Fatalf("queued action %+v", fresh)
	}
	eq(t, "pending", h.pending(w.taker), []SignActionDTO{tr.Actions[1], fresh})
	st := h.read(w.taker.key, QMakerStatus{}).Body.(MakerStatusDTO)
	if st.PendingActions != 2 {
		t.Fatalf("status %+v", st)
	}
}

func TestSignAction_LeavesQueue_SignCompleted(t *testing.T) {
	t.Run("executes", func(t *testing.T) {
		w := newQuoteWorld(t)
		q := w.h.submit(w.m1, w.rfq.RfqID, "60000")
		mark := len(w.h.events)
		w.h.ok(w.h.signOne(w.m1, q.Actions[0]), 200)
		w.h.expectEvents(w.m1.id, mark, "sign.completed")
		eq(t, "payload", w.h.evs(w.m1.id, mark)[0].Payload, ActionIDPayload{ActionID: q.Actions[0].ID})
	})
	t.Run("expires after 10 minutes", func(t *testing.T) {
		h := newHarness(t)
		m := h.maker("M")
		x := h.ok(h.apply(AcceptIncoming{Req: m.req(), CID: "00dead"}), 202).(ActionsDTO).Actions[0]
		if x.ExpiresAt != at(t0.Add(10*time.Minute)) || x.Purpose != PurposeTransferAccept {
			t.Fatalf("action %+v", x)
		}
		mark := len(h.events)
		h.advance(10*time.Minute - time.Millisecond)
		h.expectEvents(m.id, mark, "")
		h.advance(time.Millisecond)
		h.expectEvents(m.id, mark, "sign.completed")
		h.refused(h.signOne(m, x), 410, "")
	})
	t.Run("flow dies: quote validUntil", func(t *testing.T) {
		w := newQuoteWorld(t)
		q := w.h.submitUntil(w.m1, w.rfq.RfqID, "60000", t0.Add(5*time.Second))
		if q.Actions[0].ExpiresAt != at(t0.Add(5*time.Second)) {
			t.Fatalf("quote action outlives its quote: %+v", q.Actions[0])
		}
		mark := len(w.h.events)
		w.h.advance(5 * time.Second)
		w.h.expectEvents(w.m1.id, mark, "sign.completed,sign.completed,quote.status")
	})
	t.Run("cancelled with its trade", func(t *testing.T) {
		w := newTradeWorld(t)
		tr := w.h.accept(w.taker, w.q.QuoteID)
		w.h.ledger.failNext(LedgerNotFound, isSettle)
		w.h.ledger.failNext(LedgerInsufficientFunds, isExecute)
		mark := len(w.h.events)
		w.h.refused(w.h.signOne(w.taker, tr.Actions[0]), 409, CodeInsufficientFunds)
		// The failed action and its sibling both leave the queue.
		w.h.expectEvents(w.taker.id, mark, "sign.completed,sign.completed,trade.failed,quote.status,history.recorded")
	})
}

// ---- Registration ----

func TestRegistration_CompleteWithinTenMinutes_OK(t *testing.T) {
	h := newHarness(t)
	pub, priv, _ := ed25519.GenerateKey(deterministicReader("r"))
	start := h.ok(h.apply(RegisterStart{DisplayName: "Réka Bot", PublicKey: pub}), 200).(RegisterStartDTO)
	h.advance(10*time.Minute - time.Millisecond)
	done := h.ok(h.apply(RegisterComplete{RegistrationID: start.RegistrationID,
		Signatures: [][]byte{ed25519.Sign(priv, start.Topology[0].Hash)}, NewKeyHash: keyHash("k")}), 200).(RegisterCompleteDTO)
	if done.PartyID != start.PartyID || len(done.Hint) != len("r-ka-bot-")+6 || done.Hint[:9] != "r-ka-bot-" || done.Actions == nil {
		t.Fatalf("complete %+v", done)
	}
	st := h.read("k", QMakerStatus{}).Body.(MakerStatusDTO)
	eq(t, "status", st, MakerStatusDTO{PartyID: start.PartyID, Hint: done.Hint, ServiceActivated: true})
	// A second complete is refused.
	h.refused(h.apply(RegisterComplete{RegistrationID: start.RegistrationID,
		Signatures: [][]byte{ed25519.Sign(priv, start.Topology[0].Hash)}, NewKeyHash: keyHash("k2")}), 409, "")
}

func TestRegistration_PendingExpiresAfterTenMinutes_Complete410(t *testing.T) {
	h := newHarness(t)
	pub, priv, _ := ed25519.GenerateKey(deterministicReader("r"))
	start := h.ok(h.apply(RegisterStart{DisplayName: "R", PublicKey: pub}), 200).(RegisterStartDTO)
	h.advance(10 * time.Minute)
	before := h.digest()
	h.refused(h.apply(RegisterComplete{RegistrationID: start.RegistrationID,
		Signatures: [][]byte{ed25519.Sign(priv, start.Topology[0].Hash)}, NewKeyHash: keyHash("k")}), 410, "")
	if h.digest() != before {
		t.Fatal("a refused complete changed the state")
	}
	if r := h.read("k", QMakerStatus{}); r.Status != 401 {
		t.Fatalf("expired registration yields a key: %+v", r)
	}
}
