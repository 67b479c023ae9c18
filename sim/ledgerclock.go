package sim

import (
	"math/rand/v2"
	"time"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// ledgerClock is the ledger's record time in a simulation. On Canton the sequencer, not
// the desk, stamps a transaction's record time, and the ledger checks an allocation's
// deadlines against it; the two clocks never agree exactly. ledgerClock reads the
// simulated time the desk reads, shifted by an offset that starts at Mix.LedgerSkew and
// drifts by Mix.LedgerDriftPPM millionths of every simulated second since Start, never
// further than bound from the desk's time. Integer arithmetic only, so that a replay of
// the trace reads the same times on every machine.
type ledgerClock struct {
	desk     *ledgersim.ManualClock
	skew     time.Duration
	driftPPM int64
	bound    time.Duration
}

// newLedgerClock is the ledger's clock of a run with mix m (which carries its bound, so
// that a trace replays the same times whatever the profiles say later).
func newLedgerClock(desk *ledgersim.ManualClock, m Mix) *ledgerClock {
	return &ledgerClock{desk: desk, skew: m.LedgerSkew, driftPPM: m.LedgerDriftPPM, bound: m.LedgerSkewBound}
}

// maxLedgerOffset bounds the ledger clock's offset under a fault profile: twice the
// profile's largest initial skew (drift takes a long run that far and stops there).
func maxLedgerOffset(faults string) time.Duration { return 2 * profiles[faults].max.LedgerSkew }

// Now is the ledger's record time: the desk's time plus the offset.
func (c *ledgerClock) Now() time.Time {
	t := c.desk.Now()
	return t.Add(c.offset(t))
}

// offset is how far the ledger's clock is ahead of the desk's at desk time t (negative:
// behind).
func (c *ledgerClock) offset(t time.Time) time.Duration {
	e := int64(t.Sub(Start))
	// Whole milliseconds and the rest apart: exact to the nanosecond and monotonic in t
	// (dividing first alone would step back at each millisecond under a negative drift).
	drift := e/1_000_000*c.driftPPM + e%1_000_000*c.driftPPM/1_000_000
	return min(max(c.skew+time.Duration(drift), -c.bound), c.bound)
}

// drawLedgerSkew draws a seed's ledger clock offset and drift within the profile's
// maxima, each switched off with probability 1/4, from a stream of its own (so that the
// other draws of a seed keep their values); the bound is the profile's.
func drawLedgerSkew(k Knobs) (skew time.Duration, driftPPM int64, bound time.Duration) {
	p := profiles[k.Faults].max
	rng := rand.New(rand.NewPCG(k.Seed, 0x5ce3))
	if p.LedgerSkew > 0 && rng.IntN(4) != 0 {
		skew = time.Duration(rng.Int64N(2*int64(p.LedgerSkew)+1)) - p.LedgerSkew
	}
	if p.LedgerDriftPPM > 0 && rng.IntN(4) != 0 {
		driftPPM = rng.Int64N(2*p.LedgerDriftPPM+1) - p.LedgerDriftPPM
	}
	return skew, driftPPM, maxLedgerOffset(k.Faults)
}

// Coverage of the two clocks disagreeing across an allocation's deadline.
const (
	covSkewLedgerAhead  = "the ledger's clock refused an allocation the desk's clock still allowed"
	covSkewLedgerBehind = "the ledger's clock allowed an allocation the desk's clock had passed"
)

// maxWatchedDeadlines bounds the prepared allocations whose deadline the simulator
// remembers until their execute; past it, those whose deadline is a minute gone leave.
const maxWatchedDeadlines = 4096

// noteDeadlineSkew counts the calls whose allocation the ledger judged by its own clock
// differently from the desk's: call c answered res at the current step.
func (s *Sim) noteDeadlineSkew(c machine.LedgerCall, res machine.LedgerResult) {
	var deadline time.Time
	switch {
	case c.Op == machine.OpPrepare && c.Command != nil && c.Command.Allocate != nil:
		if res.Failure == nil && res.PreparedID != "" {
			s.watchDeadline(res.PreparedID, c.Command.Allocate.AllocateBefore)
		}
		return
	case c.Op == machine.OpSubmit && c.Command != nil && c.Command.Allocate != nil:
		deadline = c.Command.Allocate.AllocateBefore
	case c.Op == machine.OpExecute:
		d, ok := s.deadlines[c.PreparedID]
		if !ok {
			return
		}
		delete(s.deadlines, c.PreparedID)
		deadline = d
	default:
		return
	}
	if deadline.IsZero() {
		return
	}
	desk, ledger := s.clock.Now(), s.ledgerClock.Now()
	switch {
	case res.Failure != nil && res.Failure.Category == machine.LedgerExpired && desk.Before(deadline) && !ledger.Before(deadline):
		s.cov.hit(covSkewLedgerAhead)
	case res.Failure == nil && ledger.Before(deadline) && !desk.Before(deadline):
		s.cov.hit(covSkewLedgerBehind)
	}
}

// watchDeadline remembers a prepared allocation's deadline until its execute.
func (s *Sim) watchDeadline(preparedID string, deadline time.Time) {
	if s.deadlines == nil {
		s.deadlines = map[string]time.Time{}
	}
	if len(s.deadlines) >= maxWatchedDeadlines {
		cutoff := s.clock.Now().Add(-time.Minute)
		for id, d := range s.deadlines { // deletion only: the order decides nothing
			if d.Before(cutoff) {
				delete(s.deadlines, id)
			}
		}
		if len(s.deadlines) >= maxWatchedDeadlines {
			return
		}
	}
	s.deadlines[preparedID] = deadline
}

// skewGoals are the clock-skew goals a set of runs must reach: both directions once the
// seeds drew a skew or drift. A seed meets them only now and then, and only in the
// direction its draw points, so they are required of ten runs or more (make sim runs a
// hundred; 4 harsh half-hour seeds missed one of them).
func skewGoals(m Mix, runs int) []string {
	if runs < 10 || (m.LedgerSkew == 0 && m.LedgerDriftPPM == 0) {
		return nil
	}
	return []string{covSkewLedgerAhead, covSkewLedgerBehind}
}
