package node

import (
	"runtime/debug"
	"testing"
)

// TestApplyGCPercent: the desk's collector target applies unless GOGC is set.
func TestApplyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		gogc string
		want int
	}{
		{"", DefaultGCPercent},
		{"150", 100}, // the environment's choice is the runtime's already: left alone
	} {
		debug.SetGCPercent(100)
		ApplyGCPercent(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("GOGC=%q: collector target %d, want %d", tc.gogc, got, tc.want)
		}
	}
}
