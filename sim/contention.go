package sim

import "github.com/deskco/rfqdesk/machine"

// Coverage of Canton's two ways a transaction's input is not there: locked by a
// transaction in flight (contention: retry) or archived since prepare (inactive: the
// prepared transaction can never commit).
const (
	covInputLocked   = "a ledger call refused: an input locked by a transaction in flight"
	covInputInactive = "an execute refused: an input archived since prepare"
	// covFromCompletions: a call that had taken effect before (a lost answer, a restart's
	// re-issue) answered with its first update, which the adapter found in the ledger's
	// completion stream.
	covFromCompletions = "a repeated call answered from the completion stream"
)

// noteInputContention counts the calls the ledger refused for either reason.
func (s *Sim) noteInputContention(res machine.LedgerResult) {
	if res.Failure == nil {
		return
	}
	switch res.Failure.Category {
	case machine.LedgerContention:
		s.cov.hit(covInputLocked)
	case machine.LedgerInactive:
		s.cov.hit(covInputInactive)
	}
}

// contentionGoals: a set of runs meets an archived input, and a locked one whenever a
// seed injects contention. The desk's own transactions never spend what another chose
// (coin selection, coinsel.go): an archived input comes from a maker spending outside the
// desk a holding its action names (maybeSpendOutside).
func contentionGoals(m Mix, runs int) []string {
	var goals []string
	if runs > 1 {
		goals = append(goals, covInputInactive)
	}
	if runs > 1 && m.UnknownOutcome > 0 {
		goals = append(goals, covFromCompletions) // the desk's re-send of a call whose outcome was unknown
	}
	if m.Contention > 0 {
		goals = append(goals, covInputLocked)
	}
	return goals
}

// noteAnsweredFromCompletions counts a successful answer whose update is older than the
// call (the ledger's end was before when it was sent): the ledger refused the repeat as a
// duplicate, or refused it otherwise, and the adapter learnt the first outcome from the
// completion stream.
func (s *Sim) noteAnsweredFromCompletions(res machine.LedgerResult, before int64) {
	if res.Failure != nil || res.UpdateID == "" {
		return
	}
	if u, err := s.ledger.L.Update(res.UpdateID); err == nil && u.Offset <= before {
		s.cov.hit(covFromCompletions)
	}
}
