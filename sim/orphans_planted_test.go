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
	eachPlanted(t, OrphanBugs, func(t *testing.T, bug bugEntry) {
		// Harsh faults without crashes: the unknown outcomes some of them need.
		r := firstFailing(t, plantedSeeds, "harsh", 0, 2*time.Minute, nil)
		if r == nil {
			t.Fatalf("planted bug %s (%s) not caught within %d seeds", bug.Name, bug.What, plantedSeeds)
		}
		if !strings.Contains(r.Failure.Message, "orphan") {
			t.Fatalf("%s caught by another check: %v", bug.Name, r.Failure)
		}
		t.Logf("%s (%s) caught with seed %d: %v", bug.Name, bug.Where, r.Knobs.Seed, r.Failure)
		mustReproduce(t, r)
	})
}
