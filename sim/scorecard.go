package sim

import (
	"fmt"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// The maker scorecard (GET /maker/scorecard, GET /desk's makerStats) in the simulation: a
// maker reads its own scorecard now and then over a drawn window, and GET /desk after it;
// hostile actors ask for a window the desk does not know (400). The model (sim/model)
// predicts every figure of every answer; these are the coverage goals.
const (
	covScoreEveryField  = "a scorecard read with samples in every field"
	covScorePruned      = "a scorecard read after the RFQ behind a fact was pruned"
	covScoreStats       = "makerStats appeared for a maker"
	covScoreRestart     = "a scorecard read across a desk restart"
	covAdvScoreBadWindo = "adversary: a scorecard read with a window the desk does not know"
)

// scoreCoverage lists the scorecard's situations in report order.
var scoreCoverage = []string{covScoreEveryField, covScorePruned, covScoreStats, covScoreRestart, covAdvScoreBadWindo}

// scoreWindows are the windows an honest maker draws from.
var scoreWindows = []string{"1h", "24h", "7d"}

// scoreGoals are those a long run must reach: a read after a pruned RFQ and makerStats
// always; the rest (every field needs a failed trade and a loss in one maker's record, a
// restart needs crashes) over several seeds, the restart with crashes, the hostile class
// with adversaries.
func scoreGoals(k Knobs, runs int) []string {
	goals := []string{covScorePruned, covScoreStats}
	if runs > 1 {
		goals = append(goals, covScoreEveryField)
		if k.CrashRate > 0 {
			goals = append(goals, covScoreRestart)
		}
		if k.Adversaries > 0 {
			goals = append(goals, covAdvScoreBadWindo)
		}
	}
	return goals
}

// readScorecardSoon reads the maker's scorecard one wake-up in n.
func (a *actor) readScorecardSoon(n int) {
	if a.role == roleMaker && a.reg == regDone && !a.s.liveness && a.rng.IntN(n) == 0 {
		a.readScorecard(scoreWindows[a.rng.IntN(len(scoreWindows))])
	}
}

// readScorecard reads the actor's scorecard over window, then GET /desk.
func (a *actor) readScorecard(window string) {
	s := a.s
	a.read(a.keyHash, machine.QScorecard{Window: window}, func(rep machine.Reply) {
		sc, ok := rep.Body.(machine.ScorecardDTO)
		if rep.Err != nil || !ok {
			return
		}
		if sc.Invited > 0 && sc.Quoted > 0 && sc.Declined > 0 && sc.Won > 0 && sc.Lost > 0 && sc.Settled > 0 &&
			len(sc.Failed.ByReason) > 0 && len(sc.Revoked.ByReason) > 0 && sc.QuoteLatencyMs.P50 != nil && sc.LostDistanceBps.P50 != nil {
			s.cov.hit(covScoreEveryField)
		}
		s.scoreFactsCoverage(a.party, window)
	})
	a.read(a.keyHash, machine.QDesk{}, func(rep machine.Reply) {
		if d, ok := rep.Body.(machine.DeskDTO); ok && rep.Err == nil && len(d.MakerStats) > 0 {
			s.cov.hit(covScoreStats)
		}
	})
}

// scoreFactsCoverage counts what the facts behind a scorecard answer show (read from the
// desk for coverage only): one whose RFQ the desk forgot, one invited before the last
// restart.
func (s *Sim) scoreFactsCoverage(party, window string) {
	sc := s.desk.Scorecards[party]
	if sc == nil {
		return
	}
	w, _ := machine.ScoreWindow(window)
	from := s.desk.Now.Add(-w)
	pruned, restarted := false, false
	for _, f := range sc.Facts {
		if f.InvitedAt.Before(from) {
			continue
		}
		if _, ok := s.desk.RFQs[f.RFQ]; !ok {
			pruned = true
		}
		if !s.scoreBoot.IsZero() && f.InvitedAt.Before(s.scoreBoot) {
			restarted = true
		}
	}
	if pruned {
		s.cov.hit(covScorePruned)
	}
	if restarted {
		s.cov.hit(covScoreRestart)
	}
}

// scoreRestarted notes a restart, for the coverage of reads across it.
func (s *Sim) scoreRestarted(at time.Time) { s.scoreBoot = at }

// badScoreWindow: a scorecard read with a window the desk does not know: 400, whatever the
// caller's record.
func (h *hostile) badScoreWindow() bool {
	a := h.a
	w := []string{"", "2h", "1d", "24H", "7d ", "30d"}[a.rng.IntN(6)]
	h.read(a.keyHash, machine.QScorecard{Window: w}, &expectation{class: covAdvScoreBadWindo,
		what: fmt.Sprintf("GET /maker/scorecard?window=%q", w), want: one(400, "")})
	return true
}
