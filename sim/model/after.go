package model

import (
	"container/heap"
	"sort"

	"github.com/deskco/rfqdesk/machine"
)

// afterEvents checks that the input did everything the contract requires of it: each
// frame an effect owes was sent, and every deadline a Tick reached fired.
func (s *step) afterEvents() {
	m := s.m
	_, tick := s.env.Input.(machine.Tick)
	if tick {
		s.tickDue()
		if s.err != nil {
			return
		}
	}
	// The RFQ created now reached each invited maker once.
	if id := s.createdRFQ; id != "" {
		r := m.st.RFQs[id]
		for _, mk := range r.Invited {
			if s.rfqFrames[id][mk] != 1 {
				s.failf("RFQ %s: invited maker %s got %d rfq.created frames, not 1", id, m.hintOf(mk), s.rfqFrames[id][mk])
				return
			}
		}
	}
	for _, id := range sortedKeys(s.revoking) {
		q := m.st.Quotes[id]
		if q != nil && q.Status == "pending" {
			s.failf("quote %s was not revoked (re-quote, DELETE, a decline, a failed settlement or cancel-on-disconnect revokes it with quote.status revoked)", id)
			return
		}
	}
	if s.afterDecline(); s.err != nil {
		return
	}
	if s.afterTrip(); s.err != nil {
		return
	}
	closing := map[string]string{}
	for id := range s.cancelled {
		closing[id] = "cancelled"
	}
	for id := range s.filled {
		closing[id] = "filled"
	}
	for id := range s.expiredRFQ {
		closing[id] = "expired"
	}
	for _, id := range sortedKeys(closing) {
		r := m.st.RFQs[id]
		how := closing[id]
		audience := append(append([]string(nil), r.Invited...), r.Taker)
		for _, p := range audience {
			// docs/architecture.md: rfq.closed and rfq.expired go to every invited maker
			// and to the taker, the winner of a fill included.
			want := 1
			// rfq.created never comes with a close, so the frame count is the close's.
			if got := s.rfqFrames[id][p]; got != want {
				s.failf("RFQ %s %s: %s got %d closing frames (rfq.closed / rfq.expired), not %d", id, how, m.hintOf(p), got, want)
				return
			}
		}
		for _, qid := range r.Quotes {
			q := m.st.Quotes[qid]
			if q != nil && q.Status == "pending" {
				s.failf("RFQ %s %s, but its quote %s is still pending (no quote.status)", id, how, qid)
				return
			}
		}
		if how != "filled" && !s.history[id][how] {
			s.failf("RFQ %s %s without its history.recorded row for taker %s", id, how, m.hintOf(r.Taker))
			return
		}
	}
	for _, id := range sortedKeys(s.failedRFQ) {
		if !s.history[id]["failed"] {
			s.failf("a settlement on RFQ %s failed without its history.recorded row", id)
			return
		}
	}
	// A settled trade reached both its parties.
	for id, to := range s.settledTo {
		t := m.st.Trades[id]
		if !to[t.Taker] || !to[t.Maker] {
			s.failf("trade.settled for %s did not reach both taker %s and maker %s", id, m.hintOf(t.Taker), m.hintOf(t.Maker))
			return
		}
	}
	// Quote status frames reach the maker, and the taker of a quote it saw.
	for qid, to := range s.statusTo {
		q := m.st.Quotes[qid]
		if q == nil || q.Status == "pending" {
			continue
		}
		if !s.statusSent[qid] {
			continue
		}
		if to[q.Maker] == "" {
			s.failf("quote %s became %s without quote.status to its maker %s", qid, q.Status, m.hintOf(q.Maker))
			return
		}
		// The taker, who saw the quote, hears its end too; of a win it hears trade.settled.
		if r := m.st.RFQs[q.RFQ]; r != nil && q.Anchored && q.Status != "won" && to[r.Taker] == "" {
			s.failf("quote %s became %s without quote.status to taker %s, who saw it", qid, q.Status, m.hintOf(r.Taker))
			return
		}
	}
}

// tickDue checks that a Tick fired every deadline at or before it, and forgets what the
// desk forgets.
func (s *step) tickDue() {
	m := s.m
	for len(m.st.Due) > 0 && !m.st.Due[0].At.After(s.at) {
		d := heap.Pop(&m.st.Due).(Due)
		switch d.Kind {
		case dueRFQ:
			r := m.st.RFQs[d.ID]
			// An RFQ whose accept or settlement is with the ledger waits for its outcome
			// (docs/architecture.md); its expiry then comes with that outcome.
			if r != nil && r.Open && r.Settling == "" && r.Accepting == 0 && !r.Deadline.After(s.at) {
				s.failf("RFQ %s reached its deadline %s at a Tick (%s) but did not expire (no rfq.expired)", r.ID, wireTime(r.Deadline), wireTime(s.at))
				return
			}
		case dueQuote:
			q := m.st.Quotes[d.ID]
			if q == nil || q.Status != "pending" || q.Settling || q.ValidUntil.After(s.at) {
				continue
			}
			if r := m.st.RFQs[q.RFQ]; r != nil && r.Accepting != 0 {
				continue // an accept with the ledger holds it until its answer
			}
			s.failf("quote %s reached its validUntil %s at a Tick but is still pending (SPEC: expired, or revoked unsigned)", q.ID, wireTime(q.ValidUntil))
			return
		case dueAction:
			x := m.st.Actions[d.ID]
			// An action whose execute may be with the ledger waits for the ledger's answer
			// (machine.expireAction); notExecuting judges it again once an answer is definite.
			if x != nil && !x.Executing && !x.ExpiresAt.After(s.at) {
				s.failf("action %s of %s reached its expiry %s at a Tick but did not leave the queue (no sign.completed)", x.ID, m.hintOf(x.Party), wireTime(x.ExpiresAt))
				return
			}
		case dueForget:
			r := m.st.RFQs[d.ID]
			if r == nil || r.Open || r.Settling != "" || r.Forget.IsZero() || r.Forget.After(s.at) {
				continue
			}
			for _, qid := range r.Quotes {
				delete(m.st.Quotes, qid)
			}
			for _, tid := range r.Trades {
				if t := m.st.Trades[tid]; t != nil && t.Status != "settled" {
					delete(m.st.Trades, tid)
				}
			}
			m.index(r, false)
			delete(m.st.RFQs, r.ID)
		case dueChal:
			if c := m.st.Challenges[d.ID]; c != nil && !c.Expires.After(s.at) {
				delete(m.st.Challenges, d.ID)
			}
		}
	}
}

func sortedKeys[V any](mp map[string]V) []string {
	out := make([]string, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
