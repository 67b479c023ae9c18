package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// World is a simulation driven from outside, one step at a time, for state-machine tests:
// the same desk process, ledger, journals, invariants and actors as a Run, but no actor
// acts on its own schedule and no RFQ arrives by itself. The driver chooses each API call
// (Do), how far virtual time advances (Advance), the ledger faults (Fault) and the crashes
// (Crash), checks the invariants between steps (Check) and ends with the liveness phase
// (Finish). Actors still react to what they are told (a registration is completed, a
// created RFQ is considered, an invitation is quoted), but they sign nothing unless told
// to (SignAll, SignSome) or let sign by their habits (AutoSign).
type World struct {
	s      *Sim
	base   Mix          // the seed's mix, restored when a forced fault ends
	till   time.Time    // the end of the forced fault, zero when none
	habits [][3]float64 // each actor's drawn signing habits (prompt, late, partial)
}

// Call is one API call an actor of a World can make.
type Call string

// The calls of a World's actors. A call the actor cannot make now (a maker creating an
// RFQ, an unregistered actor quoting, nothing to pick) does nothing.
const (
	CallRegister    Call = "register"     // start a self-registration (completed on its answer)
	CallFund        Call = "fund"         // faucet draw, then accept the deposits
	CallCreateRFQ   Call = "create-rfq"   // a taker asks online makers for quotes
	CallQuote       Call = "quote"        // a maker quotes an RFQ it was invited to
	CallSignAll     Call = "sign-all"     // sign and execute every pending action
	CallSignSome    Call = "sign-some"    // sign and execute the first of them
	CallSignNone    Call = "sign-none"    // read the pending actions and sign none
	CallAccept      Call = "accept"       // a taker accepts the best live quote of an RFQ
	CallCancelRFQ   Call = "cancel-rfq"   // a taker cancels an RFQ
	CallDeleteQuote Call = "delete-quote" // a maker deletes its latest quote of an RFQ
	CallMassCancel  Call = "mass-cancel"  // a maker revokes all its quotes (DELETE /maker/quotes)
	CallDecline     Call = "decline"      // a maker declines an RFQ it was invited to
	CallWithdraw    Call = "withdraw"     // a small withdrawal to another party
	CallOpenStream  Call = "open-stream"
	CallCloseStream Call = "close-stream"
	CallRotateKey   Call = "rotate-key" // challenge, then rotate the API key (when idle)
	// CallAttack makes the actor hostile (adversary.go) and makes one attack: pick chooses
	// which among those it can make now.
	CallAttack Call = "attack"
)

// AllCalls lists every Call.
func AllCalls() []Call {
	return []Call{CallRegister, CallFund, CallCreateRFQ, CallQuote, CallSignAll, CallSignSome, CallSignNone,
		CallAccept, CallCancelRFQ, CallDeleteQuote, CallMassCancel, CallDecline, CallWithdraw, CallOpenStream, CallCloseStream, CallRotateKey, CallAttack}
}

// FaultCategories are the ledger faults Fault can force.
func FaultCategories() []string {
	return []string{machine.LedgerContention, machine.LedgerUnavailable, machine.LedgerRejected,
		machine.LedgerInternal, machine.LedgerUnknownOutcome}
}

// NewWorld builds a World at genesis with knobs k (the crash rate must be 0: the driver
// crashes the desk). Every actor's signing habit is "never": only SignAll and SignSome sign.
func NewWorld(k Knobs) (*World, error) {
	if k.CrashRate != 0 {
		return nil, fmt.Errorf("a World crashes only when told: crash-rate must be 0, not %g", k.CrashRate)
	}
	s, err := New(k)
	if err != nil {
		return nil, err
	}
	w := &World{s: s, base: s.mix}
	for _, a := range s.actors {
		w.habits = append(w.habits, [3]float64{a.pPrompt, a.pLate, a.pPartial})
	}
	w.AutoSign(false)
	return w, nil
}

