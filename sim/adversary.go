package sim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Adversarial parties.
//
// A seed turns some of its honest makers and takers hostile (swarm: how many, and how often
// each attacks, are drawn per seed). A hostile actor keeps trading as before and also:
//
//   - uses other parties' ids, collected from every reply and frame of the run (a pool):
//     deletes another maker's quote, accepts a quote of another taker's RFQ, cancels another
//     taker's RFQ, quotes an RFQ it is not invited to, executes another party's action with
//     its own signature, accepts another party's deposit;
//   - replays what is finished: executes its executed, expired and cancelled actions again,
//     accepts its accepted quote again, cancels its RFQ while it settles and once cancelled,
//     deletes its deleted quote, quotes an RFQ it saw close;
//   - completes its registration twice and an expired one, rotates its key with an unknown,
//     used, expired or foreign challenge or a bad signature, calls with a rotated-away key;
//   - sends input the machine must refuse: batches of 51 or 0 entries, signatures of the
//     wrong length, unknown instruments, itself invited, unknown ids, limits out of range.
//
// Every such call states the one answer the contract gives it (or the smallest allowed set,
// with the reason), and the answer is judged when the desk gives it. A refusal the desk
// answers at once must change nothing: the desk's state digest before the input equals the
// digest after it, and the input produced no ledger call, frame or socket close. A wrong
// answer or a change is a Safety failure, in contract terms.

// Attack classes: each is a coverage goal of a long run (coverage.go).
const (
	covAdvForeignQuoteDelete = "adversary: DELETE /maker/quotes of another maker's quote"
	covAdvForeignQuoteAccept = "adversary: accept a quote on another taker's RFQ"
	covAdvForeignRFQCancel   = "adversary: cancel another taker's RFQ"
	covAdvUninvitedQuote     = "adversary: quote an RFQ it is not invited to"
	covAdvForeignExecute     = "adversary: execute another party's action with its own signature"
	covAdvForeignDeposit     = "adversary: accept another party's deposit"
	covAdvReplayExecuted     = "adversary: execute an executed action again"
	covAdvReplayExpired      = "adversary: execute an expired action"
	covAdvReplayCancelled    = "adversary: execute an action cancelled with its quote"
	covAdvAcceptTwice        = "adversary: accept its accepted quote again"
	covAdvCancelSettling     = "adversary: cancel its RFQ while a trade settles"
	covAdvCancelTwice        = "adversary: cancel its cancelled RFQ again"
	covAdvDeleteTwice        = "adversary: delete its deleted quote again"
	covAdvQuoteClosed        = "adversary: quote an RFQ it saw close"
	covAdvCompleteTwice      = "adversary: complete its registration twice"
	covAdvCompleteExpired    = "adversary: complete an expired registration"
	covAdvRotateBad          = "adversary: rotate with an unknown, used or expired challenge"
	covAdvRotateBadSig       = "adversary: rotate with a bad signature or another party's challenge"
	covAdvRotatedKey         = "adversary: call with a rotated-away API key"
	covAdvBadInput           = "adversary: malformed input the machine refuses"
	covAdvUnknownID          = "adversary: an id the desk never issued"
)

// advCoverage lists the attack classes in report order.
var advCoverage = []string{covAdvForeignQuoteDelete, covAdvForeignQuoteAccept, covAdvForeignRFQCancel,
	covAdvUninvitedQuote, covAdvForeignExecute, covAdvForeignDeposit, covAdvReplayExecuted, covAdvReplayExpired,
	covAdvReplayCancelled, covAdvAcceptTwice, covAdvCancelSettling, covAdvCancelTwice, covAdvDeleteTwice,
	covAdvQuoteClosed, covAdvCompleteTwice, covAdvCompleteExpired, covAdvRotateBad, covAdvRotateBadSig,
	covAdvRotatedKey, covAdvBadInput, covAdvUnknownID}

// advGoals are the attack classes a long run must reach: over several seeds every class;
// in one seed, whose hostile actors may all be makers or all takers, and whose draws may
// never let a registration or an action expire, the classes any hostile actor reaches.
func advGoals(runs int) []string {
	if runs > 1 {
		return advCoverage
	}
	return []string{covAdvForeignQuoteDelete, covAdvForeignRFQCancel, covAdvUninvitedQuote, covAdvForeignExecute,
		covAdvBadInput, covAdvUnknownID, covAdvRotateBad, covAdvRotateBadSig}
}

// want is one answer the contract allows: an HTTP status and its `code` ("" for none).
type want struct {
	status int
	code   string
}

func (w want) String() string {
	if w.code == "" {
		return fmt.Sprint(w.status)
	}
	return fmt.Sprintf("%d %s", w.status, w.code)
}

// expectation is what a hostile call must be answered, and how it is judged.
type expectation struct {
	class string // the attack class (a coverage goal)
	what  string // the call, in the contract's terms
	want  []want // the allowed answers, as few as the contract allows
	why   string // why more than one answer is allowed
	// immediate: the desk answers the input itself (no ledger round trip), so the answer
	// is judged when the input is applied and the desk's state must not change.
	immediate bool
	// consumes is a rotation challenge the refusal legitimately spends (DECISIONS: a
	// challenge is consumed by the first rotate that names it, whatever the outcome).
	consumes string
	// batchError: the batch form of POST /tx/execute answers 200 with one entry, which must
	// be an error that is not retryable.
	batchError bool
	// refine, if set, adjusts the expectation as the input arrives, from what the desk's
	// outputs told the world so far (never from the desk's state).
	refine func(*expectation) *expectation
	// ledgerFaults: the answer comes after a ledger round trip, so a ledger fault's answer
	// is allowed too whenever faults are on by the time the answer comes (a test may force
	// one while the call is on its way: World.Fault).
	ledgerFaults bool
}

// allows reports whether the reply is one of the answers the expectation allows.
func (e *expectation) allows(rep machine.Reply) bool {
	if e.batchError && rep.Status == 200 {
		b, ok := rep.Body.(machine.ExecBatchDTO)
		return rep.Status == 200 && ok && len(b.Results) == 1 && b.Results[0].Status == "error" &&
			b.Results[0].Retryable != nil && !*b.Results[0].Retryable
	}
	code := ""
	if rep.Err != nil {
		code = rep.Err.Code
	}
	for _, w := range e.want {
		if w.status == rep.Status && w.code == code {
			return true
		}
	}
	return false
}

