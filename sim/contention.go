package sim

import "github.com/deskco/rfqdesk/machine"

// Coverage of Canton's two ways a transaction's input is not there: locked by a
// transaction in flight (contention: retry) or archived since prepare (inactive: the
// prepared transaction can never commit).
const (
	covInputLocked   = "a ledger call refused: an input locked by a transaction in flight"
	covInputInactive = "an execute refused: an input archived since prepare"
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

// contentionGoals: a set of runs meets an archived input (makers' concurrent quotes and
// cancels spend what another prepared transaction chose), and a locked one whenever a
// seed injects contention.
func contentionGoals(m Mix, runs int) []string {
	var goals []string
	if runs > 1 {
		goals = append(goals, covInputInactive)
	}
	if m.Contention > 0 {
		goals = append(goals, covInputLocked)
	}
	return goals
}