// AutoSign switches the actors' own signing on (each signs what it is asked to by the
// habits its seed drew: promptly, late, partly or never) or off (only SignAll and SignSome
// sign).
func (w *World) AutoSign(on bool) {
	for i, a := range w.s.actors {
		a.pPrompt, a.pLate, a.pPartial = 0, 0, 0
		if on {
			a.pPrompt, a.pLate, a.pPartial = w.habits[i][0], w.habits[i][1], w.habits[i][2]
		}
	}
}

// Actors is how many actors the World has: makers, then takers, then the house taker.
func (w *World) Actors() int { return len(w.s.actors) }

// Now is the World's virtual time.
func (w *World) Now() time.Time { return w.s.now }

// Stats are the World's counters so far.
func (w *World) Stats() Stats { return w.s.stats }

// Coverage counts the interesting situations the World reached so far.
func (w *World) Coverage() map[string]int { return maps.Clone(w.s.cov) }

// Do makes actor (an index below Actors) start call c; pick chooses among what the call
// could act on (an RFQ, a quote, an instrument), modulo their number. The call's requests
// travel and are answered as virtual time advances. It reports whether the call was made.
func (w *World) Do(c Call, actor, pick int) bool {
	s := w.s
	if s.failure != nil || actor < 0 || actor >= len(s.actors) {
		return false
	}
	a := s.actors[actor]
	ready := a.reg == regDone
	maker, taker := a.role == roleMaker, a.role != roleMaker
	switch c {
	case CallRegister:
		if a.reg != regNone {
			return false
		}
		a.register()
	case CallFund:
		if !ready || a.role == roleHouse {
			return false
		}
		a.fund()
	case CallCreateRFQ:
		if !ready || !taker {
			return false
		}
		a.createRFQ()
	case CallQuote:
		id, ok := pickKey(a.invites, pick)
		if !ready || !maker || !ok {
			return false
		}
		a.quote(id)
	case CallSignAll, CallSignSome, CallSignNone:
		if !ready || a.role == roleHouse {
			return false
		}
		a.signPending(c)
	case CallAccept:
		id, ok := pickKey(a.mine, pick)
		if !ready || !taker || !ok {
			return false
		}
		a.consider(id)
	case CallCancelRFQ:
		id, ok := pickKey(a.mine, pick)
		if !ready || !taker || !ok {
			return false
		}
		a.cancelRFQ(id)
	case CallDeleteQuote:
		rfq, ok := pickKey(a.myQuote, pick)
		if !ready || !maker || !ok {
			return false
		}
		a.deleteQuote(rfq, a.myQuote[rfq])
	case CallMassCancel:
		if !ready || !maker {
			return false
		}
		a.massCancel()
	case CallDecline:
		id, ok := pickKey(a.invites, pick)
		if !ready || !maker || !ok {
			return false
		}
		a.decline(id)
	case CallWithdraw:
		if !ready || a.role == roleHouse {
			return false
		}
		cat := catalog()
		a.withdraw(cat[pick%len(cat)].Symbol)
	case CallOpenStream:
		if !ready || a.socket != 0 {
			return false
		}
		a.connect()
	case CallCloseStream:
		if !ready || a.socket == 0 {
			return false
		}
		a.disconnect()
	case CallRotateKey:
		// One rotation at a time, with nothing else in flight: the actor keeps the
		// candidate keys of one rotation, and a second rotation's success would forget
		// the first's candidate (its lost answer could then not be resolved after a crash).
		if !ready || a.role == roleHouse || len(a.inflight) > 0 || len(a.candidates) > 0 {
			return false
		}
		a.rotate()
	case CallAttack:
		if !ready || a.role == roleHouse {
			return false
		}
		return s.hostileNow(a).move(pick)
	default:
		return false
	}
	return true
}

// pickKey returns the pick-th key of m in sorted order (modulo len(m)).
func pickKey[V any](m map[string]V, pick int) (string, bool) {
	if len(m) == 0 {
		return "", false
	}
	keys := slices.Sorted(maps.Keys(m))
	if pick < 0 {
		pick = -pick
	}
	return keys[pick%len(keys)], true
}

