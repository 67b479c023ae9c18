package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// The decline (POST /maker/rfq/{id}/decline) in the simulation: a maker that will not
// quote an RFQ declines it now and then, with a drawn reason, and sometimes declines one it
// quoted after its quote went live (the decline revokes it). Hostile actors decline RFQs
// they are not invited to (403), RFQs they saw close or that were never issued (404), and
// with a reason outside the five (400). The model (sim/model) judges every answer, frame
// and the state after; these are its coverage goals.
const (
	covDeclineRevoked      = "a decline that revoked the maker's live quote"
	covDeclineNoQuote      = "a decline of an RFQ the maker had no quote on"
	covDeclineSettling     = "a decline that left the maker's settling quote alone"
	covAdvDeclineUninvited = "adversary: decline an RFQ it is not invited to"
	covAdvDeclineClosed    = "adversary: decline an RFQ it saw close, or one never issued"
	covAdvDeclineBadReason = "adversary: decline with a reason outside the five"
)

// declineReasons are the reasons an honest maker draws from.
var declineReasons = []string{"price", "size", "inventory", "instrument", "other"}

// declineCoverage lists the decline's situations in report order.
var declineCoverage = []string{covDeclineRevoked, covDeclineNoQuote, covDeclineSettling,
	covAdvDeclineUninvited, covAdvDeclineClosed, covAdvDeclineBadReason}

// declineGoals are those a long run must reach: an honest decline with no quote and one
// that revoked a live quote always; the rarer settling one and the hostile classes (a
// seed's hostile actors may all be takers, who are invited to nothing) over several seeds.
func declineGoals(k Knobs, runs int) []string {
	goals := []string{covDeclineRevoked, covDeclineNoQuote}
	if runs > 1 {
		goals = append(goals, covDeclineSettling)
		if k.Adversaries > 0 {
			goals = append(goals, covAdvDeclineUninvited, covAdvDeclineClosed, covAdvDeclineBadReason)
		}
	}
	return goals
}

// makerQuoteState is the state of the maker's newest quote on an RFQ in the desk, or ""
// when it has none pending: for coverage only, never for a decision of the actor.
func (s *Sim) makerQuoteState(party, rfqID string) (machine.State, string) {
	r := s.desk.RFQs[rfqID]
	if r == nil {
		return "", ""
	}
	for i := len(r.Quotes) - 1; i >= 0; i-- {
		if q := s.desk.Quotes[r.Quotes[i]]; q != nil && q.Maker == party {
			switch q.State {
			case machine.QuoteFunding, machine.QuoteLive, machine.QuoteSettling:
				return q.State, q.ID
			}
			return "", ""
		}
	}
	return "", ""
}

// decline declines an RFQ the maker is invited to, with a drawn reason.
func (a *actor) decline(rfqID string) {
	s := a.s
	if s.liveness || a.role != roleMaker || a.reg != regDone {
		return
	}
	in := machine.DeclineRFQ{Req: a.req(), RFQID: rfqID, Reason: declineReasons[a.rng.IntN(len(declineReasons))]}
	var before machine.State
	var quoteID string
	a.issue(func(rep machine.Reply) {
		if rep.Err != nil || rep.Status != 204 {
			return
		}
		switch before {
		case machine.QuoteLive:
			s.cov.hit(covDeclineRevoked)
			if a.adv != nil {
				a.adv.deleted(quoteID) // a DELETE of it now is 404
			}
		case machine.QuoteSettling:
			s.cov.hit(covDeclineSettling)
		case "":
			s.cov.hit(covDeclineNoQuote)
		}
	}, func(r *request) {
		before, quoteID = s.makerQuoteState(a.party, rfqID)
		seq := s.input(in)
		s.waiting[seq] = r
	})
}

// declineSoon schedules a decline of an RFQ one time in n.
func (a *actor) declineSoon(rfqID string, n int, lo, hi time.Duration) {
	if a.role == roleMaker && !a.s.liveness && a.rng.IntN(n) == 0 {
		a.s.after(a.uniform(lo, hi), func() { a.decline(rfqID) })
	}
}

// uninvitedDecline: decline an RFQ the actor is not invited to: 403 (404 once the RFQ may
// be forgotten); the refusal changes nothing.
func (h *hostile) uninvitedDecline() bool {
	a := h.a
	return h.forbidden(&a.s.pool.rfqs, func(x *seen) bool { return !slices.Contains(x.invite, a.hint) }, covAdvDeclineUninvited,
		func(x seen) (machine.Input, string) {
			return machine.DeclineRFQ{Req: h.req(), RFQID: x.id, Reason: "price"},
				fmt.Sprintf("POST /maker/rfq/%s/decline by %s, which invites %v", x.id, a.party, x.invite)
		})
}

// badReasonDecline: decline with a reason outside the five: 400 whatever the RFQ (the
// reason is checked before the RFQ, docs/api.md); the refusal changes nothing.
func (h *hostile) badReasonDecline() bool {
	a := h.a
	x, ok := a.s.pool.rfqs.pick(a.rng, func(*seen) bool { return true })
	if !ok {
		return false
	}
	reason := []string{"", "PRICE", "bored", "price ", "size,price"}[a.rng.IntN(5)]
	in := machine.DeclineRFQ{Req: h.req(), RFQID: x.id, Reason: reason}
	h.send(in, &expectation{class: covAdvDeclineBadReason,
		what: fmt.Sprintf("POST /maker/rfq/%s/decline by %s with reason %q", x.id, a.party, reason),
		want: one(400, ""), immediate: true}, nil)
	return true
}

// unknownDecline: decline an RFQ the desk never issued: 404.
func (h *hostile) unknownDecline() bool {
	a := h.a
	id := fmt.Sprintf("rfq_%x", a.rng.Uint64())
	in := machine.DeclineRFQ{Req: h.req(), RFQID: id, Reason: "other"}
	h.send(in, &expectation{class: covAdvDeclineClosed,
		what: fmt.Sprintf("POST /maker/rfq/%s/decline by %s (never issued)", id, a.party),
		want: one(404, ""), immediate: true}, nil)
	return true
}

// declineClosed: the maker saw an RFQ it is invited to close; declining it is 404 (closed,
// or forgotten).
func (h *hostile) declineClosed(rfqID string) {
	h.again(func() machine.Input { return machine.DeclineRFQ{Req: h.req(), RFQID: rfqID, Reason: "size"} }, covAdvDeclineClosed,
		fmt.Sprintf("POST /maker/rfq/%s/decline by %s, which it saw close", rfqID, h.a.party))
}