// wanted renders the allowed answers.
func (e *expectation) wanted() string {
	var parts []string
	if e.batchError {
		parts = append(parts, "200 with one error entry, not retryable")
	}
	for _, w := range e.want {
		parts = append(parts, w.String())
	}
	s := strings.Join(parts, " or ")
	if e.why != "" {
		s += " (" + e.why + ")"
	}
	return s
}

// answered renders a reply in the contract's terms.
func answered(rep machine.Reply) string {
	if rep.Err == nil {
		if b, ok := rep.Body.(machine.ExecBatchDTO); ok && len(b.Results) > 0 {
			return fmt.Sprintf("%d with entry status %q", rep.Status, b.Results[0].Status)
		}
		return fmt.Sprint(rep.Status)
	}
	if rep.Err.Code != "" {
		return fmt.Sprintf("%d %s (%q)", rep.Status, rep.Err.Code, rep.Err.Message)
	}
	return fmt.Sprintf("%d (%q)", rep.Status, rep.Err.Message)
}

// expect fails the run when the answer is not one the contract allows.
func (s *Sim) expect(e *expectation, rep machine.Reply) {
	s.stats.Checks++
	s.cov.hit(e.class)
	if e.ledgerFaults {
		widened := *e
		widened.want = append(slices.Clone(e.want), s.faultAnswers()...)
		e = &widened
	}
	if !e.allows(rep) {
		s.failf(Safety, "%s was answered %s; the contract's answer is %s", e.what, answered(rep), e.wanted())
	}
}

// one is a single allowed answer.
func one(status int, code string) []want { return []want{{status, code}} }

// ---- The probe: a refusal changes nothing ----

// probe is an immediate refusal being applied: the expectation, the desk's fingerprint
// before the input and, for some, its full digest.
type probe struct {
	e      *expectation
	in     machine.Input
	spent  string // the challenge a refusal not fully compared spends (probedigest.go)
	print  [32]byte
	full   bool
	digest [32]byte
}

// fullDigestFirst and fullDigestEvery choose the refusals whose full state digest is
// compared: the first fullDigestFirst of a run, then one in fullDigestEvery. Every refusal
// compares the fingerprint (fingerprint). The full digest costs time in the desk's size: on
// every refusal it was a quarter of an hour-long run and grew with it.
const (
	fullDigestFirst = 64
	fullDigestEvery = 16
)

// probeBefore takes the expectation of the input about to be applied (set by the hostile
// actor that sends it) and, for an immediate refusal, the desk's digest. The clock is moved
// first exactly as Apply moves it, so that only the input's own effect is compared.
func (s *Sim) probeBefore(env machine.Envelope) *probe {
	e := s.nextProbe
	s.nextProbe = nil
	if e == nil || !e.immediate {
		return nil
	}
	d := s.desk
	if env.At.After(d.Now) {
		d.Now = env.At
	}
	p := &probe{e: e, in: env.Input}
	s.probes++
	p.full = s.fullProbeDue(e.consumes) // probedigest.go
	if p.full {
		digest, err := s.expectedDigest(d, env, e.consumes)
		if err != nil {
			s.failf(Safety, "desk digest before %s: %v", e.what, err)
			return nil
		}
		p.digest = digest
	} else {
		if _, ok := d.Challenges[e.consumes]; ok && e.consumes != "" {
			p.spent = e.consumes
		}
		p.print = fingerprint(d, env.Input, &s.fp, p.spent, true)
	}
	s.stats.Checks++
	return p
}

