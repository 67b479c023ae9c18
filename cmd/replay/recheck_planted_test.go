//go:build planted

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/sim"
)

// TestPlantedTraceReplaysReproduced: a planted bug fails a run; replay -trace on the trace
// it writes (into a directory that does not exist yet) says "reproduced: <the run's
// message>" and exits with status 3.
//
//	go test -tags planted ./cmd/replay -run TestPlantedTraceReplaysReproduced -v
func TestPlantedTraceReplaysReproduced(t *testing.T) {
	defer sim.Plant("")
	for _, bug := range []string{"no-fee", "cancel-keeps-lock", "replace-funds-first", "mine-shows-funding", "lost-commit"} {
		t.Run(bug, func(t *testing.T) {
			sim.Plant(bug)
			defer sim.Plant("")
			for seed := uint64(1); seed <= 20; seed++ {
				k := simKnobs(seed, time.Minute, 4, 2, 1, "mild", 0.01, 0)
				s, err := sim.New(k)
				if err != nil {
					t.Fatal(err)
				}
				r := s.Run()
				if r.Failure == nil || r.Failure.Machinery() {
					continue // a trace does not replay a failure of the simulator's own machinery
				}
				path, err := r.WriteTrace(t.TempDir() + "/traces/new")
				if err != nil {
					t.Fatal(err)
				}
				var out, errb bytes.Buffer
				if got := run([]string{"-trace", path}, &out, &errb); got != exitReproduced {
					t.Fatalf("seed %d: status %d, want %d\n%s%s", seed, got, exitReproduced, out.String(), errb.String())
				}
				if want := "reproduced: " + r.Failure.Message + "\n"; !strings.Contains(out.String(), want) {
					t.Fatalf("seed %d: report lacks %q:\n%s", seed, want, out.String())
				}
				// The inputs that led to it, as transcripts print them, come before it.
				if tail := strings.Index(out.String(), "desk inputs before it, as transcripts print them:\n  input "); tail < 0 ||
					tail > strings.Index(out.String(), "reproduced: ") {
					t.Fatalf("seed %d: no transcript of the last inputs before the violation:\n%s", seed, out.String())
				}
				if !strings.Contains(out.String(), "the trace's final digest matches") {
					t.Fatalf("seed %d: the trace does not rebuild the state the run ended with:\n%s", seed, out.String())
				}
				t.Logf("seed %d:\n%s", seed, out.String())
				return
			}
			t.Fatalf("planted bug %s not caught within 20 seeds", bug)
		})
	}
}

// TestPlantedCrashRecoveryTraceReplaysReproduced: lost-commit failing the check of a crash's
// recovery writes a trace with the actors' observation, which replay reads and reproduces.
func TestPlantedCrashRecoveryTraceReplaysReproduced(t *testing.T) {
	sim.Plant("lost-commit")
	defer sim.Plant("")
	for seed := uint64(1); seed <= 40; seed++ {
		s, err := sim.New(simKnobs(seed, time.Minute, 4, 2, 1, "mild", 0.01, 0))
		if err != nil {
			t.Fatal(err)
		}
		r := s.Run()
		if r.Failure == nil || r.Failure.Class != sim.CrashRecovery {
			continue
		}
		path, err := r.WriteTrace(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if got := run([]string{"-trace", path}, &out, &errb); got != exitReproduced ||
			!strings.Contains(out.String(), "reproduced: "+r.Failure.Message+"\n") {
			t.Fatalf("seed %d: status %d, want %d and the run's message\n%s%s", seed, got, exitReproduced, out.String(), errb.String())
		}
		return
	}
	t.Fatal("lost-commit failed no crash recovery within 40 seeds")
}
