package machine

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkScorecardReads measures the reads the scorecard costs the loop at its bound:
// makers each holding MaxScoreFacts facts within the last 24 hours (every one quoted, a
// third won, a tenth lost), read as GET /maker/scorecard (one maker, 7d) and as GET /desk's
// makerStats (every maker, 24h), when every maker's facts changed since the last GET /desk
// and when none did.
func BenchmarkScorecardReads(b *testing.B) {
	for _, makers := range []int{1, 10, 50} {
		d := &Desk{Now: t0.Add(24 * time.Hour), Scorecards: map[string]*Scorecard{}}
		var ids []string
		for m := range makers {
			id := fmt.Sprintf("maker-%02d", m)
			ids = append(ids, id)
			sc := &Scorecard{Facts: make([]ScoreFact, MaxScoreFacts)}
			for i := range sc.Facts {
				f := &sc.Facts[i]
				f.RFQ, f.InvitedAt = fmt.Sprintf("rfq_%d", i), d.Now.Add(-time.Duration(MaxScoreFacts-i)*time.Second)
				f.Quoted, f.LatencyMs = true, int64((i*7919)%5000)
				if i%3 == 0 {
					f.Won, f.Settled = 1, 1
				} else if i%10 == 1 {
					f.Beaten, f.LostCentiBps = true, int64((i*104729)%100000)
				}
			}
			d.Scorecards[id] = sc
		}
		b.Run(fmt.Sprintf("scorecard-7d/makers=%d", makers), func(b *testing.B) {
			for b.Loop() {
				scoreOver(d.Scorecards[ids[0]], d.Now.Add(-ScoreRetention))
			}
		})
		b.Run(fmt.Sprintf("makerStats-changed/makers=%d", makers), func(b *testing.B) {
			for b.Loop() {
				for _, id := range ids {
					d.Scorecards[id].gen++ // every maker's facts changed since the last read
				}
				d.makerStats(ids)
			}
		})
		b.Run(fmt.Sprintf("makerStats-unchanged/makers=%d", makers), func(b *testing.B) {
			d.makerStats(ids)
			for b.Loop() {
				d.makerStats(ids)
			}
		})
	}
}
