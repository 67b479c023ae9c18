package sim

import (
	"slices"
	"testing"
)

// TestCodRaceGoals: the races of an accept with a disconnect's revoke are required of runs
// of several seeds whose mix drops streams, never of one seed or of a mix without drops.
func TestCodRaceGoals(t *testing.T) {
	races := []string{covCodAcceptAfterRevoke, covCodPreparingRevoked, covCodSettlingLeft}
	for _, c := range []struct {
		runs       int
		disconnect float64
		want       bool
	}{{1, 0.01, false}, {4, 0, false}, {2, 0.01, true}, {4, 0.01, true}} {
		goals := codGoals(Knobs{}, Mix{Disconnect: c.disconnect}, c.runs)
		for _, r := range races {
			if slices.Contains(goals, r) != c.want {
				t.Errorf("runs %d, disconnect %g: goal %q required %v, want %v", c.runs, c.disconnect, r, !c.want, c.want)
			}
		}
		if !slices.Contains(codCoverage, races[0]) || !slices.Contains(codCoverage, races[2]) {
			t.Fatal("the races are not in the report's list")
		}
	}
}
