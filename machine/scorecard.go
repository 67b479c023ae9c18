package machine

import (
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"time"
)

// The maker scorecard: GET /maker/scorecard?window=1h|24h|7d and GET /desk's makerStats.
//
// The desk keeps, per maker, one ScoreFact for every RFQ that invited it, and updates it in
// place as the RFQ's story goes on (the maker quoted, declined, won, lost, its trade settled
// or failed, a quote of its was revoked). The facts outlive the RFQs, which are forgotten
// after their readability period, and are bounded: a maker's facts whose invitation is
// older than ScoreRetention are dropped when it is next invited, and past MaxScoreFacts
// the oldest goes first. Every time is an input's time; nothing reads a clock.
//
// Window membership is by the RFQ's creation time (when rfq.created was sent to the
// maker): an RFQ invited inside the window counts with every outcome it has had, whenever
// that came. The window ends at the desk's time (the time of the last input applied), so
// an answer is a function of the journaled facts alone.

const (
	// ScoreRetention is how long the desk keeps a maker's facts about an RFQ, from its
	// invitation: the longest window.
	ScoreRetention = 7 * 24 * time.Hour
	// MaxScoreFacts bounds the facts kept per maker. A maker invited more often than that
	// within ScoreRetention loses its oldest facts first: its figures then cover its newest
	// MaxScoreFacts invitations only.
	MaxScoreFacts = 20_000
	// MakerStatsMinInvites is how many invitations within the last 24 hours a maker needs
	// before GET /desk shows its makerStats.
	MakerStatsMinInvites = 10
	// makerStatsWindow is the window of GET /desk's makerStats.
	makerStatsWindow = 24 * time.Hour
	// revokedByMaker names, in revoked.byReason, a revocation with no recorded reason: the
	// maker's own DELETE, its mass cancel, its decline of the RFQ.
	revokedByMaker = "maker"
)

// ScoreWindow is the length of a window GET /maker/scorecard accepts (1h, 24h or 7d);
// false for any other.
func ScoreWindow(name string) (time.Duration, bool) {
	switch name {
	case "1h":
		return time.Hour, true
	case "24h":
		return 24 * time.Hour, true
	case "7d":
		return ScoreRetention, true
	}
	return 0, false
}

// DefaultScoreWindow is the window of a GET /maker/scorecard without one.
const DefaultScoreWindow = "24h"

// ScoreFact is what the desk remembers of one RFQ for one maker it invited.
type ScoreFact struct {
	RFQ       string    `json:"rfq"`
	InvitedAt time.Time `json:"invitedAt"` // the RFQ's creation time
	// Quoted is set at the maker's first anchored quote on the RFQ; LatencyMs is then the
	// time from the invitation to that quote.anchored, in milliseconds.
	Quoted    bool  `json:"quoted,omitempty"`
	LatencyMs int64 `json:"latencyMs,omitempty"`
	Declined  bool  `json:"declined,omitempty"`
	// Won counts the accepts of its quotes on the RFQ (a trade that failed may be followed
	// by another accept), Settled those whose trade settled, Failed the failed ones by reason.
	Won     int           `json:"won,omitempty"`
	Settled int           `json:"settled,omitempty"`
	Failed  []ReasonCount `json:"failed,omitempty"`
	// Revoked counts its anchored quotes on the RFQ that were revoked, by reason (a quote
	// replaced by the maker's newer quote is not counted).
	Revoked []ReasonCount `json:"revoked,omitempty"`
	// Beaten is set at the first accept of another maker's quote while the maker had an
	// anchored quote on the RFQ; LostCentiBps is then the distance of its closest such
	// quote from the winning price, in hundredths of a basis point.
	Beaten       bool  `json:"beaten,omitempty"`
	LostCentiBps int64 `json:"lostCentiBps,omitempty"`
}

// ReasonCount is a count under a reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	N      int    `json:"n"`
}

// Scorecard is a maker's facts, by invitation time, oldest first.
type Scorecard struct {
	Facts []ScoreFact `json:"facts"`

	// gen counts the changes of Facts since the desk was built or restored, and stats is
	// the 24-hour summary GET /desk showed last, kept while gen and the window's first fact
	// stay the same: GET /desk then costs a binary search per maker whose facts did not
	// change, not a pass over up to MaxScoreFacts of them. Neither is state: a snapshot
	// leaves them out, and a restored desk computes the summary again.
	gen   uint64
	stats *cachedStats
}

// cachedStats is a maker's 24-hour scorecard as of a generation of its facts.
type cachedStats struct {
	gen   uint64
	first int // the index of the window's first fact
	sc    ScorecardDTO
}

