package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Idempotency keys in the simulation: actors send an Idempotency-Key on a third of their
// writes, retry a write whose answer a crash lost with the same key (and a write refused
// 409 RETRY_LATER because its first attempt is still in flight), and now and then send a
// write twice, as a client that timed out does; only the first answer to arrive reaches
// the actor. Hostile actors send malformed keys and reuse a key on another path. The
// model (sim/model) judges every answer; these are the coverage goals.
const (
	covIdemReplayed      = "an idempotent retry replayed an answer"
	covIdemRaced         = "an idempotent retry raced its own first attempt (409 RETRY_LATER)"
	covIdemAcrossRestart = "an idempotent replay across a desk restart"
	covIdemReused        = "a reused key with a different body was refused"
	covIdemReusedPath    = "a reused key on another path was refused"
	covAdvIdemMalformed  = "adversary: a malformed Idempotency-Key"
)

// idemCoverage lists the situations in report order.
var idemCoverage = []string{covIdemReplayed, covIdemRaced, covIdemAcrossRestart, covIdemReused, covIdemReusedPath, covAdvIdemMalformed}

// idemGoals are those a long run must reach: a replay and a race always; a replay across
// a restart when the desk crashes; the adversaries' cases when there are adversaries.
func idemGoals(k Knobs, runs int) []string {
	goals := []string{covIdemReplayed, covIdemRaced}
	if k.CrashRate > 0 && runs > 1 {
		goals = append(goals, covIdemAcrossRestart)
	}
	if k.Adversaries > 0 {
		goals = append(goals, covIdemReused, covIdemReusedPath, covAdvIdemMalformed)
	}
	return goals
}

// idemAttempts bounds the attempts of one keyed write (the first included).
const idemAttempts = 6

// idemRand is the actor's generator for its keyed writes, apart from its own so that a
// run's other decisions stay as they were.
func (a *actor) idemRand() *rand.Rand {
	if a.idemRng == nil {
		a.idemRng = rand.New(rand.NewPCG(uint64(a.idx)+0x1de4, a.s.k.Seed))
	}
	return a.idemRng
}

// keyedSend sends a third of the actor's writes with an Idempotency-Key; it reports
// whether it took the write.
func (a *actor) keyedSend(in machine.Input, cb func(machine.Reply)) bool {
	cmd, ok := in.(machine.Command_)
	if !ok || a.s.liveness {
		return false
	}
	method, path := idemRoute(cmd)
	if path == "" {
		return false
	}
	r := a.idemRand()
	if r.IntN(3) != 0 {
		return false
	}
	a.idemNext++
	w := machine.Idempotent{Key: fmt.Sprintf("sim-%d-%d", a.idx, a.idemNext), Method: method, Path: path, BodyHash: idemBodyHash(cmd), Cmd: cmd}
	switch cmd.(type) {
	case machine.RegisterStart, machine.ChallengeRequest:
		w.Address = fmt.Sprintf("10.0.%d.%d", a.idx/250, a.idx%250+1)
	}
	k := &keyedWrite{a: a, w: w, cb: cb, epoch: a.s.epoch}
	k.attempt()
	if r.IntN(4) == 0 {
		// A client that timed out sends the write again.
		a.s.after(time.Duration(r.IntN(400))*time.Millisecond, k.attempt)
	}
	return true
}

// keyedWrite is one logical write sent with an Idempotency-Key, maybe several times.
type keyedWrite struct {
	a        *actor
	w        machine.Idempotent
	cb       func(machine.Reply)
	epoch    uint64 // the desk's epoch at the first attempt
	attempts int
	done     bool // the actor has its answer
}

// attempt sends the write (again) with the same key.
func (k *keyedWrite) attempt() {
	if k.done {
		return
	}
	k.attempts++
	k.a.sendRaw(k.w, k.answered)
}

// answered takes one attempt's answer: a lost answer or a 409 of the key in flight is
// tried again (a bounded number of times); the first other answer goes to the actor.
func (k *keyedWrite) answered(rep machine.Reply) {
	s := k.a.s
	if rep.Replayed {
		s.cov.hit(covIdemReplayed)
		if s.epoch != k.epoch {
			s.cov.hit(covIdemAcrossRestart)
		}
	}
	inFlight := rep.Status == 409 && rep.Err != nil && rep.Err.Code == machine.CodeRetryLater && strings.Contains(rep.Err.Message, "Idempotency-Key")
	if inFlight {
		s.cov.hit(covIdemRaced)
	}
	if k.done {
		return
	}
	if (inFlight || rep.Status == lostConnection.Status) && k.attempts < idemAttempts && !s.liveness {
		s.after(time.Duration(500+k.a.idemRand().IntN(1500))*time.Millisecond, k.attempt)
		return
	}
	k.done = true
	if rep.Replayed {
		rep.Body = replayedBody(k.w.Cmd, rep)
	}
	k.cb(rep)
}

