package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Maker protection (PUT/GET /maker/protection, POST /maker/protection/reset) in the
// simulation: half the makers set a protection with limits small enough to trip in a run
// (a few fills, or a few hundred USD, in a window of 10 to 60 seconds), read it now and
// then, change it rarely, and reset a freeze: always one that lasts until a reset, and one
// time in three one that would end by itself. Hostile actors send settings out of their
// bounds (400, nothing changes). The model (sim/model) judges every answer, the trips, the
// revocations, maker.protection and the 409 MMP_FROZEN; these are its coverage goals.
const (
	covMMPFills      = "protection tripped on fills"
	covMMPNotional   = "protection tripped on notional"
	covMMPRefused    = "a quote refused while frozen"
	covMMPEndTime    = "a freeze ended by time"
	covMMPEndReset   = "a freeze ended by reset"
	covMMPRace       = "a protection trigger raced a second accept"
	covMMPRestart    = "a freeze across a desk restart"
	covAdvMMPBadBody = "adversary: PUT /maker/protection out of bounds"
)

// protectionCoverage lists the protection's situations in report order.
var protectionCoverage = []string{covMMPFills, covMMPNotional, covMMPRefused, covMMPEndTime, covMMPEndReset,
	covMMPRace, covMMPRestart, covAdvMMPBadBody}

// protectionGoals are those a long run must reach: the trips, the refusal and both ends of
// a freeze always; the race, the restart (crashes on) and the hostile class over several
// seeds.
func protectionGoals(k Knobs, runs int) []string {
	goals := []string{covMMPFills, covMMPNotional, covMMPRefused, covMMPEndTime, covMMPEndReset}
	if runs > 1 {
		goals = append(goals, covMMPRace)
		if k.CrashRate > 0 {
			goals = append(goals, covMMPRestart)
		}
		if k.Adversaries > 0 {
			goals = append(goals, covAdvMMPBadBody)
		}
	}
	return goals
}

// mmpPlan is a maker's protection: the settings it sets and what it knows of its freeze.
// Its draws come from a generator of its own, so that the actor's other habits draw as
// they did before the feature.
type mmpPlan struct {
	rng       *rand.Rand
	want      machine.SetProtection // the settings (without the key)
	set       bool                  // a PUT was answered 200
	sending   bool
	frozen    bool      // a trip the maker heard of, not yet ended (as far as it knows)
	until     time.Time // its end; zero: until a reset
	resetting bool
	tripCrash uint64 // the run's crash count when it heard of the trip
}

// drawProtection gives one maker in two a protection plan (nil for the others).
func drawProtection(r role, seed uint64, idx int) *mmpPlan {
	rng := rand.New(rand.NewPCG(seed, uint64(idx)^0x3a3b))
	if r != roleMaker || rng.IntN(2) != 0 {
		return nil
	}
	p := &mmpPlan{rng: rng}
	p.draw()
	return p
}

// draw picks settings: a window of 10 to 60 s, a fill limit of 2 to 4, a notional limit of
// 100 to 1,000 USD (the run's tickets are worth 20 to 600 USD), or both, and a freeze of 2
// to 21 s, or one in four until a reset.
func (p *mmpPlan) draw() {
	w := machine.SetProtection{WindowSeconds: 10 + p.rng.IntN(51), MaxNotionalUSD: money.Zero}
	switch p.rng.IntN(3) {
	case 0:
		w.MaxFills = 2 + p.rng.IntN(3)
	case 1:
		w.MaxNotionalUSD = money.FromInt(int64(100 + p.rng.IntN(901)))
	default:
		w.MaxFills = 2 + p.rng.IntN(3)
		w.MaxNotionalUSD = money.FromInt(int64(100 + p.rng.IntN(901)))
	}
	if p.rng.IntN(4) != 0 {
		w.FreezeSeconds = 2 + p.rng.IntN(20)
	}
	p.want = w
}

// protectionWake is a maker's protection habit at each wake: set it until the desk took
// it, then now and then read it, rarely change it, and reset a freeze that lasts until a
// reset.
func (a *actor) protectionWake() {
	p := a.mmp
	if p == nil || a.s.liveness || a.role != roleMaker || a.reg != regDone {
		return
	}
	switch {
	case !p.set:
		a.setProtection()
	case p.rng.IntN(20) == 0:
		a.read(a.keyHash, machine.QProtection{}, func(machine.Reply) {})
	case p.rng.IntN(200) == 0:
		p.draw()
		a.setProtection()
	}
	if p.frozen && p.until.IsZero() && !p.resetting {
		p.resetting = true
		a.s.after(a.uniform(time.Second, 10*time.Second), a.resetProtection)
	}
}

// setProtection sends the plan's settings.
func (a *actor) setProtection() {
	p := a.mmp
	if p.sending {
		return
	}
	p.sending = true
	in := p.want
	in.Req = a.req()
	a.send(in, func(rep machine.Reply) {
		p.sending = false
		if rep.Err == nil && rep.Status == 200 {
			p.set = true
		}
	})
}

