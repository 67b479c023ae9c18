package machine

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// sameMode says what a refusal may change.
type sameMode int

const (
	// sameAll: nothing at all changes (the whole digest).
	sameAll sameMode = iota
	// sameSemantic: a refusal decided by the ledger may draw ids and leave inert deadlines.
	sameSemantic
	// sameNot: the refusal legitimately changes state (said in the row's name).
	sameNot
)

// errCase is one row of the error matrix: a world, the input, the answer, what may change.
type errCase struct {
	name   string
	cfg    func(*Config)
	setup  func(h *harness) Input
	after  func(h *harness) // runs after the input (to let time pass, say)
	status int
	code   string
	same   sameMode
}

// Worlds of the error matrix.

// liveWorld: the house taker's SELL RFQ (1 cbtc, 120 s) with m1's live quote and m2 invited.
func liveWorld(h *harness) (m1, m2 actor, rfq RfqDTO, q QuoteWithActionsDTO) {
	m1, m2 = h.maker("Alpha"), h.maker("Beta")
	rfq = h.newRFQ(houseTaker, Sell, "1", 120, m1, m2)
	q = h.live(m1, rfq.RfqID, "60000")
	return
}

// settlingWorld: liveWorld with m1's quote accepted and its settle held at the ledger.
func settlingWorld(h *harness) (m1, m2 actor, rfq RfqDTO, q QuoteWithActionsDTO) {
	m1, m2, rfq, q = liveWorld(h)
	h.auto = false
	h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID})
	for len(h.queued) > 0 && !isSettle(h.queued[0]) {
		h.answer(h.queued[0])
		h.queued = h.queued[1:]
	}
	return // manual mode: the settle stays queued
}

// withdrawWorld: maker M with a withdrawal of 1 cc whose action x waits for its signature.
func withdrawWorld(h *harness) (m actor, x SignActionDTO) {
	m = h.maker("M")
	x = h.ok(h.apply(withdrawOf(m, "cc")), 202).(ActionsDTO).Actions[0]
	return
}

// executingWorld: withdrawWorld with x signed and its execute held at the ledger.
func executingWorld(h *harness) (m actor, x SignActionDTO) {
	m, x = withdrawWorld(h)
	h.auto = false
	h.apply(signed(h, m, x))
	return // manual mode: the execute stays queued
}

func rfqOf(h *harness, taker actor, qty string, makers ...string) CreateRFQ {
	return CreateRFQ{Req: taker.req(), Direction: Sell, Qty: money.MustParse(qty), Base: "cbtc", Quote: "usdcx", InvitedMakers: makers, TTLSeconds: 60}
}

func quoteOf(m actor, rfq, price string) SubmitQuote {
	return SubmitQuote{Req: m.req(), RFQID: rfq, Price: money.MustParse(price)}
}

func signed(h *harness, a actor, x SignActionDTO) ExecuteActions {
	return ExecuteActions{Req: a.req(), Entries: []SignedAction{{ActionID: x.ID, Signature: ed25519.Sign(h.keys[a.id], x.Hash)}}}
}

func withdrawOf(a actor, sym string) Withdraw {
	return Withdraw{Req: a.req(), Symbol: sym, Amount: money.MustParse("1"), Receiver: "someone::1220ff"}
}

func ptime(t time.Time) *time.Time { return &t }

func sandbox(c *Config) { c.Network = Sandbox }

