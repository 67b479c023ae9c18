package machine

import (
	"testing"

	"pgregory.net/rapid"
)

// TestFixedRoundTrip: parseFixed reads back exactly what formatFixed wrote, and a Rate and
// a Bps render as before formatFixed served both (0.6667, 12.05).
func TestFixedRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.Int64Range(0, 1<<50).Draw(t, "n")
		digits := rapid.SampledFrom([]int{2, 4}).Draw(t, "digits")
		s := string(formatFixed(n, digits))
		if back, err := parseFixed(s, digits); err != nil || back != n {
			t.Fatalf("%d with %d decimals wrote %s, read back %d (%v)", n, digits, s, back, err)
		}
	})
	for _, c := range []struct {
		v    any
		want string
	}{{Rate(6667), "0.6667"}, {Rate(10_000), "1.0000"}, {Rate(5), "0.0005"}, {Bps(1205), "12.05"}, {Bps(7), "0.07"}} {
		if got := mustJSON(t, c.v); got != c.want {
			t.Errorf("%#v renders %s, want %s", c.v, got, c.want)
		}
	}
}