// lost reports whether the fact counts as lost: it quoted, another maker's quote was
// accepted, and none of its own was.
func (f *ScoreFact) lost() bool { return f.Beaten && f.Won == 0 }

// addReason counts one more under reason, keeping the list sorted by reason.
func addReason(list []ReasonCount, reason string) []ReasonCount {
	i := sort.Search(len(list), func(i int) bool { return list[i].Reason >= reason })
	if i < len(list) && list[i].Reason == reason {
		list[i].N++
		return list
	}
	return slices.Insert(list, i, ReasonCount{Reason: reason, N: 1})
}

// scorecard returns the maker's scorecard, creating it.
func (d *Desk) scorecard(maker string) *Scorecard { return entryOf(&d.Scorecards, maker) }

// scoreFact finds the maker's fact about RFQ r, or nil (it was dropped, or the RFQ
// predates the scorecard).
func (d *Desk) scoreFact(maker string, r *RFQ) *ScoreFact {
	sc := d.Scorecards[maker]
	if sc == nil || r == nil {
		return nil
	}
	sc.gen++ // the caller may change the fact it gets
	i := sort.Search(len(sc.Facts), func(i int) bool { return !sc.Facts[i].InvitedAt.Before(r.CreatedAt) })
	for ; i < len(sc.Facts) && sc.Facts[i].InvitedAt.Equal(r.CreatedAt); i++ {
		if sc.Facts[i].RFQ == r.ID {
			return &sc.Facts[i]
		}
	}
	return nil
}

// scoreInvited records a new RFQ's invitations, dropping each maker's facts that are past
// ScoreRetention or over MaxScoreFacts.
func (a *applier) scoreInvited(r *RFQ) {
	for _, m := range r.Invited {
		sc := a.d.scorecard(m)
		cut := a.d.Now.Add(-ScoreRetention)
		drop := sort.Search(len(sc.Facts), func(i int) bool { return !sc.Facts[i].InvitedAt.Before(cut) })
		if over := len(sc.Facts) + 1 - MaxScoreFacts; over > drop {
			drop = over
		}
		if drop > 0 {
			sc.Facts = slices.Delete(sc.Facts, 0, drop)
		}
		sc.Facts = append(sc.Facts, ScoreFact{RFQ: r.ID, InvitedAt: r.CreatedAt})
		sc.gen++
	}
}

// scoreQuoted records the maker's first anchored quote on its RFQ.
func (a *applier) scoreQuoted(q *Quote) {
	r := a.d.RFQs[q.RFQ]
	if f := a.d.scoreFact(q.Maker, r); f != nil && !f.Quoted {
		f.Quoted, f.LatencyMs = true, a.d.Now.Sub(r.CreatedAt).Milliseconds()
	}
}

// scoreDeclined records the maker's decline of r.
func (a *applier) scoreDeclined(r *RFQ, maker string) {
	if f := a.d.scoreFact(maker, r); f != nil {
		f.Declined = true
	}
}

// scoreAccepted records an accept of quote q (its trade answered): a win for its maker,
// and for every other maker with an anchored quote on the RFQ the first beating, with its
// distance from the winning price.
func (a *applier) scoreAccepted(q *Quote) {
	r := a.d.RFQs[q.RFQ]
	if f := a.d.scoreFact(q.Maker, r); f != nil {
		f.Won++
	}
	if r == nil {
		return
	}
	for _, m := range r.Invited {
		if m == q.Maker {
			continue
		}
		f := a.d.scoreFact(m, r)
		if f == nil || f.Beaten {
			continue
		}
		best, found := int64(0), false
		for _, id := range r.Quotes {
			if o := a.d.Quotes[id]; o != nil && o.Maker == m && o.Anchored {
				if dist := distanceCentiBps(o, q); !found || dist < best {
					best, found = dist, true
				}
			}
		}
		if found {
			f.Beaten, f.LostCentiBps = true, best
		}
	}
}

// distanceCentiBps is |price − winning price| / winning price × 10,000 in hundredths of a
// basis point, computed exactly and rounded half up (away from zero) to the hundredth.
func distanceCentiBps(q, winner *Quote) int64 {
	p, ok1 := new(big.Rat).SetString(q.Price.String())
	w, ok2 := new(big.Rat).SetString(winner.Price.String())
	if !ok1 || !ok2 || w.Sign() <= 0 {
		return 0
	}
	x := new(big.Rat).Sub(p, w)
	x.Abs(x)
	x.Mul(x, big.NewRat(1_000_000, 1)) // bps × 100
	x.Quo(x, w)
	// round half up: floor(x + 1/2)
	x.Add(x, big.NewRat(1, 2))
	n := new(big.Int).Quo(x.Num(), x.Denom())
	if !n.IsInt64() {
		return 1<<63 - 1
	}
	return n.Int64()
}

