package model

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// The maker scorecard (GET /maker/scorecard, GET /desk's makerStats) as docs/api.md
// defines it: per maker, one fact per RFQ that invited it, kept 7 days from the invitation
// (dropped when the maker is next invited) and at most 20,000 per maker; a window counts the
// facts invited within it, ending at the desk's time. The model keeps its own facts from
// the answers and frames it judged, and predicts every figure of every answer.

const (
	scoreRetention  = 7 * 24 * time.Hour // docs/api.md: 7 days from the invitation
	maxScoreFacts   = 20_000             // docs/api.md: at most 20,000 per maker
	statsMinInvites = 10                 // docs/api.md: makerStats after 10 invitations in 24h
	revokedByMaker  = "maker"            // docs/api.md: a revocation with no recorded reason
)

// scoreWindows are the windows docs/api.md allows.
var scoreWindows = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

// ScoreFact is what the model remembers of one RFQ for one invited maker.
type ScoreFact struct {
	RFQ       string         `json:"rfq"`
	At        time.Time      `json:"at"` // the RFQ's creation
	Quoted    bool           `json:"quoted,omitempty"`
	LatencyMs int64          `json:"latencyMs,omitempty"`
	Declined  bool           `json:"declined,omitempty"`
	Won       int            `json:"won,omitempty"`
	Settled   int            `json:"settled,omitempty"`
	Failed    map[string]int `json:"failed,omitempty"`
	Revoked   map[string]int `json:"revoked,omitempty"`
	Beaten    bool           `json:"beaten,omitempty"`
	// Distance is the lost distance in hundredths of a basis point, set with Beaten.
	Distance int64 `json:"distance,omitempty"`
}

// cloneScores deep-copies the makers' facts.
func cloneScores(src map[string][]ScoreFact) map[string][]ScoreFact {
	if src == nil {
		return nil
	}
	out := make(map[string][]ScoreFact, len(src))
	for k, fs := range src {
		c := slices.Clone(fs)
		for i := range c {
			c[i].Failed, c[i].Revoked = maps.Clone(c[i].Failed), maps.Clone(c[i].Revoked)
		}
		out[k] = c
	}
	return out
}

// scoreInvited records an RFQ created now for each maker it invites.
func (m *Model) scoreInvited(r *RFQ, at time.Time) {
	if m.st.Scores == nil {
		m.st.Scores = map[string][]ScoreFact{}
	}
	for _, mk := range r.Invited {
		fs := m.st.Scores[mk]
		keep := 0
		for keep < len(fs) && fs[keep].At.Before(at.Add(-scoreRetention)) {
			keep++
		}
		fs = fs[keep:]
		if len(fs) >= maxScoreFacts {
			fs = fs[len(fs)-maxScoreFacts+1:]
		}
		m.st.Scores[mk] = append(slices.Clip(fs), ScoreFact{RFQ: r.ID, At: at})
		m.touchScores(mk)
	}
}

// scoreFact finds the maker's fact about an RFQ, newest first.
func (m *Model) scoreFact(maker, rfq string) *ScoreFact {
	fs := m.st.Scores[maker]
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].RFQ == rfq {
			m.touchScores(maker) // the caller changes it
			return &fs[i]
		}
	}
	return nil
}

// scoreAnchored records a quote's anchoring now: the first on its RFQ makes it quoted.
func (m *Model) scoreAnchored(q *Quote, at time.Time) {
	if f := m.scoreFact(q.Maker, q.RFQ); f != nil && !f.Quoted {
		f.Quoted, f.LatencyMs = true, at.Sub(f.At).Milliseconds()
	}
}

// scoreDeclined records an accepted decline.
func (m *Model) scoreDeclined(rfq, maker string) {
	if f := m.scoreFact(maker, rfq); f != nil {
		f.Declined = true
	}
}

