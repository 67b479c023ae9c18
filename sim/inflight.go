package sim

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
)

// Submissions in flight: the ledger keeps each execute in flight for the seed's
// sequencing delay (Mix.Sequencing) between its sequencing and its commit, on the virtual
// clock. The adapter begins it when the call reaches the ledger and the simulator commits
// it after the delay (a crash meanwhile loses it: the ledger it flew on is gone); calls
// that arrive in between meet its locked inputs (contention) or its command in flight (a
// concurrent duplicate, which the desk hears as an unknown outcome and resolves from the
// completion stream).
const (
	covLockedByFlight = "an execute refused: an input locked by an execute in flight"
	covDupInFlight    = "a repeated execute met its submission in flight"
	covFlightLost     = "an execute in flight lost in a crash"
)

// maxSequencing bounds the sequencing delay a profile may draw.
var maxSequencing = map[string]time.Duration{"mild": 500 * time.Millisecond, "harsh": 3 * time.Second}

// drawSequencing draws a seed's sequencing delay from its own stream (so that no other
// draw of the mix moves): uniform up to the profile's bound, none with probability 1/4.
func drawSequencing(k Knobs) time.Duration {
	limit := maxSequencing[k.Faults]
	rng := rand.New(rand.NewPCG(k.Seed, 0x5e9))
	if limit <= 0 || rng.IntN(4) == 0 {
		return 0
	}
	return time.Duration(1 + rng.Int64N(int64(limit)))
}

// beginLedger starts a call on the ledger: an execute goes in flight and commits after the
// sequencing delay, when done is called with its result; every other call (and an execute
// refused at once) is answered now. It reports whether the call is in flight.
func (s *Sim) beginLedger(c machine.LedgerCall, done func(machine.LedgerResult)) bool {
	f, res := s.ledger.Begin(context.Background(), c)
	s.noteFlightRefusal(res)
	if f == nil {
		done(res)
		return false
	}
	ad := s.ledger
	s.after(s.ledger.L.Config().SequencingDelay, func() { s.land(ad, f, done) })
	return true
}

// land commits an execute in flight, unless the ledger it flew on crashed since.
func (s *Sim) land(ad *ledgeradapter.Adapter, f *ledgeradapter.InFlight, done func(machine.LedgerResult)) {
	if s.ledger != ad {
		f.Abandon()
		s.cov.hit(covFlightLost)
		return
	}
	done(f.Finish())
}

// noteFlightRefusal counts the refusals an execute in flight caused, told apart from the
// fault plan's injected ones by the ledger's words.
func (s *Sim) noteFlightRefusal(res machine.LedgerResult) {
	f := res.Failure
	if f == nil {
		return
	}
	switch {
	case f.Category == machine.LedgerContention && strings.Contains(f.Message, "locked by a transaction in flight"):
		s.cov.hit(covLockedByFlight)
	case f.Category == machine.LedgerUnknownOutcome && strings.Contains(f.Message, "submission already in flight"):
		s.cov.hit(covDupInFlight)
	}
}

// flightGoals: with a sequencing delay, a set of runs meets an input locked by an execute
// in flight (two prepared transactions of one maker that chose one holding) and, with
// crashes, a re-issued execute meeting the stale one in flight.
func flightGoals(k Knobs, m Mix, runs int) []string {
	if m.Sequencing <= 0 || runs <= 1 {
		return nil
	}
	goals := []string{covLockedByFlight}
	if k.CrashRate > 0 {
		goals = append(goals, covDupInFlight)
	}
	return goals
}
