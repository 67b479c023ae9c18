package sim

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// role is what an actor does.
type role int

const (
	roleMaker role = iota // registers, funds itself, streams, quotes
	roleTaker             // registers, funds itself, streams, asks for quotes and accepts
	roleHouse             // the desk-signed house taker
)

// regPhase is where an actor's self-registration stands.
type regPhase int

const (
	regNone regPhase = iota
	regStarting
	regSigning
	regCompleting
	regDone
)

// maxAcked bounds each actor's list of acknowledged writes awaiting a crash check.
const maxAckedWrites = 4096

// request is one call of an actor to the desk, like an HTTP request: it is answered, or
// fails when the desk process dies under it.
type request struct {
	a    *actor
	seq  uint64 // the actor's request order: crashed() fails requests in this order
	dead bool
	done bool
	cb   func(machine.Reply)
}

// lostConnection is what a client sees when the desk died under its request.
var lostConnection = machine.Reply{Status: 599, Err: &machine.APIError{Status: 599, Message: "connection lost"}}

// deliver hands a reply to the actor (once, and only if the request is still alive).
func (r *request) deliver(rep machine.Reply) {
	if r.dead || r.done {
		return
	}
	r.done = true
	delete(r.a.inflight, r)
	s := r.a.s
	if rep.Seq > s.maxAcked {
		s.maxAcked = rep.Seq
	}
	if rep.Seq != 0 {
		s.checkReply(rep)
	}
	s.harvest(r.a, rep.Body, rep.Seq == 0)
	r.cb(rep)
}

// ackedWrite is a write whose success reply an actor received.
type ackedWrite struct {
	kind string // quote, rfq, trade, registration
	id   string
}

// actor is a simulated client with its own randomness and habits.
type actor struct {
	s    *Sim
	idx  int
	name string
	role role
	rng  *rand.Rand

	priv ed25519.PrivateKey
	pub  ed25519.PublicKey

	key, keyHash string
	candidates   []string // keys of a register/complete or rotate whose answer was lost
	party, hint  string
	reg          regPhase
	socket       uint64
	cod          bool        // opens its streams with ?cancelOnDisconnect=true (cancelondisconnect.go)
	mmp          *mmpPlan    // its maker protection, nil when it sets none (protection.go)
	resume       resumeState // its stream's numbering, for ?since= (resume.go)
	inflight     map[*request]bool
	nextReq      uint64 // numbers the actor's requests
	faucetAt     time.Time
	regSent      time.Time // when its registration started
	adv          *hostile  // the adversarial side of a hostile actor, nil for an honest one

	// habits
	pPrompt, pLate, pPartial float64 // signing: promptly, late, partly; never is the rest
	pQuote                   float64
	spreadBps                int
	// streamsQuotes: as taker, the actor picks from the quotes its stream announced and
	// reads GET /rfq/mine only when the stream told it nothing new; otherwise it reads
	// GET /rfq/mine at every look.
	streamsQuotes bool

	invites  map[string]machine.RfqDTO
	myQuote  map[string]string // rfq → latest acknowledged quote id
	decided  map[string]bool   // actions already handled
	mine     map[string]*takerRFQ
	acceptAt map[string]time.Time
	acked    []ackedWrite

	// Idempotency-Key writes (idempotency.go): their generator and the last key number.
	idemRng  *rand.Rand
	idemNext int
	// tk is its side of the stream tickets (streamticket.go).
	tk ticketState
}

// takerRFQ is one of a taker's RFQs.
type takerRFQ struct {
	dto       machine.RfqDTO
	accepting bool
	done      bool
	// looking is set while a consider is scheduled or reading: a quote.created then
	// needs no consider of its own.
	looking bool
	// quotes are the live quotes the stream announced (quote.created as taker), dropped
	// on a quote.status that ends them or a refused accept; oldest first.
	quotes []machine.QuoteDTO
	// poll makes a streaming taker's next look read GET /rfq/mine: the stream announced
	// nothing since its last look, and may have missed something.
	poll bool
}

func newActor(s *Sim, idx int, r role, seed uint64) *actor {
	rng := rand.New(rand.NewPCG(seed, uint64(idx)))
	var ks [32]byte
	for i := range ks {
		ks[i] = byte(rng.UintN(256))
	}
	priv := ed25519.NewKeyFromSeed(ks[:])
	kind := "maker"
	if r == roleTaker {
		kind = "taker"
	}
	a := &actor{s: s, idx: idx, name: fmt.Sprintf("Sim %s %d", kind, idx), role: r, rng: rng,
		priv: priv, pub: priv.Public().(ed25519.PublicKey), inflight: map[*request]bool{},
		invites: map[string]machine.RfqDTO{}, myQuote: map[string]string{}, decided: map[string]bool{},
		mine: map[string]*takerRFQ{}, acceptAt: map[string]time.Time{}}
	// Habits: most sign promptly; some are late, partial or silent (swarm per actor).
	a.pPrompt = 0.70 + 0.28*rng.Float64()
	a.pLate = (1 - a.pPrompt) * rng.Float64()
	a.pPartial = (1 - a.pPrompt - a.pLate) * rng.Float64()
	a.pQuote = 0.6 + 0.4*rng.Float64()
	a.spreadBps = 5 + rng.IntN(60)
	a.streamsQuotes = rng.IntN(4) != 0
	a.cod = drawCancelOnDisconnect(r, seed, idx)
	a.mmp = drawProtection(r, seed, idx)
	a.resume = newResumeState(seed, idx)
	return a
}

