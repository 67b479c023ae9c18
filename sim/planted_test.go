//go:build planted

package sim

import (
	"strings"
	"testing"
	"time"
)

// plantedSeeds is the seed budget within which every planted bug must be caught.
const plantedSeeds = 20

// plantedCrashRate is the crash rate of the short runs that look for a planted bug: 0.01,
// except for a bug that shows only when a crash falls inside one group commit's window
// (lost-commit: the outputs left, the commit is a sync interval late). Measured on one-minute
// mild runs after coin selection and executes in flight changed the schedule: at 0.01, 6 of
// 80 seeds caught it, the first at seed 23; at 0.03, 12 of 80, the first at seed 5.
func plantedCrashRate(bug string) float64 {
	if bug == "lost-commit" {
		return 0.03
	}
	return 0.01
}

// TestPlantedBugsAreCaught shows the simulator has teeth: each planted bug, switched on,
// makes a short seeded run fail within plantedSeeds seeds.
//
//	go test -tags planted ./sim -run TestPlantedBugsAreCaught -v
func TestPlantedBugsAreCaught(t *testing.T) {
	eachPlanted(t, PlantedBugs, func(t *testing.T, bug bugEntry) {
		r := firstFailing(t, plantedSeeds, "mild", plantedCrashRate(bug.Name), time.Minute, nil)
		if r == nil {
			t.Fatalf("planted bug %s (%s) not caught within %d seeds", bug.Name, bug.What, plantedSeeds)
		}
		t.Logf("%s (%s) caught with seed %d: %v", bug.Name, bug.Where, r.Knobs.Seed, r.Failure)
	})
}

// bugEntry is an entry of PlantedBugs or OrphanBugs.
type bugEntry = struct{ Name, Where, What string }

// eachPlanted runs test as a subtest for each of the bugs, with that bug switched on.
func eachPlanted(t *testing.T, bugs []bugEntry, test func(t *testing.T, bug bugEntry)) {
	defer Plant("")
	for _, bug := range bugs {
		t.Run(bug.Name, func(t *testing.T) {
			Plant(bug.Name)
			defer Plant("")
			test(t, bug)
		})
	}
}

// firstFailing runs seeds 1 to seeds of a short simulation with the given faults, crash
// rate and duration, and returns the first run whose failure match accepts (any failure
// when match is nil), or nil when none of them failed so.
func firstFailing(t *testing.T, seeds uint64, faults string, crash float64, d time.Duration, match func(*Failure) bool) *Result {
	t.Helper()
	for seed := uint64(1); seed <= seeds; seed++ {
		k := knobs(seed, faults, crash)
		k.Duration = d
		if r := newSim(t, k).Run(); r.Failure != nil && (match == nil || match(r.Failure)) {
			return r
		}
	}
	return nil
}

// notReplayable are the planted bugs whose violation a trace cannot replay to (none:
// even lost-commit's, found by checking a crash's recovery against the replies the actors
// had received, replays from the observation the trace carries; TRACE.md lists the checks).
var notReplayable = map[string]bool{}

// foundByRead are the planted bugs only a read shows: their trace carries the read.
var foundByRead = map[string]bool{"mine-shows-funding": true}

// TestPlantedBugTracesReproduce: the trace a planted bug's failure writes replays, with
// the simulator's checks, to the same violation with the same message.
//
//	go test -tags planted ./sim -run TestPlantedBugTracesReproduce -v
func TestPlantedBugTracesReproduce(t *testing.T) {
	var replayable []bugEntry
	for _, bug := range PlantedBugs {
		if !notReplayable[bug.Name] {
			replayable = append(replayable, bug)
		}
	}
	eachPlanted(t, replayable, func(t *testing.T, bug bugEntry) {
		r := firstFailing(t, plantedSeeds, "mild", plantedCrashRate(bug.Name), time.Minute, nil)
		if r == nil {
			t.Fatalf("planted bug %s not caught within %d seeds", bug.Name, plantedSeeds)
		}
		c := mustReproduce(t, r)
		if foundByRead[bug.Name] && c.Reads != 1 {
			t.Fatalf("seed %d: a read found %s but the replay re-read %d reads", r.Knobs.Seed, bug.Name, c.Reads)
		}
		t.Logf("seed %d reproduced after %d inputs: %s", r.Knobs.Seed, c.Inputs, c.Violation.Message)
	})
}

// TestPlantedCrashRecoveryTraceReproduces: lost-commit's failures found by checking a
// crash's recovery against what the actors knew (a reply to an input the recovered journal
// lacks; an acknowledged key that no longer works) replay from the trace's acknowledged
// observation to the same violation. Which seeds fail which way moves whenever the actors
// change, so the test takes the first of a bounded range of seeds that fails each way.
//
// A lost key needs an acknowledged rotation or registration among the lost commits, which
// one-minute runs meet rarely: that case looks through more seeds (the first found was
// mild seed 176 when the stream resume, idempotency keys and tickets changed the actors).
func TestPlantedCrashRecoveryTraceReproduces(t *testing.T) {
	Plant("lost-commit")
	defer Plant("")
	for _, c := range []struct {
		want   string
		seeds  uint64
		faults []string
	}{
		{"but the recovered journal ends at", 64, []string{"none", "mild"}},
		{"does not work after recovery", 256, []string{"mild", "none"}},
	} {
		var found *Result
		for _, faults := range c.faults {
			if found == nil {
				found = firstFailing(t, c.seeds, faults, 0.01, time.Minute, func(f *Failure) bool {
					return f.Class == CrashRecovery && strings.Contains(f.Message, c.want)
				})
			}
		}
		if found == nil {
			t.Fatalf("no seed in 1..%d, with no faults or mild ones, fails with a crash-recovery failure %q", c.seeds, c.want)
		}
		mustReproduce(t, found)
	}
}
