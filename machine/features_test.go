package machine

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

func TestExecuteBatch_PerEntryOutcomes(t *testing.T) {
	h := newHarness(t)
	m, other := h.maker("M"), h.maker("Other")
	wd := func(a actor, sym string) SignActionDTO {
		return h.ok(h.apply(withdrawOf(a, sym)), 202).(ActionsDTO).Actions[0]
	}
	done, fresh, slow, unavailable, foreign := wd(m, "cc"), wd(m, "cbtc"), wd(m, "usdcx"), wd(other, "cc"), wd(other, "cbtc")
	h.ok(h.apply(signed(h, m, done)), 200)
	h.ledger.failNext(LedgerUnavailable, func(c LedgerCall) bool { return c.PreparedID == h.d.Actions[unavailable.ID].PreparedID })
	// The other party's actions are m's only to fail; give m a fourth and fifth of its own.
	_ = foreign
	sig := func(x SignActionDTO, a actor) SignedAction {
		return SignedAction{ActionID: x.ID, Signature: ed25519.Sign(h.keys[a.id], x.Hash)}
	}
	h.auto = false
	seq := h.apply(ExecuteActions{Req: m.req(), Batch: true, Entries: []SignedAction{
		sig(fresh, m),                              // executes
		sig(done, m),                               // blind resend: error, not retryable
		{ActionID: "act_nope", Signature: nil},     // unknown: error, not retryable
		sig(slow, m),                               // no answer within ExecuteWait: in-flight
		{ActionID: fresh.ID, Signature: nil},       // listed twice: error
		{ActionID: foreign.ID, Signature: nil},     // another party's: error (404)
		{ActionID: unavailable.ID, Signature: nil}, // another party's too
	}})
	if len(h.queued) != 2 {
		t.Fatalf("executes sent: %+v", h.queued)
	}
	h.answerWhere(func(c LedgerCall) bool { return c.PreparedID == h.d.Actions[fresh.ID].PreparedID })
	if _, answered := h.replies[seq]; answered {
		t.Fatal("answered before every outcome was known or ExecuteWait passed")
	}
	h.advance(5 * time.Second)
	res := h.ok(seq, 200).(ExecBatchDTO)
	f, tr := false, true
	_ = tr
	want := []ExecResultDTO{
		{ActionID: fresh.ID, Status: "executed"},
		{ActionID: done.ID, Status: "error", Retryable: &f},
		{ActionID: "act_nope", Status: "error", Retryable: &f},
		{ActionID: slow.ID, Status: "in-flight"},
		{ActionID: fresh.ID, Status: "error", Retryable: &f},
		{ActionID: foreign.ID, Status: "error", Retryable: &f},
		{ActionID: unavailable.ID, Status: "error", Retryable: &f},
	}
	for i := range want {
		got := res.Results[i]
		if got.ActionID != want[i].ActionID || got.Status != want[i].Status || (want[i].Retryable == nil) != (got.Retryable == nil) ||
			(got.Retryable != nil && *got.Retryable != *want[i].Retryable) || (got.Status == "error") != (got.Error != "") {
			t.Fatalf("entry %d: got %+v, want %+v", i, got, want[i])
		}
	}
	// The in-flight entry's outcome shows up later through the flow (and leaves the queue).
	h.flush()
	if _, still := h.d.Actions[slow.ID]; still {
		t.Fatal("executed in-flight action still pending")
	}
	// A transient failure is retryable and leaves the action pending.
	h.auto = true
	h.ledger.failNext(LedgerUnavailable, isExecute)
	res = h.ok(h.apply(ExecuteActions{Req: other.req(), Batch: true, Entries: []SignedAction{sig(unavailable, other)}}), 200).(ExecBatchDTO)
	if r := res.Results[0]; r.Status != "error" || r.Retryable == nil || !*r.Retryable {
		t.Fatalf("transient entry %+v", r)
	}
	if x := h.d.Actions[unavailable.ID]; x == nil || x.State != ActionPending {
		t.Fatal("a transiently failed action left the queue")
	}
	// Fifty entries are fine.
	entries := make([]SignedAction, MaxBatch)
	for i := range entries {
		entries[i] = SignedAction{ActionID: "act_nope" + string(rune('a'+i%26)) + string(rune('a'+i/26))}
	}
	if res := h.ok(h.apply(ExecuteActions{Req: m.req(), Batch: true, Entries: entries}), 200).(ExecBatchDTO); len(res.Results) != MaxBatch {
		t.Fatalf("%d results", len(res.Results))
	}
}

