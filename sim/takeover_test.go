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
	s := newSim(t, k)
	r := runSim(t, s, k)
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
