package sim

import (
	"fmt"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// The mass cancel (DELETE /maker/quotes) in the simulation: makers call it now and then,
// after one of their quotes anchored and while one of their trades settles; a hostile
// taker calls it with nothing to cancel. The model (sim/model) judges every answer, frame
// and the state after; these are its coverage goals.
const (
	covMassCancelRevoked  = "a mass cancel that revoked at least one quote"
	covMassCancelSettling = "a mass cancel that found a settling quote"
	covAdvMassCancelNone  = "adversary: DELETE /maker/quotes by a taker, who has no quote"
)

// massCancelCoverage lists the mass cancel's situations in report order.
var massCancelCoverage = []string{covMassCancelRevoked, covMassCancelSettling, covAdvMassCancelNone}

// massCancelGoals are those a long run must reach: a revoking mass cancel always; one that
// meets a settling quote (a maker's trade in flight at that moment) and the hostile taker's
// (a seed's hostile actors may all be makers) over several seeds.
func massCancelGoals(k Knobs, runs int) []string {
	goals := []string{covMassCancelRevoked}
	if runs > 1 {
		goals = append(goals, covMassCancelSettling)
		if k.Adversaries > 0 {
			goals = append(goals, covAdvMassCancelNone)
		}
	}
	return goals
}

// massCancel revokes every pending quote of the maker that is not settling.
func (a *actor) massCancel() {
	if a.s.liveness || a.role != roleMaker || a.reg != regDone {
		return
	}
	a.send(machine.CancelAllQuotes{Req: a.req()}, func(rep machine.Reply) {
		d, ok := rep.Body.(machine.CancelAllQuotesDTO)
		if rep.Err != nil || !ok {
			return
		}
		if len(d.Revoked) > 0 {
			a.s.cov.hit(covMassCancelRevoked)
		}
		if len(d.Settling) > 0 {
			a.s.cov.hit(covMassCancelSettling)
		}
		for _, id := range d.Revoked {
			if a.adv != nil {
				a.adv.deleted(id) // a DELETE of it now is 404
			}
		}
	})
}

// massCancelSoon schedules a mass cancel one time in n.
func (a *actor) massCancelSoon(n int, lo, hi time.Duration) {
	if a.role == roleMaker && !a.s.liveness && a.rng.IntN(n) == 0 {
		a.s.after(a.uniform(lo, hi), a.massCancel)
	}
}

// takerMassCancel: a taker, who quotes nothing, calls the mass cancel; the contract
// answers 200 with two empty lists and nothing changes (docs/api.md, the desk's choices).
func (h *hostile) takerMassCancel() bool {
	a := h.a
	if a.role != roleTaker {
		return false
	}
	in := machine.CancelAllQuotes{Req: h.req()}
	h.send(in, &expectation{class: covAdvMassCancelNone,
		what: fmt.Sprintf("DELETE /maker/quotes by taker %s, who has no quote", a.party),
		want: one(200, ""), immediate: true,
		refine: func(e *expectation) *expectation { return h.keyRaceOf(in.KeyHash, e) }}, nil)
	return true
}