// signPending reads the actor's pending actions (GET /tx/pending) and signs all, the
// first, or none of them.
func (a *actor) signPending(c Call) {
	a.read(a.keyHash, machine.QTxPending{}, func(rep machine.Reply) {
		if rep.Err != nil {
			return
		}
		xs := rep.Body.(machine.ActionsDTO).Actions
		switch {
		case len(xs) == 0 || c == CallSignNone:
			return
		case c == CallSignSome && len(xs) > 1:
			a.s.cov.hit(covPartialSign)
			xs = xs[:1]
		}
		xs = slices.DeleteFunc(xs, func(x machine.SignActionDTO) bool { return a.withheld(x.ID) })
		for _, x := range xs {
			a.decided[x.ID] = true
		}
		if len(xs) > 0 {
			a.execute(xs)
		}
	})
}

// Advance runs every event due within the next d of virtual time, with the invariant
// checks after each step, and moves the clock to the end of it. It stops at the first
// violation (Check reports it).
func (w *World) Advance(d time.Duration) {
	s := w.s
	until := s.now.Add(d)
	for s.failure == nil && len(s.q) > 0 && !s.q[0].at.After(until) {
		e, _ := s.next()
		e.fn()
		s.steps++
		s.afterStep()
	}
	if s.failure == nil && until.After(s.now) {
		s.now = until
		s.clock.Set(until)
	}
}

// Fault makes every ledger call decided within the next d of virtual time fail with
// category (one of FaultCategories; machine.LedgerUnknownOutcome takes effect but answers
// unknown), instead of the seed's mix. The liveness phase has no faults.
func (w *World) Fault(category string, d time.Duration) error {
	s := w.s
	m := w.base
	switch category {
	case machine.LedgerContention:
		m.Contention = 1
	case machine.LedgerUnavailable:
		m.Unavailable = 1
	case machine.LedgerRejected:
		m.Rejected = 1
	case machine.LedgerInternal:
		m.Internal = 1
	case machine.LedgerUnknownOutcome:
		m.Contention, m.Unavailable, m.Rejected, m.Internal, m.UnknownOutcome = 0, 0, 0, 0, 1
	default:
		return fmt.Errorf("no ledger fault %q", category)
	}
	s.mix, s.faultsForced = m, true
	till := s.now.Add(d)
	w.till = till
	s.at(till, func() {
		if w.till.Equal(till) {
			s.mix, w.till = w.base, time.Time{}
		}
	})
	return nil
}

// Crash kills the desk process now: both journals lose what was not durable, requests in
// flight fail, and the desk and ledger recover from their journals, as in a Run.
func (w *World) Crash() {
	if w.s.failure == nil {
		w.s.crash()
	}
}

// Check walks the ledger's invariants and the desk's deadlines now, and returns the first
// violation the World met (nil when none).
func (w *World) Check() error {
	s := w.s
	if s.failure == nil {
		s.stats.Checks++
		if err := s.ledger.L.CheckInvariants(); err != nil {
			s.failf(Safety, "ledger invariant: %v", err)
		}
	}
	if s.failure == nil {
		s.checkOverdue()
	}
	if s.failure != nil {
		return s.failure
	}
	return nil
}

// Finish runs the liveness phase: faults stop, no actor starts anything new, and
// everything still open must end by its deadline (LivenessHorizon, or livenessTail past
// the latest deadline open); then the final checks of a Run. It returns the first
// violation (nil when none).
func (w *World) Finish() error {
	s := w.s
	if s.failure == nil {
		s.mix, w.till = w.base, time.Time{}
		s.beginLiveness()
		w.Advance(max(LivenessHorizon, s.horizon.Sub(s.now)))
	}
	if s.failure == nil {
		s.finalChecks()
	}
	if s.failure != nil {
		return s.failure
	}
	return nil
}
