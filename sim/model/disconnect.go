package model

import (
	"slices"

	"github.com/deskco/rfqdesk/machine"
)

// Cancel-on-disconnect (docs/api.md): a socket opened with ?cancelOnDisconnect=true is
// marked. The input that takes a party offline (its last socket closed, its sockets closed
// by a key rotation, or every socket closed by a restart's boot) revokes, when one of the
// sockets it closed carried the mark, every recorded pending quote of the party that is not
// settling, as the mass cancel would: each must be revoked in that input (afterEvents),
// with reason disconnect in the maker's quote.status and no reason in the taker's. A quote
// on an RFQ whose accept is with the ledger may already be settling (the contract cannot
// tell), so it may be revoked or left, as for the mass cancel. A submission not yet
// answered is no recorded quote and is left alone.

// reasonDisconnect is the quote.status reason of a quote revoked by cancel-on-disconnect.
const reasonDisconnect = "disconnect"

// dropSockets forgets the sockets an input closed, in order, and then applies
// cancel-on-disconnect to every party the drop took offline with a marked socket among
// them.
func (s *step) dropSockets(ids []uint64) {
	m := s.m
	var marked []string
	for _, id := range ids {
		sk, ok := m.st.Sockets[id]
		if !ok {
			continue
		}
		if sk.CancelOnDisconnect && !slices.Contains(marked, sk.Party) {
			marked = append(marked, sk.Party)
		}
		if p := m.party(sk.Party); p != nil && p.Online > 0 {
			p.Online--
		}
		delete(m.st.Sockets, id)
	}
	for _, id := range marked {
		if p := m.party(id); p != nil && p.Online == 0 {
			s.cancelOnDisconnect(p)
		}
	}
}

// cancelOnDisconnect marks the party's quotes this input must (revoking) or may
// (disconnecting only) revoke for the disconnect.
func (s *step) cancelOnDisconnect(p *Party) {
	m := s.m
	m.withdrawSubmissions(p.ID) // at a boot they have no client anyway
	for _, id := range sortedKeys(m.st.Quotes) {
		q := m.st.Quotes[id]
		if q.Maker != p.ID || q.Status != "pending" || q.Settling {
			continue
		}
		put(&s.disconnecting, id, true)
		if _, boot := s.env.Input.(machine.Boot); m.beingAccepted(q) && !boot {
			// Its accept may have made it settling already: either is right. Not at a
			// restart: the accept was never answered (the desk locks the quote and answers
			// in one input), so the quote is live and the restart undoes the accept.
			continue
		}
		put(&s.revoking, id, true)
	}
}

// disconnectReason judges the reason of a quote.status frame: only the maker's revoked
// frame of a quote this input revokes for a disconnect carries it, as disconnect, and that
// frame always does. It returns "" when the frame is right.
func (s *step) disconnectReason(q *Quote, to *Party, p machine.QuoteStatusPayload) string {
	want := ""
	if p.Status == "revoked" && to.ID == q.Maker && s.disconnecting[q.ID] {
		want = reasonDisconnect
	}
	if p.Status == "revoked" && to.ID == q.Maker && s.protecting[q.ID] {
		want = reasonProtection // protection.go
	}
	if p.Reason != want {
		return "quote.status " + p.Status + " for " + q.ID + " to " + to.Hint + " has reason \"" + p.Reason + "\", want \"" + want + "\""
	}
	return ""
}

// checkMyQuote judges GET /rfq/incoming's myQuote: a QuoteDTO whose revokeReason is the
// quote's (disconnect for a quote revoked by cancel-on-disconnect, else absent).
func (m *Model) checkMyQuote(d machine.QuoteDTO, q *Quote) string {
	if d.RevokeReason != q.RevokeReason {
		return "quote " + q.ID + " (" + q.Status + "): revokeReason is \"" + d.RevokeReason + "\", not \"" + q.RevokeReason + "\""
	}
	d.RevokeReason = ""
	return m.checkQuoteDTO(d, q)
}
