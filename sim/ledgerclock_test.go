package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgersim"
	"pgregory.net/rapid"
)

// TestLedgerClockLaws: the ledger's clock stays within its bound of the desk's, starts at
// the drawn skew, and never runs backwards while the desk's runs forwards (drift is far
// below one second per second), whatever the draw.
func TestLedgerClockLaws(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		faults := rapid.SampledFrom([]string{"none", "mild", "harsh"}).Draw(t, "faults")
		k := DefaultKnobs()
		k.Faults = faults
		k.Seed = rapid.Uint64().Draw(t, "seed")
		var m Mix
		m.LedgerSkew, m.LedgerDriftPPM, m.LedgerSkewBound = drawLedgerSkew(k)
		p := profiles[faults].max
		if m.LedgerSkew.Abs() > p.LedgerSkew || max(m.LedgerDriftPPM, -m.LedgerDriftPPM) > p.LedgerDriftPPM {
			t.Fatalf("draw %s %dppm outside the %s profile", m.LedgerSkew, m.LedgerDriftPPM, faults)
		}
		desk := ledgersim.NewManualClock(Start)
		c := newLedgerClock(desk, m)
		if got := c.Now().Sub(Start); got != m.LedgerSkew {
			t.Fatalf("at Start the ledger is %s ahead, want the drawn skew %s", got, m.LedgerSkew)
		}
		prev := c.Now()
		steps := rapid.SliceOfN(rapid.Int64Range(0, int64(48*time.Hour)), 1, 20).Draw(t, "steps")
		for _, step := range steps {
			desk.Advance(time.Duration(step))
			now := c.Now()
			if off := now.Sub(desk.Now()); off.Abs() > maxLedgerOffset(faults) {
				t.Fatalf("offset %s beyond the bound %s", off, maxLedgerOffset(faults))
			}
			if now.Before(prev) {
				t.Fatalf("the ledger's clock ran backwards: %s after %s", now, prev)
			}
			prev = now
		}
	})
}

// TestLedgerClockNoneIsExact: without faults the ledger reads the desk's time.
func TestLedgerClockNoneIsExact(t *testing.T) {
	k := DefaultKnobs()
	k.Faults = "none"
	m := drawMix(k, rand.New(rand.NewPCG(1, 2)))
	if m.LedgerSkew != 0 || m.LedgerDriftPPM != 0 {
		t.Fatalf("the none profile drew skew %s drift %d", m.LedgerSkew, m.LedgerDriftPPM)
	}
}

// TestLedgerClockMonotonicAcrossMilliseconds: a negative drift never steps the clock
// back where the elapsed time crosses a whole millisecond (a review found the first
// formula did, by up to the drift's ppm in nanoseconds).
func TestLedgerClockMonotonicAcrossMilliseconds(t *testing.T) {
	desk := ledgersim.NewManualClock(Start)
	c := newLedgerClock(desk, Mix{LedgerDriftPPM: -500, LedgerSkewBound: time.Hour})
	for _, at := range []time.Duration{999_999, 1_000_000, 1_999_999, 2_000_000, time.Hour - 1, time.Hour} {
		desk.Set(Start.Add(at - 1))
		before := c.Now()
		desk.Set(Start.Add(at))
		if now := c.Now(); now.Before(before) {
			t.Fatalf("from %s to %s after Start the ledger's clock ran back %s", at-1, at, before.Sub(now))
		}
	}
	desk.Set(Start.Add(time.Hour))
	if got, want := c.offset(desk.Now()), -time.Duration(3600*500)*time.Microsecond; got != want {
		t.Fatalf("after an hour at -500 ppm the offset is %s, want %s", got, want)
	}
}