func newHouse(s *Sim, idx int, seed uint64) *actor {
	a := newActor(s, idx, roleHouse, seed)
	a.name = "house-taker"
	a.key, a.keyHash = houseKey, hashKey(houseKey)
	a.hint = "house-taker"
	for _, h := range s.cfg.House {
		if h.Hint == "house-taker" {
			a.party = h.PartyID
		}
	}
	a.reg = regDone
	s.byParty[a.party] = a
	return a
}

// uniform returns a duration uniform in [lo, hi).
func (a *actor) uniform(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(a.rng.Int64N(int64(hi-lo)))
}

// send issues a command; cb gets the reply or lostConnection.
func (a *actor) send(in machine.Input, cb func(machine.Reply)) {
	if a.keyedSend(in, cb) { // idempotency.go
		return
	}
	a.sendRaw(in, cb)
}

// sendRaw issues a command as it is; cb gets the reply or lostConnection.
func (a *actor) sendRaw(in machine.Input, cb func(machine.Reply)) {
	a.issue(cb, func(r *request) {
		seq := a.s.input(in)
		a.s.waiting[seq] = r
	})
}

// issue puts a request in flight with cb for its answer: after the network's latency it
// arrives, unless a crash failed it on the way.
func (a *actor) issue(cb func(machine.Reply), arrive func(r *request)) {
	a.nextReq++
	r := &request{a: a, seq: a.nextReq, cb: cb}
	a.inflight[r] = true
	a.s.after(a.s.netLatency(), func() {
		if !r.dead {
			arrive(r)
		}
	})
}

// read issues a query with a given key hash; its answer waits, like the loop's, for every
// input it may reflect to be durable.
func (a *actor) read(keyHash string, q machine.Query, cb func(machine.Reply)) {
	s := a.s
	a.issue(cb, func(r *request) {
		party, _ := s.desk.Caller(keyHash)
		switch q.(type) {
		case machine.QBalances:
			q = machine.QBalances{Holdings: s.ledger.Holdings(party)}
		case machine.QIncoming:
			q = machine.QIncoming{Transfers: s.ledger.Incoming(party)}
		}
		rep := machine.Read(s.desk, s.now, keyHash, q)
		s.beginRead(readByActor, s.now, keyHash, q, rep)
		s.checkRead(party, rep)
		s.judgeRead(s.now, keyHash, q, rep)
		s.endRead()
		s.auditRead(s.now, keyHash)
		send := func() { s.after(s.netLatency(), func() { r.deliver(rep) }) }
		if len(s.held) == 0 {
			send()
		} else {
			s.held[len(s.held)-1].reads = append(s.held[len(s.held)-1].reads, send)
		}
	})
}

// notify sends a transport notice (socket opened or closed), which has no reply.
func (a *actor) notify(in machine.Input, still func() bool) {
	s := a.s
	e := s.epoch
	s.after(s.netLatency(), func() {
		if e == s.epoch && still() {
			s.input(in)
		}
	})
}

// crashed: the desk died; every request in flight fails, the stream is gone.
func (a *actor) crashed() {
	// In request order, never map order: each failure draws a latency from the seeded
	// generator, so the order decides the rest of the run.
	reqs := make([]*request, 0, len(a.inflight))
	for r := range a.inflight {
		reqs = append(reqs, r)
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].seq < reqs[j].seq })
	for _, r := range reqs {
		r.dead = true
		cb := r.cb
		a.s.after(a.s.netLatency(), func() { cb(lostConnection) })
	}
	a.inflight = map[*request]bool{}
	a.socket = 0
}

// ack remembers an acknowledged write for the next crash check.
func (a *actor) ack(kind, id string) {
	if len(a.acked) >= maxAckedWrites {
		a.acked = append(a.acked[:0], a.acked[maxAckedWrites/2:]...)
	}
	a.acked = append(a.acked, ackedWrite{kind: kind, id: id})
}

// wakeSoon schedules the actor's next wake-up.
func (a *actor) wakeSoon() {
	a.s.after(a.uniform(200*time.Millisecond, 4*time.Second), a.wake)
}