// fingerprint hashes what a refused input could change cheaply: every counter and table
// size of the desk, its clock, the caller's party and every object the input names (as
// JSON; the caller's idempotency records and scorecard facts in binary). It is exact for the objects named; a change elsewhere that keeps every size is
// left to the full digest that some refusals get. fp is the run's scratch state
// (fingerprint_tables.go).
//
// For a refusal that spends challenge spent (a rotate refused for its signature) the
// fingerprint before it (before) is taken as if the challenge were spent already: one
// challenge fewer, that one absent; after it, the challenge must be gone. The deadline
// queue, which the spent challenge's deadline may leave, is left out of both: that
// refusal's full digest (probedigest.go) compares it.
func fingerprint(d *machine.Desk, in machine.Input, fp *fpScratch, spent string, before bool) [32]byte {
	h := sha256.New()
	deadlineNext, deadlines, challenges := d.Deadlines.Next, len(d.Deadlines.Items), len(d.Challenges)
	if spent != "" {
		deadlineNext, deadlines = 0, 0
		if _, ok := d.Challenges[spent]; ok && before {
			challenges--
		}
	}
	fmt.Fprintln(h, d.Now.UnixNano(), d.IDs.Counter, deadlineNext, deadlines, len(d.Parties),
		len(d.HintIndex), len(d.KeyIndex), len(d.Registrations), challenges, len(d.Sockets), len(d.RFQs),
		len(d.Quotes), len(d.Trades), len(d.Actions), len(d.DoneActions), len(d.Deposits), len(d.Withdrawals),
		len(d.FaucetNext), len(d.Pending), len(d.Held), len(d.FailedTrades),
		len(d.Streams), len(d.Protections), len(d.Idem), len(d.Scorecards))
	enc := json.NewEncoder(h)
	put := func(v any) { _ = enc.Encode(v) } // machine state always encodes (LegacyDigest relies on it)
	fw := fp.writer(h)                       // the large per-party tables, in binary (fingerprint_tables.go)
	defer fp.keep(fw)
	caller := func(kh string) {
		id := d.KeyIndex[kh]
		put(d.Parties[id])
		put(d.FaucetNext[id])
		// What the newer features keep per party: its stream numbering, protection,
		// idempotency records and scorecard facts.
		if st := d.Streams[id]; st != nil {
			put(st.Seq)
			put(st.Len())
		}
		put(d.Protections[id])
		if sc := d.Idem[id]; sc != nil {
			fw.idemRecords(sc.Records)
			fw.flush()
			fw.sum()
		}
		if sc := d.Scorecards[id]; sc != nil {
			fw.scoreFacts(sc.Facts)
			fw.flush()
			fw.sum()
		}
	}
	rfq := func(id string) {
		r := d.RFQs[id]
		put(r)
		if r != nil {
			for _, q := range r.Quotes {
				put(d.Quotes[q])
			}
			put(d.Trades[r.SettlingTrade])
		}
	}
	if w, keyed := in.(machine.Idempotent); keyed && w.Cmd != nil {
		in = w.Cmd // a keyed refusal names the objects of its command
	}
	switch c := in.(type) {
	case machine.DeleteQuote:
		caller(c.KeyHash)
		if q := d.Quotes[c.QuoteID]; q != nil {
			rfq(q.RFQ)
		}
	case machine.AcceptQuote:
		caller(c.KeyHash)
		if q := d.Quotes[c.QuoteID]; q != nil {
			rfq(q.RFQ)
		}
	case machine.CancelRFQ:
		caller(c.KeyHash)
		rfq(c.RFQID)
	case machine.SubmitQuote:
		caller(c.KeyHash)
		rfq(c.RFQID)
	case machine.ExecuteActions:
		caller(c.KeyHash)
		for _, e := range c.Entries {
			put(d.Actions[e.ActionID])
			put(d.DoneActions[e.ActionID])
		}
	case machine.AcceptIncoming:
		caller(c.KeyHash)
		put(d.Deposits[c.CID])
	case machine.CreateRFQ:
		caller(c.KeyHash)
	case machine.Withdraw:
		caller(c.KeyHash)
	case machine.FaucetDraw:
		caller(c.KeyHash)
	case machine.RegisterComplete:
		put(d.Registrations[c.RegistrationID])
	case machine.RotateKey:
		put(d.Parties[c.PartyID])
		if before && c.Challenge == spent && spent != "" {
			put((*machine.Challenge)(nil)) // as spent
		} else {
			put(d.Challenges[c.Challenge])
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// expectedDigest is the digest the desk must have after a refusal: its digest now or, for
// a refusal that spends a challenge, the digest of a copy with that challenge spent (and
// its deadline dropped as every input drops spent deadlines at the head of the queue).
func (s *Sim) expectedDigest(d *machine.Desk, env machine.Envelope, consumes string) ([32]byte, error) {
	if _, ok := d.Challenges[consumes]; !ok {
		return s.deskDigest(d)
	}
	snap, err := d.EncodeSnapshot()
	if err != nil {
		return [32]byte{}, err
	}
	cp, err := machine.Restore(snap)
	if err != nil {
		return [32]byte{}, err
	}
	delete(cp.Challenges, consumes)
	machine.ApplyQuiet(cp, machine.Envelope{Seq: env.Seq, At: env.At, Input: housekeeping{}})
	return cp.Digest()
}

// housekeeping is an input no desk knows: applied, it changes nothing but what every input
// does after its own work (dropping spent deadlines).
type housekeeping struct{}

// Kind names the input.
func (housekeeping) Kind() string { return "sim.housekeeping" }

// probeAfter judges an immediate refusal: answered at once as expected, nothing sent to the
// ledger or the streams, and the desk's state unchanged.
func (s *Sim) probeAfter(p *probe, env machine.Envelope, out machine.Outputs) {
	if s.advs > 0 {
		for _, ev := range out.Events {
			if ev.Type == machine.EvTradeFailed {
				if len(s.failedTrades) >= 4096 {
					clear(s.failedTrades)
				}
				s.failedTrades[ev.Payload.(machine.TradeFailedPayload).TradeID] = true
			}
		}
	}
	if p == nil || s.failure != nil {
		return
	}
	e := p.e
	var rep *machine.Reply
	for i := range out.Replies {
		if out.Replies[i].Seq == env.Seq {
			rep = &out.Replies[i]
		}
	}
	if rep == nil {
		s.failf(Safety, "%s was not answered at once (the desk went on to the ledger); the contract's answer is %s", e.what, e.wanted())
		return
	}
	s.expect(e, *rep)
	if s.failure != nil {
		return
	}
	if n := len(out.Calls) + len(out.Events) + len(out.Closes) + len(out.Bindings); n > 0 {
		s.failf(Safety, "%s was refused %s but produced %d ledger calls, %d frames, %d socket closes",
			e.what, answered(*rep), len(out.Calls), len(out.Events), len(out.Closes))
		return
	}
	if !p.full {
		if fingerprint(s.desk, p.in, &s.fp, p.spent, false) != p.print {
			s.failf(Safety, "%s was refused %s but changed the desk's state (a table size, a counter or an object it names)", e.what, answered(*rep))
		}
		return
	}
	after, err := s.deskDigest(s.desk)
	if err != nil {
		s.failf(Safety, "desk digest after %s: %v", e.what, err)
		return
	}
	if after != p.digest {
		s.failf(Safety, "%s was refused %s but changed the desk's state", e.what, answered(*rep))
	}
}

// ---- The pool of ids seen in the run ----

// poolSize bounds each kind of id the pool keeps (the newest).
const poolSize = 128

// seen is an id some actor learned, with what the adversary knows of it.
type seen struct {
	id     string
	owner  string // who it belongs to: the hint of a quote's maker or an RFQ's taker, the party of an action or transfer
	rfq    string // a quote's RFQ
	taker  string // the party of a quote's RFQ's taker, when known
	hash   []byte // an action's hash
	at     time.Time
	young  bool // learned from a command's answer or a frame, not from a read
	anchor bool // a quote known anchored (its taker was told)
	invite []string
}

// ring keeps the newest poolSize entries.
type ring struct {
	xs   []seen
	next int
}

func (r *ring) add(x seen) {
	if len(r.xs) < poolSize {
		r.xs = append(r.xs, x)
		return
	}
	r.xs[r.next] = x
	r.next = (r.next + 1) % poolSize
}

// pick returns a random entry that keep accepts, or false.
func (r *ring) pick(rng *rand.Rand, keep func(*seen) bool) (seen, bool) {
	if len(r.xs) == 0 {
		return seen{}, false
	}
	start := rng.IntN(len(r.xs))
	for i := range r.xs {
		x := &r.xs[(start+i)%len(r.xs)]
		if keep(x) {
			return *x, true
		}
	}
	return seen{}, false
}

// idPool is every kind of id the adversaries reuse.
type idPool struct {
	quotes, rfqs, actions, cids ring
	parties                     []string
}

// harvest collects the ids of a reply or a frame an actor received.
func (s *Sim) harvest(a *actor, body any, fromRead bool) {
	if s.advs == 0 || a.role == roleHouse {
		return
	}
	p := &s.pool
	if a.party != "" && !slices.Contains(p.parties, a.party) && len(p.parties) < poolSize {
		p.parties = append(p.parties, a.party) // party ids are no secret: ownership checks protect
	}
	young := !fromRead
	now := s.now
	addAction := func(x machine.SignActionDTO) {
		p.actions.add(seen{id: x.ID, owner: a.party, hash: x.Hash, at: now, young: young})
	}
	switch b := body.(type) {
	case machine.QuoteWithActionsDTO:
		p.quotes.add(seen{id: b.QuoteID, owner: b.Maker, rfq: b.RfqID, at: now, young: young})
		for _, x := range b.Actions {
			addAction(x)
		}
	case machine.QuoteDTO:
		if a.role == roleTaker && a.mine[b.RfqID] != nil {
			p.quotes.add(seen{id: b.QuoteID, owner: b.Maker, rfq: b.RfqID, taker: a.party, at: now, young: young, anchor: true})
		}
	case machine.RfqDTO:
		p.rfqs.add(seen{id: b.RfqID, owner: b.Taker, at: now, young: young && b.Open, invite: b.InvitedMakers})
	case machine.TradeWithActionsDTO:
		for _, x := range b.Actions {
			addAction(x)
		}
	case machine.ActionsDTO:
		for _, x := range b.Actions {
			addAction(x)
		}
	case machine.SignActionDTO:
		addAction(b)
	case machine.IncomingDTO:
		for _, t := range b.Transfers {
			p.cids.add(seen{id: t.CID, owner: a.party, at: now})
		}
	}
}

// ---- Hostile actors ----

// hostile is the adversarial side of an actor.
type hostile struct {
	a *actor
	// rate is the probability that a wake-up of the actor attacks.
	rate float64
	// withheld are actions the actor keeps unsigned on purpose, to replay them once they
	// expired or were cancelled.
	withheld map[string]bool
	// quoteActions are the actions of quotes it withheld, by quote (bounded).
	quoteActions map[string][]machine.SignActionDTO
	oldKeys      []string // key hashes rotated away
	used         []string // challenges spent by its rotations
}

// drawAdversaries turns some honest makers and takers hostile: between 1 and
// Knobs.Adversaries of them, each attacking at a rate of its own.
func (s *Sim) drawAdversaries(rng *rand.Rand) {
	if s.k.Adversaries <= 0 {
		return
	}
	var honest []*actor
	for _, a := range s.actors {
		if a.role != roleHouse {
			honest = append(honest, a)
		}
	}
	n := min(len(honest), 1+rng.IntN(s.k.Adversaries))
	for _, i := range rng.Perm(len(honest))[:n] {
		s.hostileNow(honest[i]).rate = 0.02 + 0.2*rng.Float64()
	}
}

// send issues a hostile command with its expectation: an immediate refusal is judged as it
// is applied, any other answer when it arrives. then (if any) gets the reply.
func (h *hostile) send(in machine.Input, e *expectation, then func(machine.Reply)) {
	s := h.a.s
	h.a.issue(func(rep machine.Reply) {
		if !e.immediate && rep.Status != lostConnection.Status {
			s.expect(e, rep) // e as refined on arrival
		}
		if then != nil {
			then(rep)
		}
	}, func(r *request) {
		if e.refine != nil {
			e = e.refine(e)
		}
		e = h.frozenMayRefuse(in, e)
		// A rotation of the actor's own key that lands first makes any call 401 before it
		// reaches the ledger: judged so on arrival whether the answer is immediate or not
		// (a foreign deposit's accept, answered after a ledger round trip otherwise, met it).
		e = h.keyRace(in, e)
		s.nextProbe = e
		seq := s.input(in)
		s.waiting[seq] = r
	})
}

// read issues a hostile query and judges its answer.
func (h *hostile) read(keyHash string, q machine.Query, e *expectation) {
	h.a.read(keyHash, q, func(rep machine.Reply) {
		if rep.Status != lostConnection.Status {
			h.a.s.expect(h.keyRaceOf(keyHash, e), rep)
		}
	})
}

// keyRace widens the expectation of a command sent with the actor's key by 401 when the
// actor's own key rotation may have replaced that key before the command arrived (a
// rotation in flight, or done since the command was made).
func (h *hostile) keyRace(in machine.Input, e *expectation) *expectation {
	c, ok := in.(machine.Command_)
	if !ok || machine.KeyHash(c) == "" {
		return e
	}
	return h.keyRaceOf(machine.KeyHash(c), e)
}

// keyRaceOf is keyRace for a call made with key hash kh.
func (h *hostile) keyRaceOf(kh string, e *expectation) *expectation {
	a := h.a
	if (kh == a.keyHash && len(a.candidates) == 0) || slices.Contains(h.oldKeys, kh) && len(e.want) == 1 && e.want[0].status == 401 {
		return e
	}
	w := *e
	w.want = append(slices.Clone(e.want), want{401, ""})
	w.why = strings.TrimPrefix(w.why+"; ", "; ") + "its own key rotation raced the call: 401"
	return &w
}

// req is the actor's request header.
func (h *hostile) req() machine.Req { return h.a.req() }

// retained says whether an object learned at `at` from a command's answer or a frame is
// certainly still retained by the desk: such an object was live when it was learned, and
// the desk keeps a closed RFQ and its quotes for ClosedRetention after it closes. A minute
// of margin covers the latency between the output and its arrival.
func (h *hostile) retained(x seen) bool {
	return x.young && h.a.s.now.Sub(x.at) < h.a.s.cfg.ClosedRetention-time.Minute
}

// maybeForgotten widens an ownership refusal (403) by 404 when the object may be gone.
func (h *hostile) maybeForgotten(x seen, w []want) ([]want, string) {
	if h.retained(x) {
		return w, ""
	}
	return append(w, want{404, ""}), "the object may have been forgotten after its retention: 404"
}

// attack is a wake-up's hostile move: one attack class drawn at random.
func (h *hostile) attack() {
	a := h.a
	if a.s.liveness || a.reg != regDone || a.rng.Float64() >= h.rate {
		return
	}
	h.move(a.rng.Int())
}

// move makes the pick-th attack of those the actor can make now (modulo their number),
// or the next one it can; it reports whether it made one.
func (h *hostile) move(pick int) bool {
	moves := []func() bool{h.foreignQuoteDelete, h.foreignQuoteAccept, h.foreignRFQCancel, h.uninvitedQuote,
		h.foreignExecute, h.foreignDeposit, h.badInput, h.unknownID, h.rotateBad, h.rotateBadSig,
		h.rotatedKey, h.expiredRegistration, h.takerMassCancel, h.uninvitedDecline, h.badReasonDecline, h.unknownDecline,
		h.badScoreWindow, h.badProtection, h.idemMalformed, h.idemReused}
	if pick < 0 {
		pick = -pick
	}
	for i := range moves {
		if moves[(pick+i)%len(moves)]() {
			return true
		}
	}
	return false
}

// hostileNow makes an actor hostile (a World's driver decides when it attacks).
func (s *Sim) hostileNow(a *actor) *hostile {
	if a.adv == nil {
		a.adv = &hostile{a: a, rate: 1, withheld: map[string]bool{}, quoteActions: map[string][]machine.SignActionDTO{}}
		s.advs++
	}
	return a.adv
}

func (h *hostile) foreignQuoteDelete() bool {
	a := h.a
	return h.forbidden(&a.s.pool.quotes, func(x *seen) bool { return x.owner != a.hint }, covAdvForeignQuoteDelete,
		func(x seen) (machine.Input, string) {
			return machine.DeleteQuote{Req: h.req(), QuoteID: x.id},
				fmt.Sprintf("DELETE /maker/quotes/%s by %s of maker %s's quote", x.id, a.party, x.owner)
		})
}

func (h *hostile) foreignQuoteAccept() bool {
	a := h.a
	return h.forbidden(&a.s.pool.quotes, func(x *seen) bool { return x.anchor && x.taker != "" && x.taker != a.party }, covAdvForeignQuoteAccept,
		func(x seen) (machine.Input, string) {
			return machine.AcceptQuote{Req: h.req(), QuoteID: x.id},
				fmt.Sprintf("POST /quote/%s/accept by %s, a quote on taker %s's RFQ %s", x.id, a.party, x.taker, x.rfq)
		})
}

func (h *hostile) foreignRFQCancel() bool {
	a := h.a
	return h.forbidden(&a.s.pool.rfqs, func(x *seen) bool { return x.owner != a.hint }, covAdvForeignRFQCancel,
		func(x seen) (machine.Input, string) {
			return machine.CancelRFQ{Req: h.req(), RFQID: x.id},
				fmt.Sprintf("DELETE /rfq/%s by %s of taker %s's RFQ", x.id, a.party, x.owner)
		})
}

func (h *hostile) uninvitedQuote() bool {
	a := h.a
	return h.forbidden(&a.s.pool.rfqs, func(x *seen) bool { return !slices.Contains(x.invite, a.hint) }, covAdvUninvitedQuote,
		func(x seen) (machine.Input, string) {
			return machine.SubmitQuote{Req: h.req(), RFQID: x.id, Price: money.FromInt(1)},
				fmt.Sprintf("POST /maker/quotes by %s on RFQ %s, which invites %v", a.party, x.id, x.invite)
		})
}

// forbidden picks an object of the pool that keep says is not the actor's to touch and
// sends the command call makes of it, which the desk must refuse at once with 403 (or
// 404, once the object may have been forgotten). It reports whether there was one.
func (h *hostile) forbidden(pool *ring, keep func(*seen) bool, class string, call func(x seen) (machine.Input, string)) bool {
	x, ok := pool.pick(h.a.rng, keep)
	if !ok {
		return false
	}
	w, why := h.maybeForgotten(x, one(403, ""))
	in, what := call(x)
	h.send(in, &expectation{class: class, what: what, want: w, why: why, immediate: true}, nil)
	return true
}

func (h *hostile) foreignExecute() bool {
	a := h.a
	x, ok := a.s.pool.actions.pick(a.rng, func(x *seen) bool { return x.owner != a.party })
	if !ok {
		return false
	}
	sig := ed25519.Sign(a.priv, x.hash)
	e := &expectation{class: covAdvForeignExecute,
		what: fmt.Sprintf("POST /tx/execute by %s of party %s's action %s, signed with its own key", a.party, x.owner, x.id),
		want: one(404, ""), immediate: true}
	batch := a.rng.IntN(2) == 0
	if batch {
		e.want, e.batchError = nil, true
		e.what += " (batch form)"
	}
	h.send(machine.ExecuteActions{Req: h.req(), Entries: []machine.SignedAction{{ActionID: x.id, Signature: sig}}, Batch: batch}, e, nil)
	return true
}

// faultAnswers are the answers a ledger fault of the run's profile, or one a test forced
// (World.Fault), may give a call that goes to the ledger: unavailable (503 RETRY_LATER),
// contention (409), a rejection (502).
func (s *Sim) faultAnswers() []want {
	if s.k.Faults == "none" && !s.faultsForced {
		return nil
	}
	return []want{{503, machine.CodeRetryLater}, {409, ""}, {502, ""}}
}

func (h *hostile) foreignDeposit() bool {
	a := h.a
	s := a.s
	x, ok := s.pool.cids.pick(a.rng, func(x *seen) bool { return x.owner != a.party })
	if !ok {
		return false
	}
	// The desk may have to ask the ledger (the transfer is not its receiver's business yet):
	// the answer then comes after a ledger round trip, where a fault of the run's profile
	// may answer first. A transfer someone else is accepting right now is 409 RETRY_LATER.
	w := append(one(404, ""), want{409, machine.CodeRetryLater})
	h.send(machine.AcceptIncoming{Req: h.req(), CID: x.id}, &expectation{class: covAdvForeignDeposit,
		what: fmt.Sprintf("POST /wallet/incoming/%s/accept by %s of party %s's deposit", x.id, a.party, x.owner),
		want: w, ledgerFaults: true, why: "an unknown transfer is 404; a ledger fault or an accept in progress may answer first"}, nil)
	return true
}

// badInput sends a command the machine refuses whatever the desk's state.
func (h *hostile) badInput() bool {
	a := h.a
	var in machine.Input
	var what string
	w := one(400, "")
	switch a.rng.IntN(6) {
	case 0:
		entries := make([]machine.SignedAction, machine.MaxBatch+1)
		for i := range entries {
			entries[i] = machine.SignedAction{ActionID: fmt.Sprintf("act_bogus%d", i), Signature: make([]byte, 64)}
		}
		in, what = machine.ExecuteActions{Req: h.req(), Entries: entries, Batch: true}, "POST /tx/execute with a batch of 51 entries"
	case 1:
		in, what = machine.ExecuteActions{Req: h.req(), Batch: true}, "POST /tx/execute with an empty batch"
	case 2:
		in, what = machine.CreateRFQ{Req: h.req(), Direction: machine.Sell, Qty: money.FromInt(1), Base: "nosuchcoin",
			Quote: "usdcx", InvitedMakers: []string{a.hint}, TTLSeconds: 60}, "POST /rfq with the unknown instrument nosuchcoin"
	case 3:
		in, what = machine.CreateRFQ{Req: h.req(), Direction: machine.Buy, Qty: money.MustParse("0.01"), Base: "cbtc",
			Quote: "usdcx", InvitedMakers: []string{a.hint}, TTLSeconds: 60}, fmt.Sprintf("POST /rfq by %s inviting itself", a.hint)
	case 4:
		in, what = machine.Withdraw{Req: h.req(), Symbol: "nosuchcoin", Amount: money.FromInt(1), Receiver: a.party},
			"POST /wallet/withdraw of the unknown instrument nosuchcoin"
		w = one(404, "")
	default:
		// Reads: a limit out of [1, 500].
		limit := []int{machine.MaxLimit + 1, -1}[a.rng.IntN(2)]
		qs := []machine.Query{machine.QTrades{Limit: limit}, machine.QMakerTrades{Limit: limit}, machine.QRfqHistory{Limit: limit}}
		h.read(a.keyHash, qs[a.rng.IntN(len(qs))], &expectation{class: covAdvBadInput,
			what: fmt.Sprintf("a list read with limit=%d", limit), want: w})
		return true
	}
	h.send(in, &expectation{class: covAdvBadInput, what: what, want: w, immediate: true}, nil)
	return true
}

// unknownID names an object the desk never issued.
func (h *hostile) unknownID() bool {
	a := h.a
	id := fmt.Sprintf("%x", a.rng.Uint64())
	var in machine.Input
	var what string
	switch a.rng.IntN(5) {
	case 0:
		in, what = machine.DeleteQuote{Req: h.req(), QuoteID: "q_" + id}, "DELETE /maker/quotes/q_"+id
	case 1:
		in, what = machine.AcceptQuote{Req: h.req(), QuoteID: "q_" + id}, "POST /quote/q_"+id+"/accept"
	case 2:
		in, what = machine.CancelRFQ{Req: h.req(), RFQID: "rfq_" + id}, "DELETE /rfq/rfq_"+id
	case 3:
		in, what = machine.ExecuteActions{Req: h.req(), Entries: []machine.SignedAction{{ActionID: "act_" + id, Signature: make([]byte, 12)}}},
			"POST /tx/execute of the unknown action act_"+id+" with a 12-byte signature"
	default:
		in, what = machine.RegisterComplete{RegistrationID: "reg_" + id, Signatures: [][]byte{make([]byte, 64)}, NewKeyHash: hashKey(id)},
			"POST /maker/register/complete of the unknown registration reg_"+id
	}
	h.send(in, &expectation{class: covAdvUnknownID, what: what + " (never issued)", want: one(404, ""), immediate: true}, nil)
	return true
}

// rotateBad rotates the actor's key with a challenge that cannot work: one never issued,
// one its own rotation spent, or one left to expire.
func (h *hostile) rotateBad() bool {
	a := h.a
	s := a.s
	rotate := func(c, how string) {
		h.send(machine.RotateKey{PartyID: a.party, Challenge: c, Signature: ed25519.Sign(a.priv, []byte(c)), NewKeyHash: hashKey(c)},
			&expectation{class: covAdvRotateBad, what: fmt.Sprintf("POST /maker/api-key/rotate of %s with %s challenge %q", a.party, how, c),
				want: one(410, ""), immediate: true}, nil)
	}
	switch {
	case len(h.used) > 0 && a.rng.IntN(2) == 0:
		rotate(h.used[a.rng.IntN(len(h.used))], "the used")
	case a.rng.IntN(2) == 0:
		rotate(fmt.Sprintf("never-issued-%x", a.rng.Uint64()), "the never issued")
	default:
		c := fmt.Sprintf("challenge-%d-%x", a.idx, a.rng.Uint64())
		a.send(machine.ChallengeRequest{PartyID: a.party, Challenge: c}, func(rep machine.Reply) {
			if rep.Err != nil {
				return
			}
			s.after(s.cfg.ChallengeLifetime+a.uniform(time.Second, 2*time.Minute), func() { rotate(c, "the expired") })
		})
	}
	return true
}

// rotateBadSig spends a challenge with a signature that does not verify: its own challenge
// signed wrong, another party's challenge, or another party named with its own signature.
// Each is 401 and spends the challenge (and nothing else).
func (h *hostile) rotateBadSig() bool {
	a := h.a
	s := a.s
	other := ""
	for _, p := range s.pool.parties {
		if p != a.party {
			other = p
			break
		}
	}
	mode := a.rng.IntN(3)
	if other == "" {
		mode = 0
	}
	issuedTo := a.party
	if mode > 0 {
		issuedTo = other
	}
	c := fmt.Sprintf("challenge-%d-%x", a.idx, a.rng.Uint64())
	a.send(machine.ChallengeRequest{PartyID: issuedTo, Challenge: c}, func(rep machine.Reply) {
		if rep.Err != nil {
			return
		}
		in := machine.RotateKey{PartyID: a.party, Challenge: c, Signature: ed25519.Sign(a.priv, []byte(c)), NewKeyHash: hashKey(c)}
		var what string
		switch mode {
		case 0:
			in.Signature = ed25519.Sign(a.priv, []byte("not the challenge"))
			what = fmt.Sprintf("POST /maker/api-key/rotate of %s signed over other text", a.party)
		case 1:
			what = fmt.Sprintf("POST /maker/api-key/rotate of %s with the challenge issued to %s", a.party, other)
		default:
			in.PartyID = other
			what = fmt.Sprintf("POST /maker/api-key/rotate of %s signed with %s's key", other, a.party)
		}
		h.send(in, &expectation{class: covAdvRotateBadSig, what: what, want: one(401, ""), immediate: true, consumes: c}, nil)
	})
	return true
}

// rotatedKey calls with a key the actor rotated away: 401, for a command and for a read.
func (h *hostile) rotatedKey() bool {
	a := h.a
	if len(h.oldKeys) == 0 {
		if a.rng.IntN(4) == 0 && len(a.candidates) == 0 && len(a.inflight) == 0 {
			a.rotate() // the next time, there is an old key to use
		}
		return false
	}
	old := h.oldKeys[a.rng.IntN(len(h.oldKeys))]
	if a.rng.IntN(2) == 0 {
		h.read(old, machine.QTxPending{}, &expectation{class: covAdvRotatedKey,
			what: fmt.Sprintf("GET /tx/pending of %s with its rotated-away key", a.party), want: one(401, "")})
		return true
	}
	h.send(machine.FaucetDraw{Req: machine.Req{KeyHash: old}}, &expectation{class: covAdvRotatedKey,
		what: fmt.Sprintf("POST /faucet of %s with its rotated-away key", a.party), want: one(401, ""), immediate: true}, nil)
	return true
}

// expiredRegistration starts a registration with a fresh key and completes it after it
// expired (410), once the registration lifetime passed and before the desk forgets it (one
// more lifetime later).
func (h *hostile) expiredRegistration() bool {
	a := h.a
	s := a.s
	if a.rng.IntN(8) != 0 {
		return false
	}
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(a.rng.UintN(256))
	}
	priv := ed25519.NewKeyFromSeed(seed[:])
	a.send(machine.RegisterStart{DisplayName: a.name + " late", PublicKey: priv.Public().(ed25519.PublicKey)}, func(rep machine.Reply) {
		if rep.Err != nil {
			return
		}
		st := rep.Body.(machine.RegisterStartDTO)
		s.after(s.cfg.RegistrationLifetime+a.uniform(5*time.Second, 5*time.Minute), func() {
			sigs := make([][]byte, len(st.Topology))
			for i, t := range st.Topology {
				sigs[i] = ed25519.Sign(priv, t.Hash)
			}
			h.send(machine.RegisterComplete{RegistrationID: st.RegistrationID, Signatures: sigs, NewKeyHash: hashKey(st.RegistrationID)},
				&expectation{class: covAdvCompleteExpired, what: fmt.Sprintf("POST /maker/register/complete of %s after it expired", st.RegistrationID),
					want: one(410, ""), immediate: true}, nil)
		})
	})
	return true
}

// ---- Replays of the actor's own finished things (hooks called from actors.go) ----

// registered: complete the same registration again while the desk still remembers it
// (409: already complete).
func (h *hostile) registered(st machine.RegisterStartDTO, startedAt time.Time, sigs [][]byte) {
	a := h.a
	s := a.s
	if a.rng.IntN(2) == 0 {
		return
	}
	at := s.now.Add(a.uniform(10*time.Millisecond, 30*time.Second))
	if !at.Before(startedAt.Add(s.cfg.RegistrationLifetime - time.Minute)) {
		return
	}
	s.at(at, func() {
		h.send(machine.RegisterComplete{RegistrationID: st.RegistrationID, Signatures: sigs, NewKeyHash: hashKey(st.RegistrationID + "again")},
			&expectation{class: covAdvCompleteTwice, what: fmt.Sprintf("POST /maker/register/complete of %s, completed already", st.RegistrationID),
				want: one(409, ""), immediate: true}, nil)
	})
}

// rotated remembers the key a rotation replaced and the challenge it spent.
func (h *hostile) rotated(oldKeyHash, challenge string) {
	if len(h.oldKeys) < 8 {
		h.oldKeys = append(h.oldKeys, oldKeyHash)
	}
	if len(h.used) < 8 {
		h.used = append(h.used, challenge)
	}
}

// withhold keeps one of a batch of deposit actions unsigned, to replay it once expired.
func (h *hostile) withhold(xs []machine.SignActionDTO) []machine.SignActionDTO {
	a := h.a
	s := a.s
	// Only an action the actor has not handled yet: a re-accepted deposit answers the
	// action already pending, which may have been signed.
	fresh := slices.DeleteFunc(slices.Clone(xs), func(x machine.SignActionDTO) bool { return a.decided[x.ID] || h.withheld[x.ID] })
	if len(fresh) == 0 || a.rng.IntN(3) != 0 {
		return xs
	}
	x := fresh[a.rng.IntN(len(fresh))]
	h.withheld[x.ID] = true
	exp := time.Time(x.ExpiresAt)
	// Before it expires, a signature of the wrong length is 400 and the action stays.
	s.after(a.uniform(100*time.Millisecond, 20*time.Second), func() {
		if s.now.Before(exp.Add(-5 * time.Second)) {
			h.send(machine.ExecuteActions{Req: h.req(), Entries: []machine.SignedAction{{ActionID: x.ID, Signature: make([]byte, 63)}}},
				&expectation{class: covAdvBadInput, what: fmt.Sprintf("POST /tx/execute of %s's pending action %s with a 63-byte signature", a.party, x.ID),
					want: one(400, ""), immediate: true}, nil)
		}
	})
	// Once expired (and while the desk remembers it, a minute), it is 410.
	s.at(exp.Add(a.uniform(2*time.Second, 45*time.Second)), func() {
		h.send(machine.ExecuteActions{Req: h.req(), Entries: []machine.SignedAction{{ActionID: x.ID, Signature: ed25519.Sign(a.priv, x.Hash)}}},
			&expectation{class: covAdvReplayExpired, what: fmt.Sprintf("POST /tx/execute of %s's action %s, expired unsigned at %s", a.party, x.ID, exp.Format(time.RFC3339Nano)),
				want: one(410, ""), immediate: true}, nil)
	})
	// Between its expiry and the Tick that ends it (the timer fires late): the execute is
	// 410 already, and /tx/pending no longer lists it (the model judges the read).
	if late := s.mix.TickLate; late > 0 {
		s.at(exp.Add(time.Duration(a.rng.Int64N(int64(late)))), func() {
			h.send(machine.ExecuteActions{Req: h.req(), Entries: []machine.SignedAction{{ActionID: x.ID, Signature: ed25519.Sign(a.priv, x.Hash)}}},
				&expectation{class: covAdvReplayExpired, what: fmt.Sprintf("POST /tx/execute of %s's action %s, expired unsigned at %s, before its Tick", a.party, x.ID, exp.Format(time.RFC3339Nano)),
					want: one(410, ""), immediate: true, refine: func(e *expectation) *expectation {
						// On arrival: is the expired action still in the desk's queue (its
						// Tick not applied yet)? That is the window this probe is for.
						if y := s.desk.Actions[x.ID]; y != nil && !y.ExpiresAt.After(s.now) {
							s.cov.hit(covAdvExpiredBeforeTick)
						}
						return e
					}}, nil)
			a.read(a.keyHash, machine.QTxPending{}, func(machine.Reply) {})
		})
	}
	return slices.DeleteFunc(slices.Clone(xs), func(y machine.SignActionDTO) bool { return y.ID == x.ID })
}

// withholdQuote keeps a fresh quote's actions unsigned now and then and deletes the quote
// soon after: its actions are cancelled with it, and executed after that each is 409 while
// the desk remembers it (until its own expiry, the quote's validUntil).
func (h *hostile) withholdQuote(q machine.QuoteWithActionsDTO) bool {
	a := h.a
	if len(q.Actions) == 0 || a.rng.IntN(10) != 0 {
		return false
	}
	for _, x := range q.Actions {
		h.withheld[x.ID] = true
	}
	if len(h.quoteActions) >= 64 {
		clear(h.quoteActions)
	}
	h.quoteActions[q.QuoteID] = q.Actions
	a.s.after(a.uniform(10*time.Millisecond, 2*time.Second), func() { a.deleteQuote(q.RfqID, q.QuoteID) })
	return true
}

// cancelledActions replays an action of a withheld quote its maker deleted.
func (h *hostile) cancelledActions(quoteID string) {
	a := h.a
	s := a.s
	xs := h.quoteActions[quoteID]
	delete(h.quoteActions, quoteID)
	if len(xs) == 0 {
		return
	}
	x := xs[a.rng.IntN(len(xs))]
	at := s.now.Add(a.uniform(10*time.Millisecond, 3*time.Second))
	if !at.Before(time.Time(x.ExpiresAt).Add(-5 * time.Second)) {
		return
	}
	s.at(at, func() {
		h.send(machine.ExecuteActions{Req: h.req(), Entries: []machine.SignedAction{{ActionID: x.ID, Signature: ed25519.Sign(a.priv, x.Hash)}}},
			&expectation{class: covAdvReplayCancelled, what: fmt.Sprintf("POST /tx/execute of %s's action %s of quote %s, which it deleted unsigned", a.party, x.ID, quoteID),
				want: one(409, ""), immediate: true}, nil)
	})
}

// executed: an action the actor executed alone (singular form, 200) is executed again
// before its expiry, while the desk remembers it: 409.
func (h *hostile) executed(x machine.SignedAction, expires time.Time) {
	a := h.a
	s := a.s
	at := s.now.Add(a.uniform(100*time.Millisecond, 30*time.Second))
	if !at.Before(expires.Add(-5 * time.Second)) {
		return
	}
	s.at(at, func() {
		h.send(machine.ExecuteActions{Req: h.req(), Entries: []machine.SignedAction{x}},
			&expectation{class: covAdvReplayExecuted, what: fmt.Sprintf("POST /tx/execute of %s's action %s, executed already", a.party, x.ActionID),
				want: one(409, ""), immediate: true}, nil)
	})
}

// accepted: the taker's accept answered 202. At once, before it signs, it cancels the RFQ
// (409: a settlement is in flight; the trade cannot settle before the taker's signatures)
// and later accepts the same quote again (409 while the RFQ is retained: in flight,
// filled, or the quote revoked by a failed settlement).
func (h *hostile) accepted(rfqID, quoteID, tradeID string) {
	a := h.a
	s := a.s
	if a.rng.IntN(3) == 0 {
		h.send(machine.CancelRFQ{Req: h.req(), RFQID: rfqID}, &expectation{class: covAdvCancelSettling,
			what: fmt.Sprintf("DELETE /rfq/%s by its taker %s while its trade %s settles", rfqID, a.party, tradeID), want: one(409, ""), immediate: true,
			refine: func(e *expectation) *expectation {
				if !s.failedTrades[tradeID] {
					return e
				}
				// The trade failed before the cancel arrived (a fee allocation the ledger
				// refused): the RFQ stays open until its deadline, so the cancel succeeds,
				// or the RFQ expired meanwhile.
				w := *e
				w.want, w.immediate = []want{{204, ""}, {404, ""}}, false
				w.why = "trade.failed was sent before the cancel arrived: the RFQ is open (204) or expired (404)"
				return &w
			}}, nil)
	}
	if a.rng.IntN(3) == 0 {
		s.after(a.uniform(100*time.Millisecond, time.Minute), func() {
			h.send(machine.AcceptQuote{Req: h.req(), QuoteID: quoteID}, &expectation{class: covAdvAcceptTwice,
				what: fmt.Sprintf("POST /quote/%s/accept by %s, accepted already", quoteID, a.party), want: one(409, ""), immediate: true}, nil)
		})
	}
}

// cancelled: the taker cancelled its RFQ (204); cancelling again is 404 (closed, or gone).
func (h *hostile) cancelled(rfqID string) {
	h.again(func() machine.Input { return machine.CancelRFQ{Req: h.req(), RFQID: rfqID} }, covAdvCancelTwice,
		fmt.Sprintf("DELETE /rfq/%s by its taker %s, cancelled already", rfqID, h.a.party))
}

// deleted: the maker deleted its quote (204); deleting again is 404, and executing an
// action of it that it withheld is 409.
func (h *hostile) deleted(quoteID string) {
	h.cancelledActions(quoteID)
	h.again(func() machine.Input { return machine.DeleteQuote{Req: h.req(), QuoteID: quoteID} }, covAdvDeleteTwice,
		fmt.Sprintf("DELETE /maker/quotes/%s by its maker %s, deleted already", quoteID, h.a.party))
}

// closed: the maker saw an RFQ it is invited to close (rfq.closed or rfq.expired); a quote
// on it is 404.
func (h *hostile) closed(rfqID string) {
	h.again(func() machine.Input { return machine.SubmitQuote{Req: h.req(), RFQID: rfqID, Price: money.FromInt(1)} }, covAdvQuoteClosed,
		fmt.Sprintf("POST /maker/quotes by %s on RFQ %s, which it saw close", h.a.party, rfqID))
	h.declineClosed(rfqID)
}

// again sends, a little later and now and then, a command whose answer is 404; mk makes
// it when it leaves (with the actor's key then).
func (h *hostile) again(mk func() machine.Input, class, what string) {
	a := h.a
	if a.s.liveness || a.rng.IntN(3) != 0 {
		return
	}
	a.s.after(a.uniform(10*time.Millisecond, 20*time.Second), func() {
		h.send(mk(), &expectation{class: class, what: what, want: one(404, ""), immediate: true}, nil)
	})
}

// ---- Helpers ----

// regSigs signs a registration's topology hashes.
func regSigs(priv ed25519.PrivateKey, st machine.RegisterStartDTO) [][]byte {
	sigs := make([][]byte, len(st.Topology))
	for i, t := range st.Topology {
		sigs[i] = ed25519.Sign(priv, t.Hash)
	}
	return sigs
}
