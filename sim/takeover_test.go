package sim

import (
	"testing"
	"time"
)

// TestTakeovers: in a run with frequent crashes, every second one is a standby's takeover;
// the zombie's late append, snapshot and prune are all refused, and the model and the
// invariants hold across it (the run passes).
func TestTakeovers(t *testing.T) {
	k := knobs(9, "harsh", 0.01)
	k.Duration = time.Minute
	s, err := New(k)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Run()
	if r.Failure != nil {
		path, err := r.WriteTrace(t.TempDir())
		t.Fatalf("%v\nreproduce: %s\ntrace: %s (%v)", r.Failure, k.Command(), path, err)
	}
	if s.takeovers == 0 || s.takeovers != r.Stats.Crashes/2 {
		t.Fatalf("%d takeovers in %d crashes", s.takeovers, r.Stats.Crashes)
	}
	if r.Coverage[covZombieFenced] == 0 {
		t.Fatal("no zombie was fenced")
	}
	if r.Coverage[covStandbyCurrent] == 0 {
		t.Fatal("no standby was caught up and compared")
	}
}