// wake is the actor's heartbeat: it decides what to do next from what it knows.
func (a *actor) wake() {
	s := a.s
	defer a.wakeSoon()
	if s.liveness {
		if a.reg == regDone && a.rng.IntN(8) == 0 {
			a.pollPending()
			a.cancelFarRFQs()
		}
		return
	}
	if a.reg == regNone {
		a.register()
		return
	}
	if a.reg != regDone {
		return
	}
	if a.adv != nil {
		a.adv.attack()
	}
	a.protectionWake()
	if a.role != roleHouse && !s.now.Before(a.faucetAt) {
		// Mostly after the cooldown (10 minutes); one draw in four during it, to be told
		// how long is left.
		a.faucetAt = s.now.Add(a.uniform(11*time.Minute, 20*time.Minute))
		if a.rng.IntN(4) == 0 {
			a.faucetAt = s.now.Add(a.uniform(time.Minute, 9*time.Minute))
		}
		a.fund()
	}
	switch {
	case a.socket == 0:
		a.connect()
	case s.frng.Float64() < s.mix.Disconnect:
		s.cov.hit(covStreamDrop)
		a.disconnect()
	}
	if a.role == roleMaker && a.rng.IntN(400) == 0 {
		a.rotate()
	}
	if a.rng.IntN(6) == 0 {
		a.pollPending()
	}
	// A maker on a stream polls its incoming RFQs only now and then, as a fallback (about
	// every 80 simulated seconds).
	if a.role == roleMaker && a.rng.IntN(40) == 0 {
		a.pollIncomingRFQs()
	}
	a.boundaryRead()
	a.readScorecardSoon(30)
}

// ---- Registration and keys ----

func (a *actor) register() {
	a.reg = regStarting
	a.regSent = a.s.now
	a.send(machine.RegisterStart{DisplayName: a.name, PublicKey: a.pub}, func(rep machine.Reply) {
		if rep.Err != nil {
			a.reg = regNone
			return
		}
		st := rep.Body.(machine.RegisterStartDTO)
		a.ack("registration", st.RegistrationID)
		a.reg = regSigning
		delay := a.uniform(100*time.Millisecond, 3*time.Second)
		if a.rng.IntN(40) == 0 {
			delay = a.s.cfg.RegistrationLifetime + a.uniform(time.Second, time.Minute) // too late: 410
		}
		a.s.after(delay, func() { a.complete(st) })
	})
}

func (a *actor) complete(st machine.RegisterStartDTO) {
	if a.reg != regSigning {
		return
	}
	a.reg = regCompleting
	sigs := regSigs(a.priv, st)
	key := a.newKey()
	a.candidates = append(a.candidates, key)
	a.send(machine.RegisterComplete{RegistrationID: st.RegistrationID, Signatures: sigs, NewKeyHash: hashKey(key)}, func(rep machine.Reply) {
		switch {
		case rep.Err == nil:
			done := rep.Body.(machine.RegisterCompleteDTO)
			a.registered(key, done.PartyID, done.Hint)
			if a.adv != nil {
				a.adv.registered(st, a.regSent, sigs)
			}
		case rep.Status == 410:
			a.s.cov.hit(covRegistrationExpired)
			a.reg, a.candidates = regNone, nil
		case rep.Status == 599:
			a.resolveKeys(func() {})
		default:
			a.reg, a.candidates = regNone, nil
		}
	})
}

// newKey draws an API key as the transport would (from the actor's seed here).
func (a *actor) newKey() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(a.rng.UintN(256))
	}
	return "mk_" + hex.EncodeToString(b[:])
}

func (a *actor) registered(key, party, hint string) {
	s := a.s
	a.key, a.keyHash, a.party, a.hint, a.reg, a.candidates = key, hashKey(key), party, hint, regDone, nil
	s.byParty[party] = a
	if a.role == roleMaker {
		s.makerHints[hint] = true
	}
	s.stats.Registrations++
}

// resolveKeys finds out, as a client after a lost answer would (GET /maker/status with each
// key it holds), which of its keys works.
func (a *actor) resolveKeys(then func()) {
	keys := append([]string(nil), a.candidates...)
	var try func(i int)
	try = func(i int) {
		if i >= len(keys) {
			if a.reg == regCompleting {
				a.reg, a.candidates = regNone, nil
			}
			a.candidates = nil
			then()
			return
		}
		a.read(hashKey(keys[i]), machine.QMakerStatus{}, func(rep machine.Reply) {
			if rep.Err != nil {
				try(i + 1)
				return
			}
			st := rep.Body.(machine.MakerStatusDTO)
			if a.reg == regDone {
				a.key, a.keyHash, a.candidates = keys[i], hashKey(keys[i]), nil
				then()
				return
			}
			a.registered(keys[i], st.PartyID, st.Hint)
			then()
		})
	}
	try(0)
}