// resetProtection ends the maker's freeze.
func (a *actor) resetProtection() {
	s, p := a.s, a.mmp
	if s.liveness || a.reg != regDone {
		p.resetting = false
		return
	}
	var wasFrozen bool
	a.issue(func(rep machine.Reply) {
		p.resetting = false
		if rep.Err != nil || rep.Status != 200 {
			return
		}
		p.frozen = false
		if wasFrozen {
			s.cov.hit(covMMPEndReset)
		}
	}, func(r *request) {
		wasFrozen = s.deskFrozen(a.party) // for coverage only
		seq := s.input(machine.ResetProtection{Req: a.req()})
		s.waiting[seq] = r
	})
}

// deskFrozen reports whether the desk holds the party frozen now: for coverage only, never
// for a decision of an actor.
func (s *Sim) deskFrozen(party string) bool {
	p := s.desk.Protections[party]
	return p != nil && p.Frozen && (p.FrozenUntil.IsZero() || s.now.Before(p.FrozenUntil))
}

// protectionTripped: the maker heard maker.protection. A freeze until a reset is reset at
// the next wakes; one with an end is reset one time in three, else left to end.
func (a *actor) protectionTripped(t machine.MakerProtectionPayload) {
	s, p := a.s, a.mmp
	switch t.Triggered {
	case machine.TriggeredFills:
		s.cov.hit(covMMPFills)
	case machine.TriggeredNotional:
		s.cov.hit(covMMPNotional)
	}
	for _, id := range t.Revoked {
		if a.adv != nil {
			a.adv.deleted(id) // a DELETE of it now is 404
		}
	}
	if p == nil {
		return
	}
	p.frozen, p.until, p.tripCrash = true, time.Time{}, s.stats.Crashes
	if t.FrozenUntil != nil {
		p.until = time.Time(*t.FrozenUntil)
		if !p.until.After(s.now) {
			// A trip a resume replays after its freeze ended (the maker was away).
			p.frozen = false
			return
		}
		if p.rng.IntN(3) == 0 && !p.resetting && !s.liveness {
			p.resetting = true
			// The frame may come late, past frozenUntil: the window then stays 100 ms wide.
			s.after(a.uniform(100*time.Millisecond, max(p.until.Sub(s.now)+time.Second, 200*time.Millisecond)), a.resetProtection)
		}
	}
}

// quoteAnswered counts what a quote's answer says of the maker's freeze.
func (a *actor) quoteAnswered(rep machine.Reply) {
	s, p := a.s, a.mmp
	if p == nil || rep.Status == 599 {
		return
	}
	switch {
	case rep.Err != nil && rep.Err.Code == machine.CodeMMPFrozen:
		s.cov.hit(covMMPRefused)
		if p.frozen && s.stats.Crashes > p.tripCrash {
			s.cov.hit(covMMPRestart)
		}
	case rep.Err == nil && p.frozen && !p.until.IsZero() && !s.now.Before(p.until):
		s.cov.hit(covMMPEndTime)
		p.frozen = false
	}
}

// acceptRefused counts an accept refused because its quote was revoked by its maker's
// protection, tripped by another accept while this one was on its way or with the ledger.
func (s *Sim) acceptRefused(quoteID string) {
	if q := s.desk.Quotes[quoteID]; q != nil && q.RevokeReason == machine.RevokeProtection {
		s.cov.hit(covMMPRace)
	}
}

// badProtection: PUT /maker/protection with one setting out of its bounds (negative, or
// past its maximum; a negative notional): 400 at once, and nothing changes. (Missing
// fields, fractions and bad decimals never reach the desk: the transport refuses them,
// transport/protection_test.go.)
func (h *hostile) badProtection() bool {
	a := h.a
	in := machine.SetProtection{Req: h.req(), WindowSeconds: 30, MaxFills: 3, MaxNotionalUSD: money.FromInt(500), FreezeSeconds: 10}
	var what string
	switch a.rng.IntN(7) {
	case 0:
		in.WindowSeconds, what = -1, "windowSeconds -1"
	case 1:
		in.WindowSeconds, what = machine.MaxProtectionWindowSeconds+1, "windowSeconds past its bound"
	case 2:
		in.MaxFills, what = -1, "maxFills -1"
	case 3:
		in.MaxFills, what = machine.MaxProtectionFills+1, "maxFills past its bound"
	case 4:
		in.FreezeSeconds, what = -5, "freezeSeconds -5"
	case 5:
		in.FreezeSeconds, what = machine.MaxProtectionFreezeSeconds+1, "freezeSeconds past its bound"
	default:
		in.MaxNotionalUSD, what = money.FromInt(-1), "maxNotionalUsd -1"
	}
	h.send(in, &expectation{class: covAdvMMPBadBody,
		what: fmt.Sprintf("PUT /maker/protection by %s with %s", a.party, what),
		want: one(400, ""), immediate: true,
		refine: func(e *expectation) *expectation { return h.keyRaceOf(in.KeyHash, e) }}, nil)
	return true
}

// frozenMayRefuse widens a hostile quote's expectation by 409 MMP_FROZEN for an actor that
// sets a protection: a freeze refuses every quote before anything else is looked at.
func (h *hostile) frozenMayRefuse(in machine.Input, e *expectation) *expectation {
	if _, ok := in.(machine.SubmitQuote); !ok || h.a.mmp == nil {
		return e
	}
	c := *e
	c.want = append(append([]want(nil), e.want...), want{409, machine.CodeMMPFrozen})
	if c.why == "" {
		c.why = "the maker's protection may be frozen (409 MMP_FROZEN comes first)"
	}
	return &c
}
