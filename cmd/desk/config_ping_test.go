package main

import (
	"testing"
	"time"
)

// TestPingIntervalConfig: ping_interval defaults to 30s, a file sets it (the missed-pong
// test runs at 300ms), and a value outside minPingInterval..maxPingInterval (0s included,
// which the transport would otherwise take for its default) is refused with its key named.
func TestPingIntervalConfig(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       time.Duration
		wantErr    string
	}{
		{"default", "", 30 * time.Second, ""},
		{"short", "ping_interval = \"300ms\"\n", 300 * time.Millisecond, ""},
		{"at the minimum", "ping_interval = \"100ms\"\n", minPingInterval, ""},
		{"at the maximum", "ping_interval = \"10m\"\n", maxPingInterval, ""},
		{"zero", "ping_interval = \"0s\"\n", 0, "ping_interval"},
		{"below the minimum", "ping_interval = \"99ms\"\n", 0, "ping_interval"},
		{"negative", "ping_interval = \"-1s\"\n", 0, "ping_interval"},
		{"above the maximum", "ping_interval = \"10m1s\"\n", 0, "ping_interval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc, _, _, err := resolveConfig(t, c.file)
			if refused(t, err, c.wantErr) {
				return
			}
			if got := time.Duration(fc.PingInterval); got != c.want {
				t.Errorf("%s, want %s", got, c.want)
			}
		})
	}
}