func TestExecute_BadSignature_ActionStaysPending(t *testing.T) {
	w := newQuoteWorld(t)
	h := w.h
	q := h.submit(w.m1, w.rfq.RfqID, "60000")
	_, wrong, _ := ed25519.GenerateKey(deterministicReader("wrong"))
	mark := len(h.events)
	h.refused(h.apply(ExecuteActions{Req: w.m1.req(), Entries: []SignedAction{{ActionID: q.Actions[0].ID, Signature: ed25519.Sign(wrong, q.Actions[0].Hash)}}}), 400, "")
	h.expectEvents(w.m1.id, mark, "")
	eq(t, "pending", h.pending(w.m1), q.Actions)
	// Signed properly, it executes.
	h.ok(h.signOne(w.m1, q.Actions[0]), 200)
}

func TestDeposit_ReacceptReturnsSameAction(t *testing.T) {
	h := newHarness(t)
	m := h.maker("M")
	first := h.ok(h.apply(AcceptIncoming{Req: m.req(), CID: "00beef"}), 202).(ActionsDTO)
	before := h.digest()
	again := h.ok(h.apply(AcceptIncoming{Req: m.req(), CID: "00beef"}), 202).(ActionsDTO)
	eq(t, "re-accept", again, first)
	if h.digest() != before || len(h.pending(m)) != 1 {
		t.Fatal("a re-accept made a duplicate")
	}
	h.ok(h.signOne(m, first.Actions[0]), 200)
	if len(h.d.Deposits) != 0 {
		t.Fatal("deposit not forgotten after it executed")
	}
}

func TestHouseParties_EmptyActions(t *testing.T) {
	h := newHarness(t)
	eq(t, "deposit", h.ok(h.apply(AcceptIncoming{Req: houseTaker.req(), CID: "00beef"}), 200), ActionsDTO{Actions: []SignActionDTO{}})
	eq(t, "withdraw", h.ok(h.apply(withdrawOf(houseTaker, "cc")), 200), ActionsDTO{Actions: []SignActionDTO{}})
	eq(t, "pending", h.pending(houseTaker), []SignActionDTO{})
	// A second withdrawal is fine: nothing awaits a signature.
	h.ok(h.apply(withdrawOf(houseTaker, "cc")), 200)
	w := newQuoteWorld(t)
	q := w.h.live(w.m1, w.rfq.RfqID, "60000")
	eq(t, "accept actions", w.h.accept(houseTaker, q.QuoteID).Actions, []SignActionDTO{})
}

func TestFaucet_SentSkippedCooldown(t *testing.T) {
	h := newHarness(t)
	m := h.maker("M")
	info := h.read(m.key, QFaucetInfo{}).Body.(FaucetInfoDTO)
	if !info.Enabled || info.RetryAfterSeconds != 0 || len(info.Drip) != 2 {
		t.Fatalf("info %+v", info)
	}
	// cbtc's reservoir is dry: skipped, usdcx sent, the cooldown starts.
	h.ledger.failNext(LedgerInsufficientFunds, func(c LedgerCall) bool { return c.Command.Transfer.Instrument == "reg:cbtc" })
	got := h.ok(h.apply(FaucetDraw{Req: m.req()}), 200).(FaucetAnswer)
	eq(t, "draw", got, FaucetAnswer{Sent: []FaucetSent{{Symbol: "usdcx", DisplaySymbol: "USDCx", Amount: money.MustParse("1000")}},
		Skipped: []FaucetSkipped{{Symbol: "cbtc", Reason: "reservoir-empty"}}, RetryAfterSeconds: 3600})
	// During the cooldown: 200, nothing sent, every token skipped with reason cooldown.
	h.advance(time.Minute)
	before := h.digest()
	got = h.ok(h.apply(FaucetDraw{Req: m.req()}), 200).(FaucetAnswer)
	eq(t, "cooldown", got, FaucetAnswer{Sent: []FaucetSent{}, Skipped: []FaucetSkipped{{Symbol: "cbtc", Reason: "cooldown"}, {Symbol: "usdcx", Reason: "cooldown"}}, RetryAfterSeconds: 3540})
	if h.digest() != before {
		t.Fatal("a cooldown answer changed the state")
	}
	if info := h.read(m.key, QFaucetInfo{}).Body.(FaucetInfoDTO); info.RetryAfterSeconds != 3540 {
		t.Fatalf("info %+v", info)
	}
	// Nothing went out: no cooldown.
	m2 := h.maker("M2")
	h.ledger.failNext(LedgerInsufficientFunds, anyCall)
	h.ledger.failNext(LedgerUnavailable, anyCall)
	got = h.ok(h.apply(FaucetDraw{Req: m2.req()}), 200).(FaucetAnswer)
	eq(t, "nothing sent", got, FaucetAnswer{Sent: []FaucetSent{}, Skipped: []FaucetSkipped{{Symbol: "cbtc", Reason: "reservoir-empty"}, {Symbol: "usdcx", Reason: "unavailable"}}})
	if len(h.ok(h.apply(FaucetDraw{Req: m2.req()}), 200).(FaucetAnswer).Sent) != 2 {
		t.Fatal("no second draw after a draw that sent nothing")
	}
	// Off the test network the faucet is not enabled.
	s := newHarnessWith(t, func() Config { c := testConfig(); c.Network = Mainnet; return c }())
	if info := s.read(houseTaker.key, QFaucetInfo{}).Body.(FaucetInfoDTO); info.Enabled || len(info.Drip) != 0 {
		t.Fatalf("mainnet info %+v", info)
	}
}