// scoreAccepted records an accept answered 202: a win for the quote's maker; for every
// other invited maker with an anchored quote on the RFQ, not yet beaten, the loss and its
// distance (its closest anchored price to the winning one).
func (m *Model) scoreAccepted(r *RFQ, q *Quote) {
	if f := m.scoreFact(q.Maker, r.ID); f != nil {
		f.Won++
	}
	win, _ := parseDec(q.Price)
	for _, mk := range r.Invited {
		f := m.scoreFact(mk, r.ID)
		if mk == q.Maker || f == nil || f.Beaten {
			continue
		}
		var best *big.Rat
		for _, id := range r.Quotes {
			o := m.st.Quotes[id]
			if o == nil || o.Maker != mk || !o.Anchored {
				continue
			}
			p, _ := parseDec(o.Price)
			d := new(big.Rat).Sub(p, win)
			d.Abs(d)
			if best == nil || d.Cmp(best) < 0 {
				best = d
			}
		}
		if best != nil {
			// |p − w| / w × 10,000 bps, in hundredths, rounded half up.
			x := new(big.Rat).Quo(new(big.Rat).Mul(best, big.NewRat(1_000_000, 1)), win)
			f.Beaten, f.Distance = true, roundHalfUp(x)
		}
	}
}

// roundHalfUp rounds a non-negative rational to the nearest integer, a half up.
func roundHalfUp(x *big.Rat) int64 {
	twice := new(big.Int).Mul(x.Num(), big.NewInt(2))
	twice.Add(twice, x.Denom())
	return new(big.Int).Quo(twice, new(big.Int).Mul(x.Denom(), big.NewInt(2))).Int64()
}

// scoreSettled records a trade's settlement.
func (m *Model) scoreSettled(t *Trade) {
	if f := m.scoreFact(t.Maker, t.RFQ); f != nil {
		f.Settled++
	}
}

// scoreFailed records a trade's failure with its reason.
func (m *Model) scoreFailed(t *Trade, reason string) {
	if f := m.scoreFact(t.Maker, t.RFQ); f != nil {
		if f.Failed == nil {
			f.Failed = map[string]int{}
		}
		f.Failed[reason]++
	}
}

// scoreRevoked records a quote that went revoked in this input, if docs/api.md counts it:
// anchored, not replaced by its maker's new quote (a submission on its RFQ by its maker in
// this input), and not the quote of a trade that failed in this input.
func (s *step) scoreRevoked(q *Quote) {
	m := s.m
	if !q.Anchored {
		return
	}
	in := s.env.Input
	if w, keyed := in.(machine.Idempotent); keyed {
		in = w.Cmd // a keyed re-quote is a re-quote
	}
	if c, ok := in.(machine.SubmitQuote); ok && c.RFQID == q.RFQ && s.caller != nil && s.caller.ID == q.Maker {
		return
	}
	if t := m.st.Trades[s.failedTrade[q.RFQ]]; t != nil && t.Quote == q.ID {
		return
	}
	if f := m.scoreFact(q.Maker, q.RFQ); f != nil {
		reason := q.RevokeReason
		if reason == "" {
			reason = revokedByMaker
		}
		if f.Revoked == nil {
			f.Revoked = map[string]int{}
		}
		f.Revoked[reason]++
	}
}

// scoreFigures are a window's figures, before rendering.
type scoreFigures struct {
	invited, quoted, declined, won, lost, settled int
	failed, revoked                               map[string]int
	latency, distance                             []int64
}

// countInvited counts one invitation: quoted (with its latency) or declined, won and
// settled; what makerStats shows and the scorecard starts from.
func (g *scoreFigures) countInvited(f *ScoreFact) {
	g.invited++
	if f.Quoted {
		g.quoted++
		g.latency = append(g.latency, f.LatencyMs)
	} else if f.Declined {
		g.declined++
	}
	g.won += f.Won
	g.settled += f.Settled
}

