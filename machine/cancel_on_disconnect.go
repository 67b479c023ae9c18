package machine

import (
	"slices"
	"time"
)

// Cancel-on-disconnect (docs/api.md, "Cancel-on-disconnect").
//
// A stream socket opened with ?cancelOnDisconnect=true is marked (SocketOpened carries the
// mark, so the journal and the snapshot know it). When an input takes a party offline (its
// last socket closed or dropped for a missed pong, its sockets closed by a key rotation, or
// every socket closed by a restart's Boot) and one of the sockets that input dropped
// carried the mark, every pending quote of the party that is not settling is revoked in
// that same input, exactly as DELETE /maker/quotes revokes it, and the quote records the
// reason RevokeDisconnect. A quote whose POST /maker/quotes still waits on the ledger is
// withdrawn, as the mass cancel withdraws it: its submission is answered 409, and the
// quote never goes live behind a maker that is gone (a restart's Boot refuses it, as it
// refuses every held submission).

// RevokeDisconnect is the reason a quote revoked by cancel-on-disconnect records, and the
// reason of the maker's quote.status revoked frame.
const RevokeDisconnect = "disconnect"

// dropSockets forgets the given sockets, in the order given, and then revokes the quotes
// of every party the drop took offline and one of whose dropped sockets carried the mark.
// Parties are handled in the order their first marked socket was dropped.
func (a *applier) dropSockets(ids []uint64) {
	var marked []string
	for _, id := range ids {
		s, ok := a.d.Sockets[id]
		if !ok {
			continue
		}
		if s.CancelOnDisconnect && !slices.Contains(marked, s.PartyID) {
			marked = append(marked, s.PartyID)
		}
		a.dropSocket(id)
	}
	for _, id := range marked {
		if p, ok := a.d.Parties[id]; ok && p.Online == 0 {
			a.cancelOnDisconnect(p)
		}
	}
}

// cancelOnDisconnect revokes every cancellable quote of a party that went offline, and
// withdraws its submissions still waiting on the ledger.
func (a *applier) cancelOnDisconnect(p *Party) {
	if !a.booting {
		a.withdrawWaitingSubmissions(p.ID, conflict("the quote was withdrawn by cancel-on-disconnect before it was recorded"))
	}
	a.revokeCancellable(p.ID, RevokeDisconnect)
}

// revokeCancellable revokes the maker's cancellable quotes but a settling one, each
// recording why (RevokeDisconnect, RevokeProtection), and returns the ids of those it
// revoked, in creation order.
func (a *applier) revokeCancellable(maker, reason string) []string {
	var revoked []string
	for _, q := range a.cancellableQuotes(maker) {
		if q.State == QuoteSettling {
			continue
		}
		q.RevokeReason = reason
		a.endQuote(q, TrigRevoke)
		if q.State != QuoteRevoked {
			q.RevokeReason = "" // not revoked after all: no reason to record
			continue
		}
		revoked = append(revoked, q.ID)
	}
	return revoked
}

// cancellableQuotes are the maker's quotes a mass cancel considers: every pending quote
// except one whose POST /maker/quotes still waits on its ledger prepares (not recorded
// yet; its caller has not been told its id). They come in creation order.
func (a *applier) cancellableQuotes(maker string) []*Quote {
	return a.makersQuotes(maker, func(q *Quote) bool {
		return q.pending() && (q.State != QuoteFunding || q.ReqSeq == 0)
	})
}

// makersQuotes are the maker's quotes that keep holds, in creation order (by creation
// time, then by id): the map's order decides nothing.
func (a *applier) makersQuotes(maker string, keep func(*Quote) bool) []*Quote {
	var mine []*Quote
	for _, q := range a.d.Quotes {
		if q.Maker == maker && keep(q) {
			mine = append(mine, q)
		}
	}
	oldestFirst(mine, func(q *Quote) time.Time { return q.CreatedAt }, func(q *Quote) string { return q.ID })
	return mine
}

// withdrawWaitingSubmissions ends the maker's quotes whose POST /maker/quotes still waits
// on the ledger prepares, in creation order: each submission is answered with refusal
// (a 409), and the quote goes as a refused one (no quote.created was sent; what landed is
// released).
func (a *applier) withdrawWaitingSubmissions(maker string, refusal *APIError) {
	waiting := a.makersQuotes(maker, func(q *Quote) bool { return q.State == QuoteFunding && q.ReqSeq != 0 })
	for _, q := range waiting {
		a.quoteFundingRefused(q, refusal)
	}
}
