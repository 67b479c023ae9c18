package model

import (
	"fmt"
	"sort"

	"github.com/deskco/rfqdesk/machine"
)

// cancelAllQuotes decides DELETE /maker/quotes (the mass cancel, docs/api.md) by a known
// caller: always 200, with every recorded pending quote of the caller in exactly one list,
// `settling` for a settling quote and `revoked` for every other, each list in creation
// order (creation time, then id), and nothing else listed; every quote in `revoked` must be
// revoked by this input (quote.status revoked, afterEvents). A submission not yet answered
// is no recorded quote: it is in neither list, and it is withdrawn (its POST refused now).
func (s *step) cancelAllQuotes(p *Party) {
	m := s.m
	m.withdrawSubmissions(p.ID)
	const (
		mustRevoke  = "revoked"
		mustSettle  = "settling"
		mayBeEither = "either"
	)
	must := map[string]string{}
	for id, q := range m.st.Quotes {
		if q.Maker != p.ID || q.Status != "pending" {
			continue
		}
		switch {
		case q.Settling:
			must[id] = mustSettle
		case m.beingAccepted(q):
			// An accept on its RFQ may be with the ledger: until its answer the contract
			// does not say whether the quote is settling yet (as for DELETE of one quote,
			// where 409 and 204 are both allowed), so either list is right.
			must[id] = mayBeEither
		default:
			must[id] = mustRevoke
		}
	}
	s.immediate = &expect{alts: []sc{{200, ""}}, body: func(rep machine.Reply) string {
		d, ok := rep.Body.(machine.CancelAllQuotesDTO)
		if !ok || d.Revoked == nil || d.Settling == nil {
			return "the body is not {revoked: [quoteId…], settling: [quoteId…]} with both lists present"
		}
		seen := map[string]bool{}
		for _, l := range []struct {
			name, not string
			ids       []string
		}{{mustRevoke, mustSettle, d.Revoked}, {mustSettle, mustRevoke, d.Settling}} {
			for _, id := range l.ids {
				if seen[id] {
					return fmt.Sprintf("quote %s is listed twice", id)
				}
				seen[id] = true
				switch must[id] {
				case "":
					return fmt.Sprintf("%s lists %s, which is not a pending quote of the caller", l.name, id)
				case l.not:
					return fmt.Sprintf("%s lists %s, which is %s", l.name, id, map[string]string{mustSettle: "settling", mustRevoke: "pending and not settling"}[must[id]])
				}
			}
			if !sort.SliceIsSorted(l.ids, func(i, j int) bool { return m.createdBefore(l.ids[i], l.ids[j]) }) {
				return fmt.Sprintf("%s %v is not in creation order", l.name, l.ids)
			}
		}
		for _, id := range sortedKeys(must) {
			if !seen[id] {
				return fmt.Sprintf("neither list names the caller's pending quote %s (%s)", id, must[id])
			}
		}
		for _, id := range d.Revoked {
			put(&s.revoking, id, true)
		}
		return ""
	}}
}

// createdBefore orders two recorded quotes by creation time, then by id.
func (m *Model) createdBefore(a, b string) bool {
	qa, qb := m.st.Quotes[a], m.st.Quotes[b]
	if !qa.CreatedAt.Equal(qb.CreatedAt) {
		return qa.CreatedAt.Before(qb.CreatedAt)
	}
	return a < b
}

// beingAccepted reports whether an accept of this very quote may be with the ledger: its
// RFQ waits on an accept request that names the quote (or one the model no longer holds).
// Until the ledger answers, the contract does not say whether the quote is settling yet;
// another maker's quote on that RFQ is not concerned.
func (m *Model) beingAccepted(q *Quote) bool {
	r := m.st.RFQs[q.RFQ]
	if r == nil || r.Accepting == 0 || r.Settling != "" {
		return false
	}
	req := m.st.Reqs[r.Accepting]
	return req == nil || req.Quote == q.ID
}

// withdrawSubmissions marks every submission of the maker still waiting on the ledger as
// one that must be refused (docs/api.md: the mass cancel and cancel-on-disconnect withdraw
// it, answering its POST 409, as a newer quote replacing it does).
func (m *Model) withdrawSubmissions(maker string) {
	for _, req := range m.st.Reqs {
		if req.Kind == "quote.submit" && req.Party == maker {
			req.Kind = "quote.submit.replaced"
		}
	}
}
