//go:build planted

package sim

import (
	"testing"
	"time"
)

// plantedSeeds is the seed budget within which every planted bug must be caught.
const plantedSeeds = 20

// TestPlantedBugsAreCaught shows the simulator has teeth: each planted bug, switched on,
// makes a short seeded run fail within plantedSeeds seeds.
//
//	go test -tags planted ./sim -run TestPlantedBugsAreCaught -v
func TestPlantedBugsAreCaught(t *testing.T) {
	defer Plant("")
	for _, bug := range PlantedBugs {
		t.Run(bug.Name, func(t *testing.T) {
			Plant(bug.Name)
			defer Plant("")
			for seed := uint64(1); seed <= plantedSeeds; seed++ {
				k := knobs(seed, "mild", 0.01)
				k.Duration = time.Minute
				s, err := New(k)
				if err != nil {
					t.Fatal(err)
				}
				if r := s.Run(); r.Failure != nil {
					t.Logf("%s (%s) caught with seed %d: %v", bug.Name, bug.Where, seed, r.Failure)
					return
				}
			}
			t.Fatalf("planted bug %s (%s) not caught within %d seeds", bug.Name, bug.What, plantedSeeds)
		})
	}
}
