package sim

import (
	"math/rand/v2"

	"github.com/deskco/rfqdesk/machine"
)

// Cancel-on-disconnect in the simulation: about half the makers (drawn per actor) open
// their streams with ?cancelOnDisconnect=true, so the network's drops and the crashes
// (already simulated) take them offline with a marked socket. The model (sim/model,
// disconnect.go) predicts and judges every revocation; these are the coverage goals.
const (
	covDisconnectRevoked = "a disconnect revoked a live quote"
	covRestartRevoked    = "a restart revoked a marked party's quote"
)

// codCoverage lists cancel-on-disconnect's situations in report order.
var codCoverage = []string{covDisconnectRevoked, covRestartRevoked}

// codGoals are those a long run of several seeds must reach: a drop that revoked a live
// quote when the mix drops streams, and a restart that revoked one when the run crashes.
func codGoals(k Knobs, m Mix, runs int) []string {
	if runs < 2 {
		return nil
	}
	var goals []string
	if m.Disconnect > 0 {
		goals = append(goals, covDisconnectRevoked)
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
func (s *Sim) codCoverage(in machine.Input, out machine.Outputs) {
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