// scoreSettled records a settled trade.
func (a *applier) scoreSettled(t *Trade) {
	if f := a.d.scoreFact(t.Maker, a.d.RFQs[t.RFQ]); f != nil {
		f.Settled++
	}
}

// scoreFailed records a failed trade and its reason.
func (a *applier) scoreFailed(t *Trade, reason string) {
	if f := a.d.scoreFact(t.Maker, a.d.RFQs[t.RFQ]); f != nil {
		f.Failed = addReason(f.Failed, reason)
	}
}

// scoreRevoked records the revocation (by t) of an anchored quote. A quote replaced by the
// maker's newer quote is not a revocation here (the maker still quotes), nor one whose
// trade failed (counted under failed), nor one the taker never saw.
func (a *applier) scoreRevoked(q *Quote, t Trigger, replaced bool) {
	if t != TrigRevoke || q.State != QuoteRevoked || !q.Anchored || replaced {
		return
	}
	if f := a.d.scoreFact(q.Maker, a.d.RFQs[q.RFQ]); f != nil {
		reason := q.RevokeReason
		if reason == "" {
			reason = revokedByMaker
		}
		f.Revoked = addReason(f.Revoked, reason)
	}
}

// ---- Reads ----

// QScorecard is GET /maker/scorecard?window=W: the caller's own scorecard.
type QScorecard struct{ Window string }

func (QScorecard) queryName() string { return "maker.scorecard" }

// Rate is a ratio in [0, 1] in ten-thousandths, rendered as a JSON number with four
// decimals (0.6667). It is not money: it is computed from integers and rounded half up.
type Rate int64

// MarshalJSON renders the rate as a JSON number with four decimals.
func (r Rate) MarshalJSON() ([]byte, error) {
	return formatFixed(int64(r), 4), nil
}

// UnmarshalJSON reads a rate rendered by MarshalJSON.
func (r *Rate) UnmarshalJSON(b []byte) error {
	v, err := parseFixed(string(b), 4)
	*r = Rate(v)
	return err
}

// Bps is a distance in hundredths of a basis point, rendered as a JSON number with two
// decimals (12.35).
type Bps int64

// MarshalJSON renders the distance as a JSON number with two decimals.
func (b Bps) MarshalJSON() ([]byte, error) {
	return formatFixed(int64(b), 2), nil
}

// UnmarshalJSON reads a distance rendered by MarshalJSON.
func (b *Bps) UnmarshalJSON(s []byte) error {
	v, err := parseFixed(string(s), 2)
	*b = Bps(v)
	return err
}

// formatFixed renders n (not negative) ten-thousandths (digits 4) or hundredths (digits 2)
// as a decimal with exactly that many decimals: what parseFixed reads.
func formatFixed(n int64, digits int) []byte {
	scale := int64(1)
	for range digits {
		scale *= 10
	}
	return fmt.Appendf(nil, "%d.%0*d", n/scale, digits, n%scale)
}

// parseFixed reads a non-negative decimal with at most digits decimals as an integer
// scaled by 10^digits.
func parseFixed(s string, digits int) (int64, error) {
	whole, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			whole, frac = s[:i], s[i+1:]
			break
		}
	}
	if len(frac) > digits {
		return 0, fmt.Errorf("%q has more than %d decimals", s, digits)
	}
	for len(frac) < digits {
		frac += "0"
	}
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a non-negative fixed-point number", s)
	}
	return n, nil
}

// rate is num ÷ den as a Rate, rounded half up; 0 when den is 0.
func rate(num, den int) Rate {
	if den <= 0 {
		return 0
	}
	return Rate((int64(num)*20_000 + int64(den)) / (2 * int64(den)))
}

// LatencyDTO is quoteLatencyMs: nearest-rank percentiles, null with no sample.
type LatencyDTO struct {
	P50 *int64 `json:"p50"`
	P99 *int64 `json:"p99"`
}

// ByReasonDTO counts outcomes by reason.
type ByReasonDTO struct {
	ByReason map[string]int `json:"byReason"`
}

// DistanceDTO is lostDistanceBps: the nearest-rank median, null with no sample.
type DistanceDTO struct {
	P50 *Bps `json:"p50"`
}