func TestKeyRotation_OldKeyStopsAndSocketsClose(t *testing.T) {
	h := newHarness(t)
	m := h.maker("M")
	second := h.connect(m.key)
	h.ok(h.apply(ChallengeRequest{PartyID: m.id, Challenge: "hello"}), 200)
	seq := h.apply(RotateKey{PartyID: m.id, Challenge: "hello", Signature: ed25519.Sign(h.keys[m.id], []byte("hello")), NewKeyHash: keyHash("new")})
	h.ok(seq, 200)
	eq(t, "closes", h.closes, []SocketClose{{Socket: second - 1, Code: 4401, Reason: "API key rotated"}, {Socket: second, Code: 4401, Reason: "API key rotated"}})
	if r := h.read(m.key, QMakerStatus{}); r.Status != 401 {
		t.Fatalf("old key on a read: %+v", r)
	}
	h.refused(h.apply(FaucetDraw{Req: m.req()}), 401, "")
	st := h.read("new", QMakerStatus{}).Body.(MakerStatusDTO)
	if st.PartyID != m.id || st.Invitable {
		t.Fatalf("status with the new key %+v", st)
	}
	// The challenge is one-shot; an old-key socket is refused at connect.
	h.refused(h.apply(RotateKey{PartyID: m.id, Challenge: "hello", Signature: ed25519.Sign(h.keys[m.id], []byte("hello")), NewKeyHash: keyHash("x")}), 410, "")
	h.closes = nil
	h.connect(m.key)
	if len(h.closes) != 1 || h.closes[0].Code != 4401 {
		t.Fatalf("old-key socket %+v", h.closes)
	}
}

func TestSocket_SnapshotContentAndOrder(t *testing.T) {
	h := newHarness(t)
	m, other := h.maker("M"), h.maker("Other")
	r1 := h.newRFQ(houseTaker, Sell, "1", 600, m)
	h.advance(time.Second)
	r2 := h.newRFQ(houseTaker, Buy, "1", 600, m, other)
	h.advance(time.Second)
	r3 := h.newRFQ(houseTaker, Buy, "1", 600, other) // not invited
	_ = r3
	r4 := h.newRFQ(houseTaker, Sell, "1", 600, m)
	h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: r4.RfqID}) // closed
	q1 := h.live(m, r1.RfqID, "60000")
	h.submit(m, r2.RfqID, "1") // recorded, unanchored: pending
	h.auto = false
	h.apply(quoteOf(m, r1.RfqID, "60001")) // a replacement still being prepared replaces q1
	h.answerWhere(isCancel)
	h.answerWhere(isCancel)
	mark := len(h.events)
	sock := h.connect(m.key)
	evs := h.evs(m.id, mark)
	var types []string
	for _, e := range evs {
		if e.Socket != sock {
			t.Fatalf("snapshot event not addressed to the new socket: %+v", e)
		}
		types = append(types, e.Type)
	}
	// r1: rfq.created only (its live quote was replaced by one not recorded yet);
	// r2: rfq.created, quote.created, quote.status.
	if got := joined(types); got != "rfq.created,rfq.created,quote.created,quote.status,snapshot.end" {
		t.Fatalf("snapshot %s", got)
	}
	eq(t, "first", evs[0].Payload, h.d.rfqDTO(h.d.RFQs[r1.RfqID]))
	eq(t, "second", evs[1].Payload, h.d.rfqDTO(h.d.RFQs[r2.RfqID]))
	if st := evs[3].Payload.(QuoteStatusPayload); st.Status != "pending" || st.RfqID != r2.RfqID {
		t.Fatalf("status %+v", st)
	}
	_ = q1
}