func (a *actor) rotate() {
	challenge := fmt.Sprintf("challenge-%d-%x", a.idx, a.rng.Uint64())
	a.ticketBeforeRotate()
	a.send(machine.ChallengeRequest{PartyID: a.party, Challenge: challenge}, func(rep machine.Reply) {
		if rep.Err != nil {
			return
		}
		c := rep.Body.(machine.ChallengeDTO).Challenge
		key := a.newKey()
		a.candidates = append(a.candidates, key)
		sig := ed25519.Sign(a.priv, []byte(c))
		a.send(machine.RotateKey{PartyID: a.party, Challenge: c, Signature: sig, NewKeyHash: hashKey(key)}, func(rep machine.Reply) {
			// Each outcome settles only this rotation's key: another rotation may be in
			// flight, and its key must stay a candidate until its own answer (or a crash
			// check) settles it.
			switch {
			case rep.Err == nil:
				if a.adv != nil {
					a.adv.rotated(a.keyHash, c)
				}
				a.key, a.keyHash = key, hashKey(key)
				a.candidates = without(a.candidates, key)
				a.s.cov.hit(covKeyRotated)
				a.s.stats.Rotations++
				a.ticketAfterRotate()
			case rep.Status == 599:
				a.candidates = append(a.candidates, a.key)
				a.resolveKeys(func() {})
			default:
				a.candidates = without(a.candidates, key)
			}
		})
	})
}

// without returns keys less every occurrence of key.
func without(keys []string, key string) []string {
	out := keys[:0:0]
	for _, k := range keys {
		if k != key {
			out = append(out, k)
		}
	}
	return out
}

// ---- Stream ----

func (a *actor) connect() {
	s := a.s
	s.nextSocket++
	id := s.nextSocket
	a.socket = id
	in := machine.SocketOpened{Socket: id, KeyHash: a.keyHash, CancelOnDisconnect: a.cod}
	a.resumeRequest(&in)
	if a.ticketConnect(in) { // streamticket.go
		return
	}
	a.notify(in, func() bool { return a.socket == id })
}

func (a *actor) disconnect() {
	id := a.socket
	a.socket = 0
	a.notify(machine.SocketClosed{Socket: id}, func() bool { return true })
}

// socketClosed: the desk closed the stream (4401 after a rotation, 1012 after resync).
func (a *actor) socketClosed(code int) {
	if code == machine.CloseUnauthorized {
		a.s.cov.hit(covRotatedSocketClosed)
	}
	a.socket = 0
}

// onEvent reacts to one stream frame addressed to the actor's party.
func (a *actor) onEvent(e machine.Event) {
	s := a.s
	a.trackSeq(e)
	s.harvest(a, e.Payload, false)
	switch p := e.Payload.(type) {
	case machine.RfqDTO:
		if e.Type == machine.EvRfqCreated && a.role == roleMaker && p.Open {
			a.invites[p.RfqID] = p
			if !s.liveness && a.rng.Float64() < a.pQuote {
				s.after(a.uniform(50*time.Millisecond, 3*time.Second), func() { a.quote(p.RfqID) })
			} else {
				a.declineSoon(p.RfqID, 3, 50*time.Millisecond, 3*time.Second) // one it will not quote
			}
		}
	case machine.RfqIDPayload:
		if _, invited := a.invites[p.RfqID]; invited && a.adv != nil && a.role == roleMaker {
			a.adv.closed(p.RfqID)
		}
		delete(a.invites, p.RfqID)
		delete(a.myQuote, p.RfqID)
		if m := a.mine[p.RfqID]; m != nil {
			m.done = true
			delete(a.mine, p.RfqID)
		}
	case machine.SignActionDTO:
		if e.Type == machine.EvSignRequested && !a.decided[p.ID] {
			a.signActions([]machine.SignActionDTO{p})
		}
	case machine.QuoteAnchoredPayload:
		if s.liveness || a.myQuote[p.RfqID] != p.QuoteID {
			return
		}
		switch n := a.rng.IntN(20); {
		case n < 3:
			s.after(a.uniform(200*time.Millisecond, 8*time.Second), func() { a.quote(p.RfqID) })
		case n < 4:
			s.after(a.uniform(200*time.Millisecond, 8*time.Second), func() { a.deleteQuote(p.RfqID, p.QuoteID) })
		case n < 5:
			a.massCancelSoon(1, 200*time.Millisecond, 8*time.Second)
		case n < 6:
			a.declineSoon(p.RfqID, 1, 200*time.Millisecond, 8*time.Second) // after quoting
		}
	case machine.TradeStepPayload:
		a.massCancelSoon(8, 10*time.Millisecond, time.Second) // while its trade settles
		// A decline while its trade settles: its settling quote stays.
		a.declineSoon(p.RfqID, 8, 10*time.Millisecond, time.Second)
	case machine.QuoteDTO:
		// A taker hears of each quote that lands on its RFQ (quote.created) and looks at
		// its RFQs then, as a streaming client would, rather than only polling.
		m := a.mine[p.RfqID]
		if e.Type != machine.EvQuoteCreated || m == nil {
			return
		}
		m.quotes = append(withoutQuote(m.quotes, p.QuoteID), p)
		m.poll = false
		if !m.looking && !s.liveness {
			a.considerAfter(m, a.uniform(100*time.Millisecond, 2*time.Second))
		}
	case machine.QuoteStatusPayload:
		if m := a.mine[p.RfqID]; m != nil && p.Status != "pending" {
			m.quotes = withoutQuote(m.quotes, p.QuoteID)
		}
	case machine.TradeDTO:
		if e.Type == machine.EvTradeSettled {
			if at, ok := a.acceptAt[p.TradeID]; ok {
				s.stats.latency(s.now.Sub(at))
				delete(a.acceptAt, p.TradeID)
			}
		}
	case machine.MakerProtectionPayload:
		a.protectionTripped(p)
	case machine.TradeFailedPayload:
		delete(a.acceptAt, p.TradeID)
		if m := a.mine[p.RfqID]; m != nil {
			m.accepting = false
			a.considerAfter(m, a.uniform(300*time.Millisecond, 2*time.Second))
		}
	}
	if len(a.decided) > 4096 {
		a.decided = map[string]bool{}
	}
}