// ScorecardDTO answers GET /maker/scorecard.
type ScorecardDTO struct {
	Invited         int         `json:"invited"`
	Quoted          int         `json:"quoted"`
	Declined        int         `json:"declined"`
	ResponseRate    Rate        `json:"responseRate"`
	QuoteLatencyMs  LatencyDTO  `json:"quoteLatencyMs"`
	Won             int         `json:"won"`
	Lost            int         `json:"lost"`
	Settled         int         `json:"settled"`
	Failed          ByReasonDTO `json:"failed"`
	Revoked         ByReasonDTO `json:"revoked"`
	LostDistanceBps DistanceDTO `json:"lostDistanceBps"`
	SettleRate      Rate        `json:"settleRate"`
}

// MakerStatsDTO is an element of GET /desk's makerStats.
type MakerStatsDTO struct {
	Maker             string `json:"maker"` // the maker's hint
	ResponseRate      Rate   `json:"responseRate"`
	SettleRate        Rate   `json:"settleRate"`
	QuoteLatencyMsP50 *int64 `json:"quoteLatencyMsP50"`
}

// nearestRank is the p-th percentile of sorted samples by the nearest-rank method (the
// smallest sample with at least p% of the samples at or below it); nil with no sample.
func nearestRank(sorted []int64, p int) *int64 {
	if len(sorted) == 0 {
		return nil
	}
	v := sorted[rankOf(len(sorted), p)]
	return &v
}

// rankOf is the index, in ascending order, of the nearest-rank p-th percentile of n > 0
// samples: ceil(p/100 × n) − 1.
func rankOf(n, p int) int { return max((p*n+99)/100, 1) - 1 }

// percentiles returns the nearest-rank p-th percentiles of samples, for ascending ps
// (nil each with no sample). It reorders samples: a selection, not a sort, so that a read
// over a maker's MaxScoreFacts facts costs a pass or two over them rather than a sort.
func percentiles(samples []int64, ps ...int) []*int64 {
	out := make([]*int64, len(ps))
	if len(samples) == 0 {
		return out
	}
	// From the highest rank down: selecting rank k leaves every sample at or below it in
	// samples[:k+1], where the lower ranks are then selected.
	hi := len(samples)
	for i := len(ps) - 1; i >= 0; i-- {
		k := rankOf(len(samples), ps[i])
		v := selectKth(samples[:hi], k)
		out[i], hi = &v, k+1
	}
	return out
}

