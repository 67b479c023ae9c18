package sim

import (
	"testing"
	"time"
)

// run runs one seeded simulation and fails the test on a violation.
func run(t *testing.T, k Knobs) *Result {
	t.Helper()
	return runSim(t, newSim(t, k), k)
}

// newSim makes a simulation of k, failing the test if New refuses the knobs.
func newSim(t *testing.T, k Knobs) *Sim {
	t.Helper()
	s, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runSim runs s, made of k, and fails the test on a violation with the command that
// reproduces it and the trace written.
func runSim(t *testing.T, s *Sim, k Knobs) *Result {
	t.Helper()
	r := s.Run()
	if r.Failure != nil {
		path, err := r.WriteTrace(t.TempDir())
		t.Fatalf("%v\nreproduce: %s\ntrace: %s (%v)", r.Failure, k.Command(), path, err)
	}
	return r
}

// started makes a simulation of k and sets it going without running it, for a test that
// steps it itself.
func started(t *testing.T, k Knobs) *Sim {
	t.Helper()
	s := newSim(t, k)
	s.start()
	return s
}

func knobs(seed uint64, faults string, crash float64) Knobs {
	k := DefaultKnobs()
	k.Seed, k.Faults, k.CrashRate, k.Duration = seed, faults, crash, 90*time.Second
	k.Makers, k.Takers = 4, 2
	return k
}

// TestProfiles runs a short seeded simulation of each fault profile.
func TestProfiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults string
		crash  float64
	}{
		{"none", "none", 0},
		{"mild", "mild", 0.001},
		{"harsh", "harsh", 0.002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, knobs(11, tc.faults, tc.crash))
			if r.Stats.RFQs == 0 || r.Stats.Inputs == 0 {
				t.Fatalf("nothing happened: %+v", r.Stats)
			}
		})
	}
}

// TestDeterminism: the same seed gives the same run, a different seed another.
func TestDeterminism(t *testing.T) {
	k := knobs(5, "mild", 0.002)
	k.Duration = time.Minute
	a, b := run(t, k), run(t, k)
	if a.DeskDigest != b.DeskDigest || a.LedgerDigest != b.LedgerDigest || a.Stats.Events != b.Stats.Events || a.Steps != b.Steps {
		t.Fatalf("same seed, different runs:\n%s %s %d %d\n%s %s %d %d", a.DeskDigest, a.LedgerDigest, a.Stats.Events, a.Steps,
			b.DeskDigest, b.LedgerDigest, b.Stats.Events, b.Steps)
	}
	k.Seed = 6
	c := run(t, k)
	if c.DeskDigest == a.DeskDigest || c.LedgerDigest == a.LedgerDigest {
		t.Fatal("different seeds gave the same digests")
	}
}

// step runs the simulation's events up to virtual time until (without the liveness phase).
func step(t *testing.T, s *Sim, until time.Time) {
	t.Helper()
	for s.failure == nil {
		if len(s.q) == 0 || s.q[0].at.After(until) {
			break
		}
		e, _ := s.next()
		e.fn()
		s.steps++
		s.afterStep()
	}
	if s.failure != nil {
		t.Fatal(s.failure)
	}
}

// TestRecoveryRestoresDurableState: once both journals are synced, a crash and recovery
// through node.ReplayDesk (from a snapshot) and node.ReplayLedger rebuild exactly the same
// desk and ledger.
func TestRecoveryRestoresDurableState(t *testing.T) {
	k := knobs(3, "mild", 0)
	k.SnapshotEvery = 200
	s := started(t, k)
	for i := 1; i <= 4; i++ {
		step(t, s, Start.Add(time.Duration(i)*30*time.Second))
		s.syncDesk()
		s.syncLedger()
		wantDesk, err := s.desk.Digest()
		if err != nil {
			t.Fatal(err)
		}
		wantLedger := s.ledger.L.Digest()
		s.deskLog.Crash()
		s.ledLog.Crash()
		if err := s.recover(); err != nil {
			t.Fatal(err)
		}
		gotDesk, _ := s.desk.Digest()
		if gotDesk != wantDesk || s.ledger.L.Digest() != wantLedger {
			t.Fatalf("round %d: recovery changed the state", i)
		}
	}
	if s.cov[covRecoverFromSnapshot] == 0 {
		t.Fatal("no recovery used a snapshot")
	}
}

// TestCrashes: a run with frequent crashes at random steps survives them, with every
// acknowledged write intact and everything finished in the liveness phase.
func TestCrashes(t *testing.T) {
	k := knobs(9, "harsh", 0.01)
	k.Duration = time.Minute
	r := run(t, k)
	if r.Stats.Crashes < 3 {
		t.Fatalf("only %d crashes", r.Stats.Crashes)
	}
	if r.Coverage[covCheckpointVerified] == 0 && r.Coverage[covRecoverFromSnapshot] == 0 {
		t.Log("no checkpoint or snapshot met during recovery")
	}
}