func TestOnline_InvitableAndDeskMakers(t *testing.T) {
	h := newHarness(t)
	a, _ := h.register("Zed")
	b := h.maker("Amy")
	za := h.d.Parties[a]
	st := func(key string) bool { return h.read(key, QMakerStatus{}).Body.(MakerStatusDTO).Invitable }
	if st("mk_Zed") || !st(b.key) {
		t.Fatal("invitable wrong before connect")
	}
	s1 := h.connect("mk_Zed")
	s2 := h.connect("mk_Zed")
	desk := h.read(houseTaker.key, QDesk{}).Body.(DeskDTO)
	eq(t, "desk", desk, DeskDTO{FeeBps: 25, FeeTiers: []FeeTierDTO{{MinNotionalUSD: money.Zero, FeeBps: 25}, {MinNotionalUSD: money.MustParse("100000"), FeeBps: 10}},
		Makers: []string{h.hint(b), za.Hint}, MakerStats: []MakerStatsDTO{}})
	// The caller is excluded.
	if got := h.read(b.key, QDesk{}).Body.(DeskDTO).Makers; len(got) != 1 || got[0] != za.Hint {
		t.Fatalf("makers seen by amy %v", got)
	}
	h.apply(SocketClosed{Socket: s1})
	if !st("mk_Zed") {
		t.Fatal("offline with a socket still open")
	}
	h.apply(SocketClosed{Socket: s2})
	if st("mk_Zed") {
		t.Fatal("online with no socket")
	}
	h.refused(h.apply(rfqOf(h, houseTaker, "1", za.Hint)), 400, "")
	// A restart closes every socket.
	h.connect("mk_Zed")
	h.apply(Boot{})
	if st("mk_Zed") || st(b.key) {
		t.Fatal("online after a restart")
	}
}

func TestSymbols_CaseInsensitiveAndDisplayAmbiguity(t *testing.T) {
	cfg := testConfig()
	cfg.Instruments = append(cfg.Instruments,
		Instrument{Symbol: "usdt", Display: "USD", USDPrice: money.FromInt(1), RegistryID: "reg:usdt"},
		Instrument{Symbol: "usdt.e", Display: "USD", USDPrice: money.FromInt(1), RegistryID: "reg:usdt.e"},
		Instrument{Symbol: "usd", Display: "USDX", USDPrice: money.FromInt(1), RegistryID: "reg:usd"})
	h := newHarnessWith(t, cfg)
	m := h.maker("M")
	for _, c := range []struct{ base, quote, wantQuote string }{
		{"CBTC", "USDCX", "usdcx"},   // catalog symbol, any case
		{"cBtC", "USDCx", "usdcx"},   // display form, unique
		{"cbtc", "USDT.E", "usdt.e"}, // catalog symbol whose display form is shared
		{"cbtc", "Usd", "usd"},       // a catalog symbol wins over a display form
		{"cbtc", "usdx", "usd"},      // unique display form
	} {
		in := rfqOf(h, houseTaker, "1", h.hint(m))
		in.Base, in.Quote = c.base, c.quote
		got := h.ok(h.apply(in), 200).(RfqDTO)
		if got.Base != "cbtc" || got.Quote != c.wantQuote {
			t.Fatalf("%s/%s: %s/%s", c.base, c.quote, got.Base, got.Quote)
		}
	}
	// The withdrawal symbol follows the same rule; the ambiguous display form names nothing.
	h.ok(h.apply(withdrawOf(m, "USDCx")), 202)
	h.ok(h.apply(withdrawOf(m, "USDT")), 202)
	h.refused(h.apply(Withdraw{Req: m.req(), Symbol: "Usd ", Amount: money.MustParse("1"), Receiver: "a::b"}), 404, "")
	if r := h.read(m.key, QReferencePrice{Base: "CBTC", Quote: "usdcx"}); r.Body.(ReferencePriceDTO).Price.String() != "100000" {
		t.Fatalf("reference price %+v", r)
	}
}

