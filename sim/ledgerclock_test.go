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
		m.LedgerSkew, m.LedgerDriftPPM = drawLedgerSkew(k)
		p := profiles[faults].max
		if m.LedgerSkew.Abs() > p.LedgerSkew || max(m.LedgerDriftPPM, -m.LedgerDriftPPM) > p.LedgerDriftPPM {
			t.Fatalf("draw %s %dppm outside the %s profile", m.LedgerSkew, m.LedgerDriftPPM, faults)
		}
		desk := ledgersim.NewManualClock(Start)
		c := newLedgerClock(desk, m, faults)
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