// replayedBody decodes a replayed answer's JSON into the answer type of the command, as a
// client decodes the bytes it got (the desk hands the recorded JSON back as it is).
func replayedBody(c machine.Command_, rep machine.Reply) any {
	raw, ok := rep.Body.(json.RawMessage)
	if !ok || rep.Err != nil {
		return rep.Body
	}
	var v any
	switch c := c.(type) {
	case machine.RegisterStart:
		v = &machine.RegisterStartDTO{}
	case machine.ChallengeRequest:
		v = &machine.ChallengeDTO{}
	case machine.Preapproval:
		v = &machine.OKDTO{}
	case machine.CreateRFQ:
		v = &machine.RfqDTO{}
	case machine.SubmitQuote:
		v = &machine.QuoteWithActionsDTO{}
	case machine.CancelAllQuotes:
		v = &machine.CancelAllQuotesDTO{}
	case machine.AcceptQuote:
		v = &machine.TradeWithActionsDTO{}
	case machine.ExecuteActions:
		if c.Batch {
			v = &machine.ExecBatchDTO{}
		} else {
			v = &machine.OKDTO{}
		}
	case machine.AcceptIncoming, machine.Withdraw:
		v = &machine.ActionsDTO{}
	case machine.FaucetDraw:
		v = &machine.FaucetAnswer{}
	case machine.ResetProtection:
		v = &machine.ProtectionDTO{}
	default:
		return rep.Body
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return rep.Body
	}
	return reflect.ValueOf(v).Elem().Interface()
}

// idemRoute is the method and path a command is sent on; "" for one that takes no key
// (its answer carries a new API key, docs/api.md) or that the simulator does not key.
func idemRoute(c machine.Command_) (string, string) {
	switch c := c.(type) {
	case machine.RegisterStart:
		return "POST", "/maker/register/start"
	case machine.ChallengeRequest:
		return "POST", "/maker/challenge"
	case machine.Preapproval:
		return "POST", "/maker/preapproval"
	case machine.CreateRFQ:
		return "POST", "/rfq"
	case machine.CancelRFQ:
		return "DELETE", "/rfq/" + c.RFQID
	case machine.SubmitQuote:
		return "POST", "/maker/quotes"
	case machine.DeleteQuote:
		return "DELETE", "/maker/quotes/" + c.QuoteID
	case machine.CancelAllQuotes:
		return "DELETE", "/maker/quotes"
	case machine.DeclineRFQ:
		return "POST", "/maker/rfq/" + c.RFQID + "/decline"
	case machine.AcceptQuote:
		return "POST", "/quote/" + c.QuoteID + "/accept"
	case machine.ExecuteActions:
		return "POST", "/tx/execute"
	case machine.AcceptIncoming:
		return "POST", "/wallet/incoming/" + c.CID + "/accept"
	case machine.Withdraw:
		return "POST", "/wallet/withdraw"
	case machine.FaucetDraw:
		return "POST", "/faucet"
	case machine.ResetProtection:
		return "POST", "/maker/protection/reset"
	}
	// PUT /maker/protection takes no key: only a POST or a DELETE does.
	return "", ""
}

