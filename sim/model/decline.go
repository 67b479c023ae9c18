package model

import (
	"fmt"
	"slices"

	"github.com/deskco/rfqdesk/machine"
)

// declineReasons are the reasons docs/api.md allows in POST /maker/rfq/{id}/decline.
var declineReasons = []string{"price", "size", "inventory", "instrument", "other"}

// Decline is a maker's decline of an RFQ as GET /rfq/mine lists it.
type Decline struct {
	Maker  string `json:"maker"` // party id
	Reason string `json:"reason"`
}

// declineDue is the quote.declined frame a decline accepted in this input owes its taker.
type declineDue struct {
	rfq, taker string
	want       machine.QuoteDeclinedPayload
	sent       bool
}

// declineRFQ decides POST /maker/rfq/{id}/decline {reason} by a known caller (docs/api.md):
// 400 for a reason outside the five, then 404 unknown, 403 not invited, 404 closed or past
// its deadline; else 204. The caller's recorded pending quotes on the RFQ that are not
// settling must be revoked by this input (quote.status revoked); one whose accept may be
// with the ledger may be either revoked or left settling; a settling one must not be
// revoked. A submission of the caller on it not yet answered is refused now (409, as a
// replaced one). Then the taker gets one quote.declined, after the revoked quotes'
// quote.status, and the RFQ's declines gain the caller's (or its reason is replaced).
func (s *step) declineRFQ(p *Party, c machine.DeclineRFQ) {
	m := s.m
	if !slices.Contains(declineReasons, c.Reason) {
		s.immediate = one(400, "")
		return
	}
	r := s.openRFQFor(p, c.RFQID)
	switch {
	case r == nil:
		return
	case !r.Deadline.After(s.at):
		s.immediate = one(404, "") // docs/api.md: a decline past the deadline is 404, as closed
		return
	}
	if _, pend := m.newestOn(r, p.ID); pend != nil {
		pend.Kind = "quote.submit.replaced"
	}
	for _, qid := range r.Quotes {
		q := m.st.Quotes[qid]
		switch {
		case q == nil || q.Maker != p.ID || q.Status != "pending" || q.Settling:
		case m.beingAccepted(q):
			// An accept on the RFQ may be with the ledger: until its answer the contract does
			// not say whether the quote is settling yet (as for the mass cancel).
			put(&s.mayRevoke, q.ID, true)
		default:
			put(&s.revoking, q.ID, true)
		}
	}
	s.immediate = &expect{alts: []sc{{204, ""}}, body: func(machine.Reply) string {
		// docs/api.md: the taker hears of a first decline and of a new reason; a repeat
		// with the same reason tells it nothing again.
		due := &declineDue{rfq: r.ID, taker: r.Taker,
			want: machine.QuoteDeclinedPayload{RfqID: r.ID, Maker: p.Hint, Reason: c.Reason}}
		for i := range r.Declines {
			if r.Declines[i].Maker == p.ID {
				m.scoreDeclined(r.ID, p.ID)
				if r.Declines[i].Reason != c.Reason {
					s.decline = due
				}
				r.Declines[i].Reason = c.Reason
				return ""
			}
		}
		s.decline = due
		r.Declines = append(r.Declines, Decline{Maker: p.ID, Reason: c.Reason})
		m.scoreDeclined(r.ID, p.ID)
		return ""
	}}
}

// quoteDeclined judges a quote.declined frame: only the decline accepted in this input
// sends one, once, to the RFQ's taker, after the quote.status of every quote it revoked
// that the taker saw.
func (s *step) quoteDeclined(e machine.Event, to *Party) {
	p, _ := e.Payload.(machine.QuoteDeclinedPayload)
	d := s.decline
	switch {
	case d == nil:
		s.failf("quote.declined %+v to %s, but no decline was accepted now", p, to.Hint)
		return
	case d.sent:
		s.failf("quote.declined for %s sent twice", d.rfq)
		return
	case to.ID != d.taker:
		s.failf("quote.declined for %s sent to %s, not its taker %s", d.rfq, to.Hint, s.m.hintOf(d.taker))
		return
	case p != d.want:
		s.failf("quote.declined payload %+v, not %+v", p, d.want)
		return
	}
	for _, qid := range sortedKeys(s.revoking) {
		if q := s.m.st.Quotes[qid]; q != nil && q.Anchored && s.statusTo[qid][d.taker] == "" {
			s.failf("quote.declined for %s reached the taker before quote.status revoked of the declined quote %s", d.rfq, qid)
			return
		}
	}
	d.sent = true
}

// afterDecline checks that an accepted decline's quote.declined was sent.
func (s *step) afterDecline() {
	if d := s.decline; d != nil && !d.sent {
		s.failf("a decline of %s was accepted without quote.declined to its taker %s", d.rfq, s.m.hintOf(d.taker))
	}
}

// checkDeclines compares an RFQ's declines in GET /rfq/mine with the model's: present,
// each maker once by its hint with its latest reason, in the order of first declines.
func (m *Model) checkDeclines(got *[]machine.DeclineDTO, r *RFQ) string {
	if got == nil {
		return fmt.Sprintf("RFQ %s lacks its declines (always present in GET /rfq/mine)", r.ID)
	}
	want := make([]machine.DeclineDTO, len(r.Declines))
	for i, x := range r.Declines {
		want[i] = machine.DeclineDTO{Maker: m.hintOf(x.Maker), Reason: x.Reason}
	}
	if !slices.Equal(*got, want) {
		return fmt.Sprintf("RFQ %s: declines %v, not %v", r.ID, *got, want)
	}
	return ""
}