// figures computes the maker's figures over the facts invited at or after from.
func (m *Model) figures(maker string, from time.Time) scoreFigures {
	g := scoreFigures{failed: map[string]int{}, revoked: map[string]int{}}
	for _, f := range m.st.Scores[maker] {
		if f.At.Before(from) {
			continue
		}
		g.countInvited(&f)
		if f.Beaten && f.Won == 0 {
			g.lost++
			g.distance = append(g.distance, f.Distance)
		}
		if len(f.Failed) > 0 { // ranging over a nil map still costs an iterator
			for k, n := range f.Failed {
				g.failed[k] += n
			}
		}
		if len(f.Revoked) > 0 {
			for k, n := range f.Revoked {
				g.revoked[k] += n
			}
		}
	}
	slices.Sort(g.latency)
	slices.Sort(g.distance)
	return g
}

// rateText renders num ÷ den with 4 decimals, rounded half up; 0 when den is 0.
func rateText(num, den int) string {
	if den <= 0 {
		return "0.0000"
	}
	v := roundHalfUp(big.NewRat(int64(num)*10_000, int64(den)))
	return fmt.Sprintf("%d.%04d", v/10_000, v%10_000)
}

// rankText is the nearest-rank p-th percentile of sorted samples, "null" with none;
// decimals > 0 renders hundredths with two decimals.
func rankText(sorted []int64, p int, hundredths bool) string {
	if len(sorted) == 0 {
		return "null"
	}
	k := 1
	for k*100 < p*len(sorted) { // the smallest rank k with k ≥ p% of n
		k++
	}
	v := sorted[k-1]
	if hundredths {
		return fmt.Sprintf("%d.%02d", v/100, v%100)
	}
	return fmt.Sprint(v)
}

// byReasonText renders {"byReason": {...}} with sorted keys.
func byReasonText(by map[string]int) string {
	keys := slices.Sorted(maps.Keys(by))
	parts := make([]string, len(keys))
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		parts[i] = fmt.Sprintf("%s:%d", kb, by[k])
	}
	return `{"byReason":{` + strings.Join(parts, ",") + `}}`
}

// scorecardText is the answer docs/api.md requires, rendered.
func (g scoreFigures) scorecardText() string {
	return fmt.Sprintf(`{"invited":%d,"quoted":%d,"declined":%d,"responseRate":%s,"quoteLatencyMs":{"p50":%s,"p99":%s},`+
		`"won":%d,"lost":%d,"settled":%d,"failed":%s,"revoked":%s,"lostDistanceBps":{"p50":%s},"settleRate":%s}`,
		g.invited, g.quoted, g.declined, rateText(g.quoted, g.invited-g.declined), rankText(g.latency, 50, false), rankText(g.latency, 99, false),
		g.won, g.lost, g.settled, byReasonText(g.failed), byReasonText(g.revoked), rankText(g.distance, 50, true), rateText(g.settled, g.won))
}

// readScorecard judges GET /maker/scorecard by p: 400 for a window docs/api.md does not
// list, else exactly the caller's figures over the window ending at the desk's time.
func (m *Model) readScorecard(p *Party, q machine.QScorecard, rep machine.Reply) string {
	w, ok := scoreWindows[q.Window]
	if !ok {
		if rep.Status != 400 || rep.Err == nil {
			return fmt.Sprintf("window %q answered %s; docs/api.md says 400", q.Window, replyText(rep))
		}
		return ""
	}
	if rep.Status != 200 {
		return fmt.Sprintf("answered %s; the contract says 200", replyText(rep))
	}
	got, err := json.Marshal(rep.Body)
	if err != nil {
		return fmt.Sprintf("the body does not encode: %v", err)
	}
	if want := m.figures(p.ID, m.st.Now.Add(-w)).scorecardText(); string(got) != want {
		return fmt.Sprintf("window %s:\n got %s\nwant %s", q.Window, got, want)
	}
	return ""
}

// checkMakerStats compares GET /desk's makerStats with the model's.
func (m *Model) checkMakerStats(got []machine.MakerStatsDTO, listed []string) string {
	if got == nil {
		return "makerStats is absent (always present, [] when no maker qualifies)"
	}
	b, err := json.Marshal(got)
	if err != nil {
		return fmt.Sprintf("makerStats does not encode: %v", err)
	}
	if want := m.makerStatsText(listed); string(b) != want {
		return fmt.Sprintf("makerStats\n got %s\nwant %s", b, want)
	}
	return ""
}