// ---- Funding ----

func (a *actor) fund() {
	a.send(machine.FaucetDraw{Req: a.req()}, func(rep machine.Reply) {
		if rep.Err != nil {
			return
		}
		if ans, ok := rep.Body.(machine.FaucetAnswer); ok && len(ans.Sent) == 0 && ans.RetryAfterSeconds > 0 {
			a.s.cov.hit(covFaucetCooldown)
		}
		// What the faucet says now (the model judges the cooldown it reports).
		a.read(a.keyHash, machine.QFaucetInfo{}, func(rep machine.Reply) {
			if info, ok := rep.Body.(machine.FaucetInfoDTO); ok && info.RetryAfterSeconds > 0 {
				a.s.cov.hit(covFaucetInfoCooldown)
			}
		})
		a.s.after(a.uniform(time.Second, 4*time.Second), a.acceptDeposits)
	})
}

func (a *actor) acceptDeposits() {
	a.read(a.keyHash, machine.QIncoming{}, func(rep machine.Reply) {
		if rep.Err != nil {
			return
		}
		for _, t := range rep.Body.(machine.IncomingDTO).Transfers {
			a.send(machine.AcceptIncoming{Req: a.req(), CID: t.CID}, func(rep machine.Reply) {
				if rep.Err == nil {
					xs := rep.Body.(machine.ActionsDTO).Actions
					if a.adv != nil {
						xs = a.adv.withhold(xs)
					}
					a.signActions(xs)
				}
			})
		}
	})
}

func (a *actor) req() machine.Req { return machine.Req{KeyHash: a.keyHash} }

// ---- Signing ----

// signActions handles actions per the actor's habits: promptly, late, partly or never.
func (a *actor) signActions(xs []machine.SignActionDTO) {
	var fresh []machine.SignActionDTO
	for _, x := range xs {
		if !a.decided[x.ID] && !a.withheld(x.ID) {
			a.decided[x.ID] = true
			fresh = append(fresh, x)
		}
	}
	if len(fresh) == 0 || a.role == roleHouse {
		return
	}
	s := a.s
	u := a.rng.Float64()
	switch {
	case u < a.pPrompt:
		s.after(a.uniform(20*time.Millisecond, 800*time.Millisecond), func() { a.execute(fresh) })
	case u < a.pPrompt+a.pLate:
		s.after(a.uniform(5*time.Second, 90*time.Second), func() { a.execute(fresh) })
	case u < a.pPrompt+a.pLate+a.pPartial && len(fresh) > 1:
		s.cov.hit(covPartialSign)
		part := fresh[:1+a.rng.IntN(len(fresh)-1)]
		s.after(a.uniform(20*time.Millisecond, 800*time.Millisecond), func() { a.execute(part) })
	default:
		s.stats.Unsigned++
	}
}

// execute signs and executes actions, in one batch or one call each.
func (a *actor) execute(xs []machine.SignActionDTO) {
	a.maybeSpendOutside(xs) // coinsel.go
	entries := make([]machine.SignedAction, len(xs))
	for i, x := range xs {
		entries[i] = machine.SignedAction{ActionID: x.ID, Signature: ed25519.Sign(a.priv, x.Hash)}
	}
	if padded, size := a.boundaryBatch(entries); size > 0 {
		a.send(machine.ExecuteActions{Req: a.req(), Entries: padded, Batch: true}, func(rep machine.Reply) { a.s.checkBatch(size, rep) })
		return
	}
	if len(entries) > 1 || a.rng.IntN(2) == 0 {
		a.send(machine.ExecuteActions{Req: a.req(), Entries: entries, Batch: true}, func(machine.Reply) {})
		return
	}
	a.send(machine.ExecuteActions{Req: a.req(), Entries: entries}, func(rep machine.Reply) {
		if a.adv != nil && rep.Status == 200 {
			a.adv.executed(entries[0], time.Time(xs[0].ExpiresAt))
		}
	})
}