func errorMatrix() []errCase {
	return []errCase{
		// ---- 400 ----
		{name: "400 rfq unknown instrument", status: 400, setup: func(h *harness) Input {
			m := h.maker("M")
			c := rfqOf(h, houseTaker, "1", h.hint(m))
			c.Quote = "doge"
			return c
		}},
		{name: "400 rfq unreachable maker", status: 400, setup: func(h *harness) Input {
			id, _ := h.register("Offline")
			return rfqOf(h, houseTaker, "1", h.d.Parties[id].Hint)
		}},
		{name: "400 rfq unknown maker", status: 400, setup: func(h *harness) Input {
			return rfqOf(h, houseTaker, "1", "nobody-abcdef")
		}},
		{name: "400 rfq inviting oneself", status: 400, setup: func(h *harness) Input {
			tk, m := h.maker("Taker"), h.maker("M")
			return rfqOf(h, tk, "1", h.hint(m), h.hint(tk))
		}},
		{name: "400 rfq ttl under min", status: 400, setup: func(h *harness) Input {
			c := rfqOf(h, houseTaker, "1", h.hint(h.maker("M")))
			c.TTLSeconds = 4
			return c
		}},
		{name: "400 rfq ttl over max", status: 400, setup: func(h *harness) Input {
			c := rfqOf(h, houseTaker, "1", h.hint(h.maker("M")))
			c.TTLSeconds = 3601
			return c
		}},
		{name: "400 rfq qty zero", status: 400, setup: func(h *harness) Input {
			return rfqOf(h, houseTaker, "0", h.hint(h.maker("M")))
		}},
		{name: "400 rfq bad direction", status: 400, setup: func(h *harness) Input {
			c := rfqOf(h, houseTaker, "1", h.hint(h.maker("M")))
			c.Direction = "HOLD"
			return c
		}},
		{name: "400 rfq ambiguous display form", status: 400, cfg: func(c *Config) {
			c.Instruments = append(c.Instruments, Instrument{Symbol: "usdcx.e", Display: "USDCx", USDPrice: money.FromInt(1), RegistryID: "reg:usdcx.e"},
				Instrument{Symbol: "usdt", Display: "USD", USDPrice: money.FromInt(1), RegistryID: "reg:usdt"},
				Instrument{Symbol: "usdt.e", Display: "USD", USDPrice: money.FromInt(1), RegistryID: "reg:usdt.e"})
		}, setup: func(h *harness) Input {
			c := rfqOf(h, houseTaker, "1", h.hint(h.maker("M")))
			c.Quote = "usd"
			return c
		}},
		{name: "400 BELOW_MIN_NOTIONAL", status: 400, code: CodeBelowMinNotional, setup: func(h *harness) Input {
			return rfqOf(h, houseTaker, "0.00009", h.hint(h.maker("M"))) // 9 USD
		}},
		{name: "400 BELOW_MIN_NOTIONAL a hair under, not rounded up", status: 400, code: CodeBelowMinNotional, setup: func(h *harness) Input {
			c := rfqOf(h, houseTaker, "49.9999999999", h.hint(h.maker("M"))) // 9.99999999998 USD of CC
			c.Base = "cc"
			return c
		}},
		{name: "400 register start bad display name", status: 400, setup: func(h *harness) Input {
			pub, _, _ := ed25519.GenerateKey(deterministicReader("x"))
			return RegisterStart{DisplayName: "bad/name", PublicKey: pub}
		}},
		{name: "400 register start short key", status: 400, setup: func(h *harness) Input {
			return RegisterStart{DisplayName: "ok", PublicKey: []byte{1, 2, 3}}
		}},
		{name: "400 execute batch over 50", status: 400, setup: func(h *harness) Input {
			m := h.maker("M")
			return ExecuteActions{Req: m.req(), Entries: make([]SignedAction, 51), Batch: true}
		}},
		{name: "400 execute empty batch", status: 400, setup: func(h *harness) Input {
			return ExecuteActions{Req: h.maker("M").req(), Batch: true}
		}},
		{name: "400 execute signature not 64 bytes", status: 400, setup: func(h *harness) Input {
			m1, _, _, _ := liveWorld(h)
			x := h.ok(h.apply(AcceptIncoming{Req: m1.req(), CID: "00cafe"}), 202).(ActionsDTO).Actions[0]
			return ExecuteActions{Req: m1.req(), Entries: []SignedAction{{ActionID: x.ID, Signature: []byte{1}}}}
		}},
		{name: "400 withdraw amount zero", status: 400, setup: func(h *harness) Input {
			c := withdrawOf(h.maker("M"), "cc")
			c.Amount = money.Zero
			return c
		}},
		{name: "400 withdraw receiver not a full party id", status: 400, setup: func(h *harness) Input {
			c := withdrawOf(h.maker("M"), "cc")
			c.Receiver = "somehint"
			return c
		}},
		// ---- 401 ----
		{name: "401 unknown key", status: 401, setup: func(h *harness) Input {
			return rfqOf(h, actor{key: "nope"}, "1", h.hint(h.maker("M")))
		}},
		{name: "401 missing key", status: 401, setup: func(h *harness) Input {
			return FaucetDraw{}
		}},
		{name: "401 register complete bad signature", status: 401, same: sameSemantic, setup: func(h *harness) Input {
			pub, _, _ := ed25519.GenerateKey(deterministicReader("x"))
			start := h.ok(h.apply(RegisterStart{DisplayName: "X", PublicKey: pub}), 200).(RegisterStartDTO)
			return RegisterComplete{RegistrationID: start.RegistrationID, Signatures: [][]byte{make([]byte, 64)}, NewKeyHash: keyHash("k")}
		}},
		{name: "401 rotate bad signature (consumes the challenge)", status: 401, same: sameNot, setup: func(h *harness) Input {
			m := h.maker("M")
			h.ok(h.apply(ChallengeRequest{PartyID: m.id, Challenge: "ch-1"}), 200)
			return RotateKey{PartyID: m.id, Challenge: "ch-1", Signature: make([]byte, 64), NewKeyHash: keyHash("new")}
		}, after: func(h *harness) {
			if len(h.d.Challenges) != 0 {
				h.t.Fatal("challenge not consumed")
			}
		}},
		// ---- 403 ----
		{name: "403 quote not invited", status: 403, setup: func(h *harness) Input {
			_, _, rfq, _ := liveWorld(h)
			return quoteOf(h.maker("Gamma"), rfq.RfqID, "1")
		}},
		{name: "403 delete another maker's quote", status: 403, setup: func(h *harness) Input {
			_, m2, _, q := liveWorld(h)
			return DeleteQuote{Req: m2.req(), QuoteID: q.QuoteID}
		}},
		{name: "403 cancel another taker's RFQ", status: 403, setup: func(h *harness) Input {
			m1, _, rfq, _ := liveWorld(h)
			return CancelRFQ{Req: m1.req(), RFQID: rfq.RfqID}
		}},
		{name: "403 accept a quote on another taker's RFQ", status: 403, setup: func(h *harness) Input {
			_, m2, _, q := liveWorld(h)
			return AcceptQuote{Req: m2.req(), QuoteID: q.QuoteID}
		}},
		// ---- 404 ----
		{name: "404 quote on unknown RFQ", status: 404, setup: func(h *harness) Input {
			return quoteOf(h.maker("M"), "rfq_nope", "1")
		}},
		{name: "404 quote on closed RFQ", status: 404, setup: func(h *harness) Input {
			m1, _, rfq, _ := liveWorld(h)
			h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: rfq.RfqID})
			return quoteOf(m1, rfq.RfqID, "1")
		}},
		{name: "404 delete unknown quote", status: 404, setup: func(h *harness) Input {
			return DeleteQuote{Req: h.maker("M").req(), QuoteID: "q_nope"}
		}},
		{name: "404 delete a revoked quote", status: 404, setup: func(h *harness) Input {
			m1, _, _, q := liveWorld(h)
			h.apply(DeleteQuote{Req: m1.req(), QuoteID: q.QuoteID})
			return DeleteQuote{Req: m1.req(), QuoteID: q.QuoteID}
		}},
		{name: "404 cancel unknown RFQ", status: 404, setup: func(h *harness) Input {
			return CancelRFQ{Req: houseTaker.req(), RFQID: "rfq_nope"}
		}},
		{name: "404 cancel closed RFQ", status: 404, setup: func(h *harness) Input {
			_, _, rfq, _ := liveWorld(h)
			h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: rfq.RfqID})
			return CancelRFQ{Req: houseTaker.req(), RFQID: rfq.RfqID}
		}},
		{name: "404 accept unknown quote", status: 404, setup: func(h *harness) Input {
			return AcceptQuote{Req: houseTaker.req(), QuoteID: "q_nope"}
		}},
		{name: "404 accept an unanchored quote", status: 404, setup: func(h *harness) Input {
			_, m2, rfq, _ := liveWorld(h)
			q := h.submit(m2, rfq.RfqID, "1")
			return AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID}
		}},
		{name: "404 execute unknown action", status: 404, setup: func(h *harness) Input {
			m := h.maker("M")
			return ExecuteActions{Req: m.req(), Entries: []SignedAction{{ActionID: "act_nope", Signature: make([]byte, 64)}}}
		}},
		{name: "404 execute another party's action", status: 404, setup: func(h *harness) Input {
			_, m2, rfq, _ := liveWorld(h)
			q := h.submit(m2, rfq.RfqID, "1")
			other := h.maker("Gamma")
			return ExecuteActions{Req: other.req(), Entries: []SignedAction{{ActionID: q.Actions[0].ID, Signature: make([]byte, 64)}}}
		}},
		{name: "404 incoming accept unknown transfer", status: 404, same: sameSemantic, setup: func(h *harness) Input {
			m := h.maker("M")
			h.ledger.failNext(LedgerNotFound, anyCall)
			return AcceptIncoming{Req: m.req(), CID: "00nope"}
		}},
		{name: "404 incoming accept of another party's pending deposit", status: 404, setup: func(h *harness) Input {
			m, other := h.maker("M"), h.maker("Other")
			h.ok(h.apply(AcceptIncoming{Req: m.req(), CID: "00beef"}), 202)
			return AcceptIncoming{Req: other.req(), CID: "00beef"}
		}},
		{name: "404 withdraw unknown instrument", status: 404, setup: func(h *harness) Input {
			return withdrawOf(h.maker("M"), "doge")
		}},
		{name: "404 challenge unknown party", status: 404, setup: func(h *harness) Input {
			return ChallengeRequest{PartyID: "x::1220", Challenge: "c"}
		}},
		{name: "404 register complete unknown registration", status: 404, setup: func(h *harness) Input {
			return RegisterComplete{RegistrationID: "reg_nope", Signatures: [][]byte{{1}}, NewKeyHash: keyHash("k")}
		}},
		// ---- 409 RETRY_LATER ----
		{name: "409 RETRY_LATER withdraw while a trade settles in it", status: 409, code: CodeRetryLater, setup: func(h *harness) Input {
			m1, _, _, _ := settlingWorld(h)
			return withdrawOf(m1, "CBTC")
		}},
		{name: "409 RETRY_LATER withdraw while one executes", status: 409, code: CodeRetryLater, setup: func(h *harness) Input {
			m, _ := executingWorld(h)
			return withdrawOf(m, "cc")
		}},
		{name: "409 RETRY_LATER execute an executing action", status: 409, code: CodeRetryLater, setup: func(h *harness) Input {
			m, x := executingWorld(h)
			return signed(h, m, x)
		}},
		{name: "409 RETRY_LATER register complete while onboarding", status: 409, code: CodeRetryLater, setup: func(h *harness) Input {
			pub, _, _ := ed25519.GenerateKey(deterministicReader("x"))
			h.auto = false
			h.apply(RegisterStart{DisplayName: "X", PublicKey: pub})
			var id string
			for k := range h.d.Registrations {
				id = k
			}
			return RegisterComplete{RegistrationID: id, Signatures: [][]byte{{1}}, NewKeyHash: keyHash("k")}
		}},
		{name: "409 RETRY_LATER deposit accept in progress", status: 409, code: CodeRetryLater, setup: func(h *harness) Input {
			m := h.maker("M")
			h.auto = false
			h.apply(AcceptIncoming{Req: m.req(), CID: "00beef"})
			return AcceptIncoming{Req: m.req(), CID: "00beef"}
		}},
		// ---- 409 INSUFFICIENT_FUNDS ----
		{name: "409 INSUFFICIENT_FUNDS quote", status: 409, code: CodeInsufficientFunds, same: sameSemantic, setup: func(h *harness) Input {
			_, m2, rfq, _ := liveWorld(h)
			h.ledger.failNext(LedgerInsufficientFunds, legIs(legMakerQuote))
			return quoteOf(m2, rfq.RfqID, "59000")
		}},
		{name: "409 INSUFFICIENT_FUNDS accept", status: 409, code: CodeInsufficientFunds, same: sameSemantic, setup: func(h *harness) Input {
			_, _, _, q := liveWorld(h)
			h.ledger.failNext(LedgerInsufficientFunds, legIs(legTakerBase))
			return AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID}
		}},
		{name: "409 INSUFFICIENT_FUNDS withdraw", status: 409, code: CodeInsufficientFunds, same: sameSemantic, setup: func(h *harness) Input {
			m := h.maker("M")
			h.ledger.failNext(LedgerInsufficientFunds, anyCall)
			return withdrawOf(m, "cc")
		}},
		// ---- 409 DUST_TRADE ----
		{name: "409 DUST_TRADE qty x price rounds to zero", status: 409, code: CodeDustTrade, setup: func(h *harness) Input {
			m := h.maker("M")
			rfq := h.ok(h.apply(rfqOf(h, houseTaker, "0.5", h.hint(m))), 200).(RfqDTO)
			return quoteOf(m, rfq.RfqID, "0.0000000001")
		}},
		{name: "409 DUST_TRADE fee rounds to zero", status: 409, code: CodeDustTrade, setup: func(h *harness) Input {
			m := h.maker("M")
			rfq := h.ok(h.apply(rfqOf(h, houseTaker, "1", h.hint(m))), 200).(RfqDTO)
			return quoteOf(m, rfq.RfqID, "0.00000001")
		}},
		{name: "409 DUST_TRADE price zero", status: 409, code: CodeDustTrade, setup: func(h *harness) Input {
			m := h.maker("M")
			rfq := h.ok(h.apply(rfqOf(h, houseTaker, "1", h.hint(m))), 200).(RfqDTO)
			return quoteOf(m, rfq.RfqID, "0")
		}},
		// ---- 409 ----
		{name: "409 quote after the deadline", status: 409, setup: func(h *harness) Input {
			_, m2, rfq, _ := liveWorld(h)
			h.setNow(t0.Add(120 * time.Second))
			return quoteOf(m2, rfq.RfqID, "1")
		}},
		{name: "409 quote validUntil in the past", status: 409, setup: func(h *harness) Input {
			_, m2, rfq, _ := liveWorld(h)
			c := quoteOf(m2, rfq.RfqID, "1")
			c.ValidUntil = ptime(t0)
			return c
		}},
		{name: "409 quote validUntil after the deadline", status: 409, setup: func(h *harness) Input {
			_, m2, rfq, _ := liveWorld(h)
			c := quoteOf(m2, rfq.RfqID, "1")
			c.ValidUntil = ptime(t0.Add(120*time.Second + time.Millisecond))
			return c
		}},
		{name: "409 quote while a settlement is in flight", status: 409, setup: func(h *harness) Input {
			_, m2, rfq, _ := settlingWorld(h)
			return quoteOf(m2, rfq.RfqID, "1")
		}},
		{name: "409 quote while the maker's previous quote settles", status: 409, setup: func(h *harness) Input {
			m1, _, rfq, _ := settlingWorld(h)
			return quoteOf(m1, rfq.RfqID, "1")
		}},
		{name: "409 delete a settling quote", status: 409, setup: func(h *harness) Input {
			m1, _, _, q := settlingWorld(h)
			return DeleteQuote{Req: m1.req(), QuoteID: q.QuoteID}
		}},
		{name: "409 accept the settling quote again", status: 409, setup: func(h *harness) Input {
			_, _, _, q := settlingWorld(h)
			return AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID}
		}},
		{name: "409 accept another quote while a settlement is in flight", status: 409, setup: func(h *harness) Input {
			m1, m2, rfq, _ := liveWorld(h)
			_ = m1
			q2 := h.live(m2, rfq.RfqID, "59000")
			h.auto = false
			h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: h.d.makerQuoteOn(h.d.RFQs[rfq.RfqID], m1.id).ID})
			return AcceptQuote{Req: houseTaker.req(), QuoteID: q2.QuoteID}
		}},
		{name: "409 cancel RFQ while settling", status: 409, setup: func(h *harness) Input {
			_, _, rfq, _ := settlingWorld(h)
			return CancelRFQ{Req: houseTaker.req(), RFQID: rfq.RfqID}
		}},
		{name: "409 accept an expired quote", status: 409, setup: func(h *harness) Input {
			_, _, _, q := liveWorld(h)
			h.advance(30 * time.Second)
			return AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID}
		}},
		{name: "409 accept after the deadline", status: 409, setup: func(h *harness) Input {
			m1, _, rfq, _ := liveWorld(h)
			q := h.submitUntil(m1, rfq.RfqID, "60000", t0.Add(120*time.Second))
			h.ok(h.sign(m1.id, m1.key, q.Actions), 200)
			h.setNow(t0.Add(120 * time.Second))
			return AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID}
		}},
		{name: "409 second withdrawal while one awaits signature", status: 409, setup: func(h *harness) Input {
			m := h.maker("M")
			h.ok(h.apply(withdrawOf(m, "cc")), 202)
			return withdrawOf(m, "CC")
		}},
		{name: "409 execute blind resend of an executed action", status: 409, setup: func(h *harness) Input {
			m, x := withdrawWorld(h)
			h.ok(h.apply(signed(h, m, x)), 200)
			return signed(h, m, x)
		}},
		{name: "409 execute contended (the action leaves the queue)", status: 409, same: sameNot, setup: func(h *harness) Input {
			m, x := withdrawWorld(h)
			h.ledger.failNext(LedgerContention, isExecute)
			return signed(h, m, x)
		}, after: func(h *harness) {
			if len(h.d.Actions) != 0 {
				h.t.Fatal("a spent action stayed in the queue")
			}
		}},
		// ---- 410 ----
		{name: "410 execute an expired action", status: 410, setup: func(h *harness) Input {
			m, x := withdrawWorld(h)
			h.advance(10 * time.Minute)
			return signed(h, m, x)
		}},
		{name: "410 execute an action past expiry before the tick", status: 410, setup: func(h *harness) Input {
			m, x := withdrawWorld(h)
			h.setNow(t0.Add(10 * time.Minute))
			return signed(h, m, x)
		}},
		{name: "410 rotate with an expired challenge", status: 410, setup: func(h *harness) Input {
			m := h.maker("M")
			h.ok(h.apply(ChallengeRequest{PartyID: m.id, Challenge: "ch-1"}), 200)
			h.advance(5 * time.Minute)
			return RotateKey{PartyID: m.id, Challenge: "ch-1", Signature: ed25519.Sign(h.keys[m.id], []byte("ch-1")), NewKeyHash: keyHash("new")}
		}},
		// ---- 501 ----
		{name: "501 withdraw on the sandbox", status: 501, cfg: sandbox, setup: func(h *harness) Input {
			return withdrawOf(h.maker("M"), "cc")
		}},
		{name: "501 faucet on the sandbox", status: 501, cfg: sandbox, setup: func(h *harness) Input {
			return FaucetDraw{Req: h.maker("M").req()}
		}},
		{name: "501 faucet on mainnet", status: 501, cfg: func(c *Config) { c.Network = Mainnet }, setup: func(h *harness) Input {
			return FaucetDraw{Req: h.maker("M").req()}
		}},
		{name: "501 faucet with no reservoir", status: 501, cfg: func(c *Config) { c.Reservoir = "" }, setup: func(h *harness) Input {
			return FaucetDraw{Req: h.maker("M").req()}
		}},
		// ---- 502 ----
		{name: "502 ledger rejects a quote's allocation", status: 502, same: sameSemantic, setup: func(h *harness) Input {
			_, m2, rfq, _ := liveWorld(h)
			h.ledger.failNext(LedgerRejected, isPrepare)
			return quoteOf(m2, rfq.RfqID, "59000")
		}},
		{name: "502 ledger rejects an execute (the action leaves the queue)", status: 502, same: sameNot, setup: func(h *harness) Input {
			m, x := withdrawWorld(h)
			h.ledger.failNext(LedgerRejected, isExecute)
			return signed(h, m, x)
		}},
		// ---- 503 ----
		{name: "503 RETRY_LATER ledger unavailable on quote", status: 503, code: CodeRetryLater, same: sameSemantic, setup: func(h *harness) Input {
			_, m2, rfq, _ := liveWorld(h)
			h.ledger.failNext(LedgerUnavailable, isPrepare)
			return quoteOf(m2, rfq.RfqID, "59000")
		}},
		{name: "503 RETRY_LATER ledger unavailable on accept", status: 503, code: CodeRetryLater, same: sameSemantic, setup: func(h *harness) Input {
			_, _, _, q := liveWorld(h)
			h.ledger.failNext(LedgerUnavailable, legIs(legTakerQuote))
			return AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID}
		}},
		{name: "503 RETRY_LATER execute unavailable (action stays pending)", status: 503, code: CodeRetryLater, same: sameNot, setup: func(h *harness) Input {
			m, x := withdrawWorld(h)
			h.ledger.failNext(LedgerUnavailable, isExecute)
			return signed(h, m, x)
		}, after: func(h *harness) {
			for _, x := range h.d.Actions {
				if x.State != ActionPending {
					h.t.Fatalf("action %s", x.State)
				}
			}
		}},
		{name: "503 RETRY_LATER singular execute unanswered within ExecuteWait", status: 503, code: CodeRetryLater, same: sameNot, setup: func(h *harness) Input {
			m, x := withdrawWorld(h)
			h.auto = false
			return signed(h, m, x)
		}, after: func(h *harness) { h.advance(5 * time.Second) }},
	}
}