// selectKth reorders s so that s[k] is the value a sort would put there, every element
// before it no greater and every one after no smaller, and returns it: quickselect with a
// median-of-three pivot, deterministic, falling back to a sort after 64 rounds so that no
// input makes it quadratic.
func selectKth(s []int64, k int) int64 {
	lo, hi := 0, len(s)-1
	for round := 0; lo < hi; round++ {
		if round == 64 {
			slices.Sort(s[lo : hi+1])
			break
		}
		mid := lo + (hi-lo)/2
		if s[mid] < s[lo] {
			s[mid], s[lo] = s[lo], s[mid]
		}
		if s[hi] < s[lo] {
			s[hi], s[lo] = s[lo], s[hi]
		}
		if s[hi] < s[mid] {
			s[hi], s[mid] = s[mid], s[hi]
		}
		pivot := s[mid]
		i, j := lo, hi
		for i <= j { // Hoare partition: s[lo:i] ≤ pivot ≤ s[j+1:hi+1]
			for s[i] < pivot {
				i++
			}
			for s[j] > pivot {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return s[k] // between j and i: equal to the pivot
		}
	}
	return s[k]
}

// scoreOver computes a maker's scorecard over the facts invited at or after from.
func scoreOver(sc *Scorecard, from time.Time) (ScorecardDTO, int) {
	out := ScorecardDTO{Failed: ByReasonDTO{ByReason: map[string]int{}}, Revoked: ByReasonDTO{ByReason: map[string]int{}}}
	if sc == nil {
		return out, 0
	}
	i := sort.Search(len(sc.Facts), func(i int) bool { return !sc.Facts[i].InvitedAt.Before(from) })
	facts := sc.Facts[i:]
	lat, dist := make([]int64, 0, len(facts)), []int64(nil)
	for k := range facts {
		f := &facts[k] // not a copy of each fact: a read walks up to MaxScoreFacts of them
		out.Invited++
		switch {
		case f.Quoted:
			out.Quoted++
			lat = append(lat, f.LatencyMs)
		case f.Declined:
			out.Declined++ // an RFQ declined and then quoted counts as quoted
		}
		out.Won += f.Won
		out.Settled += f.Settled
		if f.lost() {
			out.Lost++
			dist = append(dist, f.LostCentiBps)
		}
		for _, x := range f.Failed {
			out.Failed.ByReason[x.Reason] += x.N
		}
		for _, x := range f.Revoked {
			out.Revoked.ByReason[x.Reason] += x.N
		}
	}
	latP := percentiles(lat, 50, 99)
	out.QuoteLatencyMs = LatencyDTO{P50: latP[0], P99: latP[1]}
	if p := percentiles(dist, 50)[0]; p != nil {
		b := Bps(*p)
		out.LostDistanceBps.P50 = &b
	}
	out.ResponseRate = rate(out.Quoted, out.Invited-out.Declined)
	out.SettleRate = rate(out.Settled, out.Won)
	return out, out.Invited
}

// scorecard answers GET /maker/scorecard: the caller's own figures over the window ending
// at the desk's time.
func (r reader) scorecard(q QScorecard) Reply {
	w, ok := ScoreWindow(q.Window)
	if !ok {
		return Reply{Status: 400, Err: badRequest("window must be one of 1h, 24h, 7d")}
	}
	out, _ := scoreOver(r.d.Scorecards[r.p.ID], r.d.Now.Add(-w))
	return ok200(out)
}

// makerStats lists the public summary of the given parties (ids) that were invited at
// least MakerStatsMinInvites times within the last 24 hours, by hint.
func (d *Desk) makerStats(parties []string) []MakerStatsDTO {
	out := []MakerStatsDTO{}
	for _, id := range parties {
		sc, ok := d.scoreOver24h(id)
		if !ok {
			continue
		}
		out = append(out, MakerStatsDTO{
			Maker: d.hintOf(id), ResponseRate: sc.ResponseRate, SettleRate: sc.SettleRate,
			QuoteLatencyMsP50: sc.QuoteLatencyMs.P50,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Maker < out[j].Maker })
	return out
}

// scoreOver24h is the maker's 24-hour scorecard, if it was invited often enough to show:
// the one computed last while its facts and the window's first fact are the same.
func (d *Desk) scoreOver24h(id string) (ScorecardDTO, bool) {
	sc := d.Scorecards[id]
	if sc == nil {
		return ScorecardDTO{}, false
	}
	from := d.Now.Add(-makerStatsWindow)
	first := sort.Search(len(sc.Facts), func(i int) bool { return !sc.Facts[i].InvitedAt.Before(from) })
	if c := sc.stats; c == nil || c.gen != sc.gen || c.first != first {
		out, _ := scoreOver(sc, from)
		sc.stats = &cachedStats{gen: sc.gen, first: first, sc: out}
	}
	return sc.stats.sc, sc.stats.sc.Invited >= MakerStatsMinInvites
}

// ---- Snapshot ----

// writeScorecards writes the scorecards section (snapshot version 3): the makers' count,
// then per maker in ascending id order its facts.
func writeScorecards(e *encoder, m map[string]*Scorecard) {
	writePtrMap(e, m, func(e *encoder, sc *Scorecard) {
		writeSlice(e, sc.Facts, func(e *encoder, f *ScoreFact) {
			e.Str(f.RFQ)
			e.Time(f.InvitedAt)
			e.Bool(f.Quoted)
			e.Varint(f.LatencyMs)
			e.Bool(f.Declined)
			e.Int(f.Won)
			e.Int(f.Settled)
			writeReasons(e, f.Failed)
			writeReasons(e, f.Revoked)
			e.Bool(f.Beaten)
			e.Varint(f.LostCentiBps)
		})
		e.FlushSome()
	})
}

func writeReasons(e *encoder, rs []ReasonCount) {
	writeSlice(e, rs, func(e *encoder, x *ReasonCount) { e.Str(x.Reason); e.Int(x.N) })
}

func readReasons(d *decoder) []ReasonCount {
	return readSlice(d, func(d *decoder) ReasonCount { return ReasonCount{Reason: d.Str(), N: d.Int()} })
}

// readScorecards reads the section written by writeScorecards.
func readScorecards(dec *decoder) map[string]*Scorecard {
	return readMap(dec, (*decoder).Str, func(dec *decoder) *Scorecard {
		return &Scorecard{Facts: readSlice(dec, func(d *decoder) ScoreFact {
			return ScoreFact{
				RFQ: d.Str(), InvitedAt: d.Time(), Quoted: d.Bool(), LatencyMs: d.Varint(),
				Declined: d.Bool(), Won: d.Int(), Settled: d.Int(), Failed: readReasons(d),
				Revoked: readReasons(d), Beaten: d.Bool(), LostCentiBps: d.Varint(),
			}
		})}
	})
}