func TestQuote_ValidUntilRules(t *testing.T) {
	t.Run("validUntil equal to the deadline is allowed", func(t *testing.T) {
		w := newQuoteWorld(t)
		q := w.h.submitUntil(w.m1, w.rfq.RfqID, "1", t0.Add(120*time.Second))
		if q.ValidUntil != at(t0.Add(120*time.Second)) {
			t.Fatalf("validUntil %v", q.ValidUntil)
		}
	})
	t.Run("a zone offset is read as the instant it names", func(t *testing.T) {
		w := newQuoteWorld(t)
		q := w.h.submitUntil(w.m1, w.rfq.RfqID, "1", t0.Add(time.Minute).In(time.FixedZone("X", 3600)))
		if q.ValidUntil != at(t0.Add(time.Minute)) {
			t.Fatalf("validUntil %v", time.Time(q.ValidUntil))
		}
	})
	t.Run("default lifetime capped at the deadline", func(t *testing.T) {
		h := newHarness(t)
		m := h.maker("M")
		rfq := h.newRFQ(houseTaker, Sell, "1", 10, m)
		if q := h.submit(m, rfq.RfqID, "1"); q.ValidUntil != at(t0.Add(10*time.Second)) {
			t.Fatalf("validUntil %v", q.ValidUntil)
		}
		// And the configured lifetime otherwise.
		cfg := testConfig()
		cfg.QuoteLifetime = 45 * time.Second
		h = newHarnessWith(t, cfg)
		m = h.maker("M")
		rfq = h.newRFQ(houseTaker, Sell, "1", 100, m)
		if q := h.submit(m, rfq.RfqID, "1"); q.ValidUntil != at(t0.Add(45*time.Second)) {
			t.Fatalf("validUntil %v", q.ValidUntil)
		}
	})
}

// A submission whose prepares are still with the ledger when its RFQ closes, or when a newer
// quote replaces it, is answered (never left held) and leaves no quote behind.
func TestQuote_HeldSubmissionEndedByItsRFQ(t *testing.T) {
	cases := []struct {
		name   string
		end    func(w quoteWorld)
		status int
	}{
		{"taker cancels", func(w quoteWorld) { w.h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: w.rfq.RfqID}) }, 404},
		{"deadline", func(w quoteWorld) { w.h.advance(120 * time.Second) }, 409},
		{"replaced", func(w quoteWorld) { w.h.apply(quoteOf(w.m1, w.rfq.RfqID, "2")) }, 409},
		{"another maker filled", func(w quoteWorld) {
			q := w.h.d.Quotes[w.h.d.makerQuoteOn(w.h.d.RFQs[w.rfq.RfqID], w.m2.id).ID]
			w.h.flush()
			_ = q
		}, 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newQuoteWorld(t)
			h := w.h
			if c.name == "another maker filled" {
				q2 := h.live(w.m2, w.rfq.RfqID, "59000")
				h.auto = false
				seq := h.apply(quoteOf(w.m1, w.rfq.RfqID, "1"))
				h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: q2.QuoteID})
				// Answer everything except m1's prepares, so the fill happens first.
				for i := 0; i < len(h.queued); {
					if c := h.queued[i]; c.Op == OpPrepare && c.ActAs == w.m1.id {
						i++
						continue
					}
					call := h.queued[i]
					h.queued = append(h.queued[:i:i], h.queued[i+1:]...)
					h.answer(call)
					i = 0
				}
				if h.d.RFQs[w.rfq.RfqID].State != RFQFilled {
					t.Fatal("not filled")
				}
				h.refused(seq, c.status, "")
				h.flush()
				return
			}
			h.auto = false
			mark := len(h.events)
			seq := h.apply(quoteOf(w.m1, w.rfq.RfqID, "1"))
			c.end(w)
			h.refused(seq, c.status, "")
			for _, e := range h.evs(w.m1.id, mark) {
				if st, ok := e.Payload.(QuoteStatusPayload); ok && st.QuoteID != "" && h.d.Quotes[st.QuoteID] == nil {
					t.Fatalf("status of a quote never recorded: %+v", e)
				}
			}
			h.flush()
			if _, held := h.d.Held[seq]; held {
				t.Fatal("still held")
			}
		})
	}
}
