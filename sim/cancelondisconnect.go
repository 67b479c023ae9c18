package sim

import (
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/deskco/rfqdesk/machine"
)

// Cancel-on-disconnect in the simulation: about half the makers (drawn per actor) open
// their streams with ?cancelOnDisconnect=true, so the network's drops and the crashes
// (already simulated) take them offline with a marked socket. The model (sim/model,
// disconnect.go) predicts and judges every revocation; these are the coverage goals.
const (
	covDisconnectRevoked = "a disconnect revoked a live quote"
	covRestartRevoked    = "a restart revoked a marked party's quote"
	// The races of an accept and a disconnect's revoke (codRace): the accept arrives after
	// the revoke (the taker saw the quote live; it is answered 409, no longer available), or
	// the disconnect comes while the accept is under way: still preparing the taker's
	// allocations (the quote is live, so it is revoked and the accept fails 409), or
	// settling (the quote is left alone and the trade goes on).
	covCodAcceptAfterRevoke = "an accept came after a disconnect revoked its quote"
	covCodPreparingRevoked  = "a disconnect revoked a quote whose accept was preparing"
	covCodSettlingLeft      = "a disconnect left a settling quote alone"
)

// codCoverage lists cancel-on-disconnect's situations in report order.
var codCoverage = []string{covDisconnectRevoked, covRestartRevoked, covCodAcceptAfterRevoke, covCodPreparingRevoked,
	covCodSettlingLeft}

// codGoals are those a long run of several seeds must reach: when the mix drops streams, a
// drop that revoked a live quote and the three races of an accept with a disconnect's
// revoke (each met in most 1-hour harsh seeds, so a run of several meets them all); a
// restart that revoked a quote when the run crashes.
func codGoals(k Knobs, m Mix, runs int) []string {
	if runs < 2 {
		return nil
	}
	var goals []string
	if m.Disconnect > 0 {
		goals = append(goals, covDisconnectRevoked, covCodAcceptAfterRevoke, covCodPreparingRevoked, covCodSettlingLeft)
	}
	if k.CrashRate > 0 {
		goals = append(goals, covRestartRevoked)
	}
	return goals
}

// drawCancelOnDisconnect decides whether a maker marks its streams, from a generator of
// its own (seeded like the actor's), so that the actor's other draws stay as they were.
func drawCancelOnDisconnect(r role, seed uint64, idx int) bool {
	return r == roleMaker && rand.New(rand.NewPCG(seed, uint64(idx)^0xc0d)).IntN(2) == 0
}

// codCoverage counts what an input revoked for a disconnect: a quote.status revoked with
// reason disconnect to its maker, the quote live (the taker was told too) for a drop.
func (s *Sim) codCoverage(in machine.Input, out machine.Outputs, race codRace) {
	s.codRaceAfter(race)
	var maker, taker map[string]bool
	for _, e := range out.Events {
		p, ok := e.Payload.(machine.QuoteStatusPayload)
		if !ok || p.Status != "revoked" {
			continue
		}
		if p.Reason == machine.RevokeDisconnect {
			if maker == nil {
				maker = map[string]bool{}
			}
			maker[p.QuoteID] = true
		} else {
			if taker == nil {
				taker = map[string]bool{}
			}
			taker[p.QuoteID] = true
		}
	}
	if len(maker) == 0 {
		return
	}
	switch in.(type) {
	case machine.Boot:
		s.cov.hit(covRestartRevoked)
	case machine.SocketClosed:
		for id := range maker {
			if taker[id] {
				s.cov.hit(covDisconnectRevoked)
				return
			}
		}
	}
}

// codRace is what the desk looked like, before an input, for the races of an accept and a
// disconnect's revoke: the parties with marked sockets, and their quotes whose accept was
// under way.
type codRace struct {
	marked  map[string][]uint64 // party → its marked sockets
	online  map[string]int      // party → its Online
	accepts []codAccept
}

// codAccept is a marked party's quote whose accept was under way before the input.
type codAccept struct {
	quote, party string
	settling     bool // the trade's allocations were prepared: the quote was settling
}

// codRaceBefore observes the desk before in. An accept of a quote a disconnect revoked
// counts here; for an input that can take a party offline (a socket closing, a key
// rotation) it notes the marked parties' accepts under way, for codRaceAfter.
func (s *Sim) codRaceBefore(in machine.Input) codRace {
	switch c := in.(type) {
	case machine.AcceptQuote:
		if q, ok := s.desk.Quotes[c.QuoteID]; ok && q.State == machine.QuoteRevoked && q.RevokeReason == machine.RevokeDisconnect {
			s.cov.hit(covCodAcceptAfterRevoke)
		}
		return codRace{}
	case machine.SocketClosed, machine.RotateKey:
		// A restart's boot is no race: it undoes an accept under way (covRestartRevoked).
	default:
		return codRace{}
	}
	var r codRace
	for _, id := range slices.Sorted(maps.Keys(s.desk.Sockets)) {
		sk := s.desk.Sockets[id]
		if !sk.CancelOnDisconnect {
			continue
		}
		if r.marked == nil {
			r.marked, r.online = map[string][]uint64{}, map[string]int{}
		}
		r.marked[sk.PartyID] = append(r.marked[sk.PartyID], id)
		if p, ok := s.desk.Parties[sk.PartyID]; ok {
			r.online[sk.PartyID] = p.Online
		}
	}
	if r.marked == nil {
		return r
	}
	for _, t := range s.desk.Trades { // the order decides nothing: only counts come of it
		q, ok := s.desk.Quotes[t.Quote]
		if _, marked := r.marked[t.Maker]; !marked || !ok || (q.State != machine.QuoteLive && q.State != machine.QuoteSettling) {
			continue
		}
		if rfq, ok := s.desk.RFQs[t.RFQ]; ok && rfq.SettlingTrade == t.ID {
			r.accepts = append(r.accepts, codAccept{quote: q.ID, party: t.Maker, settling: q.State == machine.QuoteSettling})
		}
	}
	return r
}

// codRaceAfter counts the accepts under way that an input's disconnect met: the party went
// offline with a marked socket among those the input closed, and its quote was either
// revoked for the disconnect (the accept was preparing) or left settling.
func (s *Sim) codRaceAfter(r codRace) {
	for _, a := range r.accepts {
		p, ok := s.desk.Parties[a.party]
		if !ok || p.Online != 0 || r.online[a.party] == 0 {
			continue
		}
		dropped := false
		for _, id := range r.marked[a.party] {
			if _, open := s.desk.Sockets[id]; !open {
				dropped = true
			}
		}
		q, ok := s.desk.Quotes[a.quote]
		switch {
		case !dropped || !ok:
		case a.settling && q.State == machine.QuoteSettling:
			s.cov.hit(covCodSettlingLeft)
		case !a.settling && q.State == machine.QuoteRevoked && q.RevokeReason == machine.RevokeDisconnect:
			s.cov.hit(covCodPreparingRevoked)
		}
	}
}