// withheld says whether a hostile actor keeps the action unsigned on purpose.
func (a *actor) withheld(id string) bool { return a.adv != nil && a.adv.withheld[id] }

// pollPending is the recovery path: GET /tx/pending, then handle what was not handled.
func (a *actor) pollPending() {
	if a.role == roleHouse {
		return
	}
	a.read(a.keyHash, machine.QTxPending{}, func(rep machine.Reply) {
		if rep.Err == nil {
			a.signActions(rep.Body.(machine.ActionsDTO).Actions)
		}
	})
}

// ---- Maker ----

// refPrice is the reference price of a pair: the ratio of the catalog's USD prices, or 1
// for a pair the catalog cannot price. Each pair is divided once per run and kept (a
// maker prices every quote, and the division was 2% of a run).
func (s *Sim) refPrice(base, quote string) money.Decimal {
	pair := [2]string{base, quote}
	if p, ok := s.refPrices[pair]; ok {
		return p
	}
	usd := map[string]money.Decimal{}
	for _, in := range catalog() {
		usd[in.Symbol] = in.USDPrice
	}
	p, err := usd[base].QuoHalfEven(usd[quote])
	if err != nil {
		p = money.FromInt(1)
	}
	if s.refPrices == nil {
		s.refPrices = map[[2]string]money.Decimal{}
	}
	s.refPrices[pair] = p
	return p
}

// price draws the maker's price around the reference: its spread and some noise.
func (a *actor) price(r machine.RfqDTO) money.Decimal {
	bps := a.spreadBps + a.rng.IntN(40) - 20
	if r.Direction == machine.Buy { // the maker sells: above the reference
		bps = -bps
	}
	ref := a.s.refPrice(r.Base, r.Quote)
	p, err := ref.MulHalfEven(money.FromInt(int64(10000 - bps))).QuoHalfEven(money.FromInt(10000))
	if err != nil || p.Sign() <= 0 {
		return ref
	}
	return p
}

func (a *actor) quote(rfqID string) {
	s := a.s
	r, ok := a.invites[rfqID]
	if !ok || s.liveness || a.reg != regDone {
		return
	}
	c := machine.SubmitQuote{Req: a.req(), RFQID: rfqID, Price: a.price(r)}
	pk := a.boundaryPrice(&c, r)
	deadline := time.Time(r.Deadline)
	vk := a.boundaryValidity(&c, r)
	switch n := a.rng.IntN(6); {
	case vk != validOrdinary:
	case n == 0, n == 1:
	case n == 2:
		t := deadline // validUntil == deadline is allowed
		c.ValidUntil = &t
	case n == 3:
		t := deadline.Add(time.Second) // past the deadline: 409
		c.ValidUntil = &t
	default:
		t := s.now.Add(a.uniform(2*time.Second, 60*time.Second)).Truncate(time.Millisecond)
		c.ValidUntil = &t
	}
	a.send(c, func(rep machine.Reply) {
		a.quoteAnswered(rep)
		s.noteQuoteFundsRefused(a.party, r, c.Price, rep) // coinsel.go
		s.checkQuoteAmounts(c, r, pk, rep)
		// A rotation of the maker's key that raced this submission makes it 401 (the key
		// check comes first; the judge verifies the key was unknown): nothing to assert.
		if rep.Status == 401 && (c.KeyHash != a.keyHash || len(a.candidates) > 0) {
			vk = validOrdinary
		}
		s.checkValidity(c, vk, rep)
		if rep.Err != nil {
			return
		}
		q := rep.Body.(machine.QuoteWithActionsDTO)
		a.myQuote[rfqID] = q.QuoteID
		a.ack("quote", q.QuoteID)
		if a.adv != nil && a.adv.withholdQuote(q) {
			return
		}
		a.signActions(q.Actions)
	})
}

func (a *actor) deleteQuote(rfqID, quoteID string) {
	if a.s.liveness || a.myQuote[rfqID] != quoteID {
		return
	}
	a.send(machine.DeleteQuote{Req: a.req(), QuoteID: quoteID}, func(rep machine.Reply) {
		if rep.Err == nil {
			a.s.cov.hit(covQuoteDeleted)
			if a.adv != nil {
				a.adv.deleted(quoteID)
			}
		}
	})
}

// pollIncomingRFQs is the REST alternative to the stream: quote what has no live quote.
func (a *actor) pollIncomingRFQs() {
	a.read(a.keyHash, machine.QRfqIncoming{}, func(rep machine.Reply) {
		if rep.Err != nil || a.s.liveness {
			return
		}
		for _, r := range rep.Body.([]machine.IncomingRfqDTO) {
			if r.Open && (r.MyQuote == nil || r.MyQuote.Status != "pending") && a.rng.IntN(4) == 0 {
				a.invites[r.RfqID] = r.RfqDTO
				a.quote(r.RfqID)
			}
		}
	})
}