// TestErrorMatrix: every status and code the machine decides, each with the proof that a
// refusal changes nothing (or only what its row says).
func TestErrorMatrix(t *testing.T) {
	for _, c := range errorMatrix() {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			h := newHarnessWith(t, cfg)
			in := c.setup(h)
			// The input moves the desk's clock to its own time; so does the reference.
			if h.now.After(h.d.Now) {
				h.d.Now = h.now
			}
			full, semantic := h.digest(), h.semanticDigest()
			seq := h.apply(in)
			if c.after != nil {
				c.after(h)
			}
			h.refused(seq, c.status, c.code)
			if r := h.reply(seq); r.Err.Message == "" {
				t.Fatal("a refusal without a message")
			}
			switch c.same {
			case sameAll:
				if h.digest() != full {
					t.Fatal("the refusal changed the state")
				}
			case sameSemantic:
				if h.semanticDigest() != semantic {
					t.Fatalf("the refusal changed the state:\nbefore %s\nafter  %s", semantic, h.semanticDigest())
				}
			}
			if _, held := h.d.Held[seq]; held {
				t.Fatal("a refused request is still held")
			}
		})
	}
}

// TestReadErrors: 401 for an unknown key on every read, and the limit of the list reads.
func TestReadErrors(t *testing.T) {
	h := newHarness(t)
	m := h.maker("M")
	for _, q := range []Query{QInstruments{}, QMakerStatus{}, QTxPending{}, QRfqMine{}, QTrades{}} {
		if r := Read(h.d, h.now, keyHash("nope"), q); r.Status != 401 || r.Err == nil {
			t.Fatalf("%T with an unknown key: %+v", q, r)
		}
	}
	for _, c := range []struct {
		limit  int
		status int
	}{{-1, 400}, {0, 200}, {1, 200}, {500, 200}, {501, 400}} {
		for _, q := range []Query{QTrades{Limit: c.limit}, QMakerTrades{Limit: c.limit}, QRfqHistory{Limit: c.limit}} {
			if r := h.read(m.key, q); r.Status != c.status {
				t.Fatalf("%#v: %d, want %d", q, r.Status, c.status)
			}
		}
	}
	if r := h.read(m.key, QReferencePrice{Base: "doge", Quote: "usdcx"}); r.Status != 400 {
		t.Fatalf("reference price of an unknown instrument: %+v", r)
	}
}
