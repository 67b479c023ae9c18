package cputime

import (
	"testing"
	"time"
)

// TestSelfCountsWork: a busy loop of a few milliseconds shows as CPU time, and the reading
// never goes down.
func TestSelfCountsWork(t *testing.T) {
	before := Self()
	x := 0
	for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
		x++
	}
	after := Self()
	if after <= before || x == 0 {
		t.Fatalf("20ms of work: CPU time %v, then %v", before, after)
	}
}