// ---- Taker ----

// scheduleRFQ is the RFQ arrival process: Poisson at the knobs' rate over all takers.
func (s *Sim) scheduleRFQ() {
	gap := time.Duration(s.rng.ExpFloat64() / s.k.RFQRate * float64(time.Second))
	s.after(gap+time.Microsecond, func() {
		if s.liveness {
			return
		}
		var takers []*actor
		for _, a := range s.actors {
			if a.role != roleMaker && a.reg == regDone {
				takers = append(takers, a)
			}
		}
		if len(takers) > 0 {
			takers[s.rng.IntN(len(takers))].createRFQ()
		}
		s.scheduleRFQ()
	})
}

func (a *actor) createRFQ() {
	s := a.s
	a.read(a.keyHash, machine.QDesk{}, func(rep machine.Reply) {
		if rep.Err != nil || s.liveness {
			return
		}
		var online []string
		for _, h := range rep.Body.(machine.DeskDTO).Makers {
			if s.makerHints[h] {
				online = append(online, h)
			}
		}
		if len(online) == 0 {
			return
		}
		a.rng.Shuffle(len(online), func(i, j int) { online[i], online[j] = online[j], online[i] })
		invited := online[:1+a.rng.IntN(min(5, len(online)))]
		c := machine.CreateRFQ{Req: a.req(), Direction: machine.Sell, TTLSeconds: int64(10 + a.rng.IntN(110)), InvitedMakers: invited}
		if a.rng.IntN(2) == 0 {
			c.Direction = machine.Buy
		}
		switch n := a.rng.IntN(10); {
		case n < 7:
			c.Base, c.Quote, c.Qty = "cbtc", "usdcx", money.MustParse(fmt.Sprintf("0.000%d", 2+a.rng.IntN(8)))
		case n < 9:
			c.Base, c.Quote, c.Qty = "cc", "usdcx", money.FromInt(int64(100+a.rng.IntN(2900)))
		default:
			c.Base, c.Quote, c.Qty = "cbtc", "CC", money.MustParse(fmt.Sprintf("0.000%d", 2+a.rng.IntN(8)))
		}
		tk, ttk := a.boundaryTicket(&c), a.boundaryTTL(&c)
		a.send(c, func(rep machine.Reply) {
			s.checkTicket(c, tk, rep)
			s.checkTTL(c, ttk, rep)
			if rep.Err == nil && ttk == ttlMax {
				// Open for the maximum, it would outlive the liveness phase: its taker
				// cancels it within the minute, busy phase or not.
				id := rep.Body.(machine.RfqDTO).RfqID
				s.after(a.uniform(time.Second, time.Minute), func() { a.cancelRFQAnyway(id) })
			}
			if rep.Err != nil {
				s.stats.RFQsRefused++
				return
			}
			dto := rep.Body.(machine.RfqDTO)
			s.stats.RFQs++
			a.ack("rfq", dto.RfqID)
			m := &takerRFQ{dto: dto}
			a.mine[dto.RfqID] = m
			a.considerAfter(m, a.uniform(1500*time.Millisecond, 8*time.Second))
			if a.rng.IntN(20) == 0 {
				s.after(a.uniform(time.Second, time.Duration(c.TTLSeconds)*time.Second), func() { a.cancelRFQ(dto.RfqID) })
			}
		})
	})
}

// considerAfter schedules a consider of the taker's RFQ.
func (a *actor) considerAfter(m *takerRFQ, d time.Duration) {
	m.looking = true
	a.s.after(d, func() { a.consider(m.dto.RfqID) })
}

// consider reads the taker's RFQs and accepts the best live quote, or looks again later:
// soon after the next quote.created, or after a while in case the stream missed it.
func (a *actor) consider(rfqID string) {
	s := a.s
	m := a.mine[rfqID]
	if m == nil || m.done || m.accepting || s.liveness {
		return
	}
	deadline := time.Time(m.dto.Deadline)
	if !s.now.Before(deadline) {
		delete(a.mine, rfqID)
		return
	}
	if a.streamsQuotes && a.socket != 0 && !m.poll {
		m.looking = false
		if best := a.bestQuote(m.dto.Direction, m.quotes); best != nil {
			s.cov.hit(covAcceptFromStream)
			a.accept(m, best.QuoteID)
			return
		}
		m.poll = true
		if s.now.Add(time.Second).Before(deadline) {
			a.considerAfter(m, a.uniform(4*time.Second, 12*time.Second))
		}
		return
	}
	m.poll = false
	a.read(a.keyHash, machine.QRfqMine{}, func(rep machine.Reply) {
		m.looking = false
		if rep.Err != nil || m.done || m.accepting || s.liveness {
			return
		}
		var best *machine.QuoteDTO
		for _, r := range rep.Body.([]machine.RfqDTO) {
			if r.RfqID == rfqID && r.Open && r.Quotes != nil {
				best = a.bestQuote(r.Direction, *r.Quotes)
			}
		}
		if best == nil {
			if s.now.Add(time.Second).Before(deadline) {
				a.considerAfter(m, a.uniform(4*time.Second, 12*time.Second))
			}
			return
		}
		a.accept(m, best.QuoteID)
	})
}