// idemBodyHash stands for the SHA-256 of the request's body: none for the writes whose
// only argument is in the path (so a key reused on another of those paths differs only by
// its path, as over HTTP), the reason of a decline, and for the others the command's
// journal encoding, the same for the same command.
func idemBodyHash(c machine.Command_) string {
	var b []byte
	switch c := c.(type) {
	case machine.CancelRFQ, machine.DeleteQuote, machine.AcceptQuote, machine.AcceptIncoming,
		machine.CancelAllQuotes, machine.FaucetDraw, machine.Preapproval, machine.ResetProtection:
	case machine.DeclineRFQ:
		b = []byte(c.Reason)
	default:
		var err error
		if b, err = machine.EncodeEnvelope(machine.Envelope{Input: c}); err != nil {
			return ""
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// idemMalformed: a write with a malformed Idempotency-Key is 400 and changes nothing.
func (h *hostile) idemMalformed() bool {
	a := h.a
	bad := []string{"", "has space", strings.Repeat("k", 65), "é", "a/b"}[a.rng.IntN(5)]
	in := machine.CancelRFQ{Req: h.req(), RFQID: fmt.Sprintf("rfq_%x", a.rng.Uint64())}
	w := machine.Idempotent{Key: bad, Method: "DELETE", Path: "/rfq/" + in.RFQID, BodyHash: idemBodyHash(in), Cmd: in}
	h.send(w, &expectation{class: covAdvIdemMalformed, what: fmt.Sprintf("DELETE /rfq/%s by %s with Idempotency-Key %q", in.RFQID, a.party, bad),
		want: one(400, ""), immediate: true,
		refine: func(e *expectation) *expectation { return h.keyRaceOf(in.KeyHash, e) }}, nil)
	return true
}

// idemReused: a key answered once, sent again with another body on the same path (POST
// /maker/quotes at another price) or on another path (DELETE /rfq/{id} of another id), is
// 422 IDEMPOTENCY_KEY_REUSED and changes nothing.
func (h *hostile) idemReused() bool {
	a := h.a
	a.idemNext++
	key := fmt.Sprintf("adv-%d-%d", a.idx, a.idemNext)
	rfq := fmt.Sprintf("rfq_%x", a.rng.Uint64())
	var first, second machine.Idempotent
	var class, what string
	if a.rng.IntN(2) == 0 {
		q1 := machine.SubmitQuote{Req: h.req(), RFQID: rfq, Price: money.MustParse("1")}
		q2 := q1
		q2.Price = money.MustParse("2")
		first = machine.Idempotent{Key: key, Method: "POST", Path: "/maker/quotes", BodyHash: idemBodyHash(q1), Cmd: q1}
		second = machine.Idempotent{Key: key, Method: "POST", Path: "/maker/quotes", BodyHash: idemBodyHash(q2), Cmd: q2}
		class, what = covIdemReused, fmt.Sprintf("POST /maker/quotes on %s at price 2 by %s with the Idempotency-Key %s of the same call at price 1", rfq, a.party, key)
	} else {
		c1 := machine.CancelRFQ{Req: h.req(), RFQID: rfq}
		c2 := machine.CancelRFQ{Req: h.req(), RFQID: rfq + "0"}
		first = machine.Idempotent{Key: key, Method: "DELETE", Path: "/rfq/" + c1.RFQID, BodyHash: idemBodyHash(c1), Cmd: c1}
		second = machine.Idempotent{Key: key, Method: "DELETE", Path: "/rfq/" + c2.RFQID, BodyHash: idemBodyHash(c2), Cmd: c2}
		class, what = covIdemReusedPath, fmt.Sprintf("DELETE /rfq/%s by %s with the Idempotency-Key %s of DELETE /rfq/%s", c2.RFQID, a.party, key, c1.RFQID)
	}
	kh := h.req().KeyHash
	a.sendRaw(first, func(rep machine.Reply) {
		if rep.Status != 404 || a.s.liveness {
			return // lost, or the key rotated away: nothing recorded to reuse
		}
		h.send(second, &expectation{class: class, what: what,
			want: one(422, machine.CodeIdempotencyKeyReused), immediate: true,
			refine: func(e *expectation) *expectation { return h.keyRaceOf(kh, e) }}, nil)
	})
	return true
}

// ranFresh reports whether a keyed write ran its command in input seq (a first use of its
// key, answered or still in flight), rather than replaying or refusing: the desk then
// holds a record of the key made by that input. A first run whose answer asked for a retry
// leaves no record and is not looked at; the model judges it all the same.
//
// The desk appends the record a keyed write makes to the end of its scope, so the last
// record of each scope is looked at first; only when none is the one (a replay, a
// refusal, a retry) are all the records (up to 10,000 a scope) walked.
func (s *Sim) ranFresh(w machine.Idempotent, seq uint64) bool {
	for _, scope := range s.desk.Idem { // looking for one record: the order decides nothing
		if n := len(scope.Records); n > 0 {
			if r := scope.Records[n-1]; r != nil && r.Key == w.Key && r.Seq == seq {
				return true
			}
		}
	}
	for _, scope := range s.desk.Idem {
		for _, r := range scope.Records {
			if r != nil && r.Key == w.Key && r.Seq == seq {
				return true
			}
		}
	}
	return false
}
