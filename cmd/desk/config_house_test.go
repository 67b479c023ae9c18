package main

import (
	"testing"
)

// TestHouseConfig covers the [[house]] keys: strategy knobs, their checks, drawn keys, and
// that a file's house list replaces the default one rather than merging into it.
func TestHouseConfig(t *testing.T) {
	cases := []struct {
		name, file string
		wantErr    string // "" for success
		makers     int    // house makers running the strategy
	}{
		{"default has one strategy maker", "", "", 1},
		{"file list replaces the default", "[[house]]\nname = \"t\"\nrole = \"taker\"\napi_key = \"0123456789abcdef\"\n", "", 0},
		{"strategy maker with knobs", "[[house]]\nname = \"m\"\nrole = \"maker\"\nstrategy = true\nspread_bps = 5\nmax_share_bps = 10000\n", "", 1},
		{"unknown key refused", "[[house]]\nname = \"m\"\nrole = \"maker\"\nstrategy = true\nspred_bps = 5\n", "unknown key(s): house.spred_bps", 0},
		{"knob without strategy", "[[house]]\nname = \"m\"\nrole = \"maker\"\nspread_bps = 5\n", "need strategy = true", 0},
		{"strategy on a taker", "[[house]]\nname = \"t\"\nrole = \"taker\"\nstrategy = true\n", "needs role", 0},
		{"spread out of range", "[[house]]\nname = \"m\"\nrole = \"maker\"\nstrategy = true\nspread_bps = 6000\n", "spread of 6000 bps", 0},
		{"share out of range", "[[house]]\nname = \"m\"\nrole = \"maker\"\nstrategy = true\nmax_share_bps = 0\n", "max share of 0 bps", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fc, _, _, err := resolveConfig(t, c.file)
			if refused(t, err, c.wantErr) {
				return
			}
			n := 0
			for _, h := range fc.House {
				if h.Strategy {
					n++
				}
			}
			if n != c.makers {
				t.Fatalf("%d strategy makers, want %d: %+v", n, c.makers, fc.House)
			}
		})
	}
	// Without a drawn-key source, a house table with no key is refused as before.
	if _, _, err := defaultConfig().resolve(func(string) string { return "" }, nil); err == nil {
		t.Fatal("a house party without a key resolved without a key source")
	}
}
