//go:build planted

package sim

import (
	"os"
	"testing"
)

// replayWritten writes a failed run's trace into a directory that does not exist yet and
// replays it with the standard judges.
func replayWritten(t *testing.T, r *Result) *Recheck {
	t.Helper()
	path, err := r.WriteTrace(t.TempDir() + "/not/yet/there")
	if err != nil {
		t.Fatalf("write the trace: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ReplayTrace(f, StandardJudges())
	if err != nil {
		t.Fatalf("replay %s: %v", path, err)
	}
	return c
}