// bestQuote is the best price among quotes that are live, not settling and valid for at
// least another 100 ms (the first of equal prices), or nil.
func (a *actor) bestQuote(dir machine.Direction, quotes []machine.QuoteDTO) *machine.QuoteDTO {
	var best *machine.QuoteDTO
	for i, q := range quotes {
		if q.Status != "pending" || q.Settling || !time.Time(q.ValidUntil).After(a.s.now.Add(100*time.Millisecond)) {
			continue
		}
		if best == nil || (dir == machine.Sell) == (q.Price.Cmp(best.Price) > 0) {
			best = &quotes[i]
		}
	}
	return best
}

// withoutQuote returns quotes without the one with id (in place).
func withoutQuote(quotes []machine.QuoteDTO, id string) []machine.QuoteDTO {
	out := quotes[:0]
	for _, q := range quotes {
		if q.QuoteID != id {
			out = append(out, q)
		}
	}
	return out
}

func (a *actor) accept(m *takerRFQ, quoteID string) {
	s := a.s
	m.accepting = true
	s.stats.Accepts++
	a.send(machine.AcceptQuote{Req: a.req(), QuoteID: quoteID}, func(rep machine.Reply) {
		if rep.Err != nil {
			m.accepting = false
			m.quotes = withoutQuote(m.quotes, quoteID)
			if rep.Err.Code == machine.CodeInsufficientFunds {
				s.cov.hit(covInsufficientFunds)
			}
			s.acceptRefused(quoteID)
			a.considerAfter(m, a.uniform(500*time.Millisecond, 3*time.Second))
			return
		}
		t := rep.Body.(machine.TradeWithActionsDTO)
		a.acceptAt[t.TradeID] = s.now
		a.ack("trade", t.TradeID)
		if a.adv != nil {
			a.adv.accepted(m.dto.RfqID, quoteID, t.TradeID) // before it signs: see accepted
		}
		a.signActions(t.Actions)
		if a.rng.IntN(10) == 0 {
			s.after(a.uniform(time.Millisecond, time.Second), func() { a.withdraw(t.Base) })
		}
	})
}

func (a *actor) cancelRFQ(rfqID string) {
	m := a.mine[rfqID]
	if m == nil || m.done || a.s.liveness {
		return
	}
	a.send(machine.CancelRFQ{Req: a.req(), RFQID: rfqID}, func(rep machine.Reply) {
		if rep.Err == nil {
			a.s.cov.hit(covRFQCancelled)
			if a.adv != nil {
				a.adv.cancelled(rfqID)
			}
		}
	})
}

// cancelRFQAnyway cancels an RFQ, in the liveness phase too, until it is closed (a
// settlement in flight answers 409: it is tried again later).
func (a *actor) cancelRFQAnyway(rfqID string) {
	a.send(machine.CancelRFQ{Req: a.req(), RFQID: rfqID}, func(rep machine.Reply) {
		switch {
		case rep.Err == nil:
			a.s.cov.hit(covRFQCancelled)
		case rep.Status == 409 || rep.Status == 599 || rep.Status >= 500:
			a.s.after(a.uniform(time.Second, 10*time.Second), func() { a.cancelRFQAnyway(rfqID) })
		}
	})
}

// withdraw tries a withdrawal while a trade settles: blocked (409 RETRY_LATER) in the
// trade's instruments.
func (a *actor) withdraw(symbol string) {
	s := a.s
	var to string
	for _, b := range s.actors {
		if b != a && b.reg == regDone {
			to = b.party
			break
		}
	}
	if to == "" {
		return
	}
	amount := money.MustParse("0.0001")
	if symbol != "cbtc" {
		amount = money.FromInt(1)
	}
	a.send(machine.Withdraw{Req: a.req(), Symbol: symbol, Amount: amount, Receiver: to}, func(rep machine.Reply) {
		switch {
		case rep.Err != nil && rep.Err.Code == machine.CodeRetryLater:
			s.cov.hit(covWithdrawBlocked)
		case rep.Err == nil:
			if a.rng.IntN(2) == 0 {
				a.signActions(rep.Body.(machine.ActionsDTO).Actions)
			} else if a.rng.IntN(2) == 0 {
				// Again while the first awaits its signature: SPEC's 409, which the model
				// judges.
				s.after(a.uniform(time.Second, 5*time.Second), func() { a.withdraw(symbol) })
			}
		}
	})
}
