//go:build planted

package sim

import (
	"strings"
	"testing"
	"time"
)

// TestOrphanBugsAreCaught: each planted orphan bug fails a short crash-free run with harsh
// faults within plantedSeeds seeds, by the orphan invariant.
//
//	go test -tags planted ./sim -run TestOrphanBugsAreCaught -v
func TestOrphanBugsAreCaught(t *testing.T) {
	defer Plant("")
	for _, bug := range OrphanBugs {
		t.Run(bug.Name, func(t *testing.T) {
			Plant(bug.Name)
			defer Plant("")
			for seed := uint64(1); seed <= plantedSeeds; seed++ {
				// Harsh faults without crashes: the unknown outcomes some of them need.
				k := knobs(seed, "harsh", 0)
				k.Duration = 2 * time.Minute
				s, err := New(k)
				if err != nil {
					t.Fatal(err)
				}
				if r := s.Run(); r.Failure != nil {
					if !strings.Contains(r.Failure.Message, "orphan") {
						t.Fatalf("%s caught by another check: %v", bug.Name, r.Failure)
					}
					t.Logf("%s (%s) caught with seed %d: %v", bug.Name, bug.Where, seed, r.Failure)
					if c := replayWritten(t, r); !c.Reproduced() {
						t.Fatalf("seed %d: the trace does not replay to %q: %+v (violation %v)", seed, r.Failure.Message, c, c.Violation)
					}
					return
				}
			}
			t.Fatalf("planted bug %s (%s) not caught within %d seeds", bug.Name, bug.What, plantedSeeds)
		})
	}
}
