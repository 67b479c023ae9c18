//go:build planted

package sim

import "testing"

// replayWritten writes a failed run's trace into a directory that does not exist yet and
// replays it with the standard judges.
func replayWritten(t *testing.T, r *Result) *Recheck {
	t.Helper()
	return writeAndReplay(t, r, StandardJudges())
}

// mustReproduce is replayWritten that fails the test unless the trace replays to the
// run's violation with the same message.
func mustReproduce(t *testing.T, r *Result) *Recheck {
	t.Helper()
	c := replayWritten(t, r)
	if !c.Reproduced() {
		t.Fatalf("seed %d: the trace does not replay to %q: %+v (violation %v)", r.Knobs.Seed, r.Failure.Message, c, c.Violation)
	}
	return c
}
