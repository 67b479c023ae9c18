package machine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// scoreJSON reads the actor's scorecard over window and renders it as JSON.
func (h *harness) scoreJSON(a actor, window string) string {
	h.t.Helper()
	rep := h.read(a.key, QScorecard{Window: window})
	if rep.Status != 200 {
		h.t.Fatalf("scorecard %s: %d %+v", window, rep.Status, rep.Err)
	}
	b, err := json.Marshal(rep.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

// TestScorecardFigures: a won and settled RFQ, a lost one with its distance, a decline, a
// revocation and an unanswered invitation give exactly the documented figures; they stay
// the same once the RFQs behind them are forgotten, across a snapshot, and leave the 1h
// window after an hour while the 24h window keeps them.
func TestScorecardFigures(t *testing.T) {
	h := newHarness(t)
	a, b, c := h.maker("Alpha"), h.maker("Beta"), h.maker("Gamma")

	r1 := h.newRFQ(houseTaker, Sell, "1", 120, a, b, c)
	h.now = h.now.Add(2 * time.Second)
	qa := h.live(a, r1.RfqID, "60000")
	h.now = h.now.Add(3 * time.Second)
	h.live(b, r1.RfqID, "59000")
	h.ok(h.apply(DeclineRFQ{Req: c.req(), RFQID: r1.RfqID, Reason: "size"}), 204)
	h.accept(houseTaker, qa.QuoteID) // a house taker's trade settles at once

	h.now = h.now.Add(10 * time.Second)
	r2 := h.newRFQ(houseTaker, Sell, "1", 120, a, b)
	h.now = h.now.Add(4 * time.Second)
	q2 := h.live(a, r2.RfqID, "60100")
	h.now = h.now.Add(1 * time.Second)
	h.live(a, r2.RfqID, "60200") // a re-quote: quoted once, and no revocation
	h.ok(h.apply(DeleteQuote{Req: a.req(), QuoteID: h.d.makerQuoteOn(h.d.RFQs[r2.RfqID], a.id).ID}), 204)
	_ = q2

	wantA := `{"invited":2,"quoted":2,"declined":0,"responseRate":1.0000,"quoteLatencyMs":{"p50":2000,"p99":4000},` +
		`"won":1,"lost":0,"settled":1,"failed":{"byReason":{}},"revoked":{"byReason":{"maker":1}},"lostDistanceBps":{"p50":null},"settleRate":1.0000}`
	wantB := `{"invited":2,"quoted":1,"declined":0,"responseRate":0.5000,"quoteLatencyMs":{"p50":5000,"p99":5000},` +
		`"won":0,"lost":1,"settled":0,"failed":{"byReason":{}},"revoked":{"byReason":{}},"lostDistanceBps":{"p50":166.67},"settleRate":0.0000}`
	wantC := `{"invited":1,"quoted":0,"declined":1,"responseRate":0.0000,"quoteLatencyMs":{"p50":null,"p99":null},` +
		`"won":0,"lost":0,"settled":0,"failed":{"byReason":{}},"revoked":{"byReason":{}},"lostDistanceBps":{"p50":null},"settleRate":0.0000}`
	check := func(when string) {
		t.Helper()
		for _, x := range []struct {
			who  actor
			want string
		}{{a, wantA}, {b, wantB}, {c, wantC}} {
			if got := h.scoreJSON(x.who, "24h"); got != x.want {
				t.Fatalf("%s: %s's scorecard\n got %s\nwant %s", when, h.hint(x.who), got, x.want)
			}
		}
	}
	check("at once")
	h.advance(10 * time.Minute) // r2 expires
	h.advance(30 * time.Minute) // both RFQs are forgotten
	if len(h.d.RFQs) != 0 {
		t.Fatalf("%d RFQs still retained", len(h.d.RFQs))
	}
	check("after the RFQs were forgotten")
	h.d = roundTrip(t, h.d)
	check("after a snapshot")
	h.advance(30 * time.Minute)
	if got := h.scoreJSON(a, "1h"); !strings.HasPrefix(got, `{"invited":0,"quoted":0,`) {
		t.Fatalf("the 1h window after an hour and more: %s", got)
	}
	if got := h.scoreJSON(a, "7d"); got != wantA {
		t.Fatalf("the 7d window: %s", got)
	}
}

// TestScorecardFailed: a trade the ledger refused counts as won and failed by its reason,
// not as a revocation; settleRate is 0.
func TestScorecardFailed(t *testing.T) {
	w, _ := refusedSettle(t)
	w.h.flush()
	got := w.h.scoreJSON(w.mk, "24h")
	if !strings.Contains(got, `"won":1,"lost":0,"settled":0,"failed":{"byReason":{"`+reasonLedgerRefuse+`":1}},"revoked":{"byReason":{}}`) ||
		!strings.HasSuffix(got, `"settleRate":0.0000}`) {
		t.Fatalf("scorecard after a refused settle: %s", got)
	}
}

// TestScorecardRefusals: an unknown window is 400 and a key nobody holds 401 first; a
// party reads only its own scorecard.
func TestScorecardRefusals(t *testing.T) {
	h := newHarness(t)
	a := h.maker("Alpha")
	h.newRFQ(houseTaker, Sell, "1", 120, a)
	for _, w := range []string{"", "2h", "24H", "1d", " 24h"} {
		if rep := h.read(a.key, QScorecard{Window: w}); rep.Status != 400 || rep.Err == nil || rep.Err.Code != "" && rep.Err.Status != 400 {
			t.Fatalf("window %q answered %d %+v", w, rep.Status, rep.Err)
		}
	}
	if rep := h.read("nobody", QScorecard{Window: "7d"}); rep.Status != 401 {
		t.Fatalf("an unknown key answered %d", rep.Status)
	}
	if got := h.scoreJSON(houseTaker, "24h"); !strings.HasPrefix(got, `{"invited":0,`) {
		t.Fatalf("the taker sees %s, not its own (empty) scorecard", got)
	}
}

// TestMakerStats: GET /desk shows a maker's summary once it was invited
// MakerStatsMinInvites times within 24 hours, and not before, nor 24 hours later.
func TestMakerStats(t *testing.T) {
	h := newHarness(t)
	a, b := h.maker("Alpha"), h.maker("Beta")
	stats := func() []MakerStatsDTO { return h.read(houseTaker.key, QDesk{}).Body.(DeskDTO).MakerStats }
	for i := range MakerStatsMinInvites {
		if got := stats(); len(got) != 0 {
			t.Fatalf("makerStats after %d invitations: %+v", i, got)
		}
		r := h.newRFQ(houseTaker, Sell, "1", 120, a, b)
		if i%2 == 0 {
			h.now = h.now.Add(1500 * time.Millisecond)
			h.live(a, r.RfqID, "60000")
		}
		h.now = h.now.Add(time.Second)
	}
	got := stats()
	if len(got) != 2 || got[0].Maker != h.hint(a) || got[1].Maker != h.hint(b) {
		t.Fatalf("makerStats %+v", got)
	}
	j, _ := json.Marshal(got)
	want := `[{"maker":"` + h.hint(a) + `","responseRate":0.5000,"settleRate":0.0000,"quoteLatencyMsP50":1500},` +
		`{"maker":"` + h.hint(b) + `","responseRate":0.0000,"settleRate":0.0000,"quoteLatencyMsP50":null}]`
	if string(j) != want {
		t.Fatalf("makerStats\n got %s\nwant %s", j, want)
	}
	if own := h.read(a.key, QDesk{}).Body.(DeskDTO).MakerStats; len(own) != 1 || own[0].Maker != h.hint(b) {
		t.Fatalf("a maker's GET /desk shows %+v, want the other listed maker only", own)
	}
	h.advance(24 * time.Hour)
	if got := stats(); len(got) != 0 {
		t.Fatalf("makerStats a day later: %+v", got)
	}
}

// TestScorecardBounds: a maker's facts older than ScoreRetention go when it is next
// invited, and never more than MaxScoreFacts are kept.
func TestScorecardBounds(t *testing.T) {
	h := newHarness(t)
	a := h.maker("Alpha")
	h.newRFQ(houseTaker, Sell, "1", 120, a)
	h.advance(ScoreRetention + time.Minute)
	h.newRFQ(houseTaker, Sell, "1", 120, a)
	if n := len(h.d.Scorecards[a.id].Facts); n != 1 {
		t.Fatalf("%d facts kept, want the old one dropped", n)
	}
	sc := h.d.Scorecards[a.id]
	for i := 0; len(sc.Facts) < MaxScoreFacts; i++ {
		sc.Facts = append(sc.Facts, ScoreFact{RFQ: "rfq_fill", InvitedAt: h.now})
	}
	r := h.newRFQ(houseTaker, Sell, "1", 120, a)
	if n := len(sc.Facts); n != MaxScoreFacts || sc.Facts[n-1].RFQ != r.RfqID || sc.Facts[0].RFQ != "rfq_fill" {
		t.Fatalf("%d facts kept, want %d ending with the newest", n, MaxScoreFacts)
	}
}

// TestNearestRankAndRates: the nearest-rank percentile is the smallest sample with at least
// p% of the samples at or below it, the selection finds the same values as a sort in any
// order (duplicates included), and a rate is the rounded exact ratio in [0, 1].
func TestNearestRankAndRates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hi := rapid.SampledFrom([]int64{3, 1_000_000}).Draw(t, "range") // few values: many duplicates
		s := rapid.SliceOfN(rapid.Int64Range(0, hi), 1, 300).Draw(t, "samples")
		got := percentiles(slices.Clone(s), 1, 50, 99, 100)
		slices.Sort(s)
		for i, p := range []int{1, 50, 99, 100} {
			if want := nearestRank(s, p); *got[i] != *want {
				t.Fatalf("p%d selected %d, a sort says %d", p, *got[i], *want)
			}
		}
		for _, p := range []int{50, 99} {
			v := *nearestRank(s, p)
			atOrBelow := 0
			for _, x := range s {
				if x <= v {
					atOrBelow++
				}
			}
			if atOrBelow*100 < p*len(s) {
				t.Fatalf("p%d = %d has only %d of %d samples at or below it", p, v, atOrBelow, len(s))
			}
			for _, x := range s {
				below := 0
				for _, y := range s {
					if y <= x {
						below++
					}
				}
				if x < v && below*100 >= p*len(s) {
					t.Fatalf("p%d = %d, but the smaller sample %d already covers %d%%", p, v, x, p)
				}
			}
		}
		den := rapid.IntRange(0, 100_000).Draw(t, "den")
		num := rapid.IntRange(0, den).Draw(t, "num")
		r := int64(rate(num, den))
		if r < 0 || r > 10_000 || den == 0 && r != 0 {
			t.Fatalf("rate(%d, %d) = %d", num, den, r)
		}
		if den > 0 { // |r/10⁴ − num/den| ≤ 1/(2·10⁴)
			if diff := 2 * (r*int64(den) - int64(num)*10_000); diff > int64(den) || diff < -int64(den) {
				t.Fatalf("rate(%d, %d) = %d is not the rounded ratio", num, den, r)
			}
		}
		b, _ := Rate(r).MarshalJSON()
		var back Rate
		if err := back.UnmarshalJSON(b); err != nil || back != Rate(r) {
			t.Fatalf("rate %d renders %s, read back %d (%v)", r, b, back, err)
		}
	})
	if nearestRank(nil, 50) != nil {
		t.Fatal("a percentile of no sample is not null")
	}
}

// TestScorecardSnapshotVersions: a version 2 snapshot (golden bytes of a desk before the
// scorecard, holding a decline) restores with no scorecard and its declines, and encodes
// as version 3; version 4 is refused naming the versions read.
func TestScorecardSnapshotVersions(t *testing.T) {
	_, d := restoreGolden(t, "snapshot-v2-declines.bin")
	declines := 0
	for _, r := range d.RFQs {
		declines += len(r.Declines)
	}
	if len(d.Scorecards) != 0 || declines != 1 {
		t.Fatalf("version 2 restored %d scorecards and %d declines", len(d.Scorecards), declines)
	}
	v3 := reencodes(t, d, 2)
	if v3[len(snapshotMagic)] != snapshotVersion {
		t.Fatalf("re-encoded as version %d", v3[len(snapshotMagic)])
	}
	refusesNextVersion(t, v3)
}

// TestScorecardStatsCacheProperty: whatever invitations, outcomes and passing time, GET
// /desk's makerStats (kept between reads while a maker's facts and its window's first fact
// stay the same) equals the summary computed afresh from the facts.
func TestScorecardStatsCacheProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := &Desk{Now: t0, Cfg: testConfig(), Parties: map[string]*Party{}, RFQs: map[string]*RFQ{}}
		a := &applier{d: d, out: &Outputs{}}
		makers := []string{"m1", "m2", "m3"}
		for _, m := range makers {
			d.Parties[m] = &Party{ID: m, Hint: m + "-hint"}
		}
		var rfqs []*RFQ
		for i := range rapid.IntRange(1, 80).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0: // an RFQ inviting some makers
				n := rapid.IntRange(1, len(makers)).Draw(t, "invited")
				r := &RFQ{ID: fmt.Sprintf("rfq_%d", i), CreatedAt: d.Now, Invited: makers[:n]}
				d.RFQs[r.ID] = r
				rfqs = append(rfqs, r)
				a.scoreInvited(r)
			case 1: // an outcome on one of them
				if len(rfqs) == 0 {
					continue
				}
				r := rfqs[rapid.IntRange(0, len(rfqs)-1).Draw(t, "rfq")]
				m := r.Invited[rapid.IntRange(0, len(r.Invited)-1).Draw(t, "maker")]
				if f := d.scoreFact(m, r); f != nil {
					switch rapid.IntRange(0, 2).Draw(t, "outcome") {
					case 0:
						f.Quoted, f.LatencyMs = true, rapid.Int64Range(0, 9000).Draw(t, "latency")
					case 1:
						f.Won++
					default:
						f.Declined = true
					}
				}
			case 2: // time passes, up to more than a day
				d.Now = d.Now.Add(time.Duration(rapid.Int64Range(0, 30*3600).Draw(t, "seconds")) * time.Second)
			default:
				want := []MakerStatsDTO{}
				for _, m := range makers {
					if sc, n := scoreOver(d.Scorecards[m], d.Now.Add(-24*time.Hour)); n >= MakerStatsMinInvites {
						want = append(want, MakerStatsDTO{Maker: m + "-hint", ResponseRate: sc.ResponseRate, SettleRate: sc.SettleRate, QuoteLatencyMsP50: sc.QuoteLatencyMs.P50})
					}
				}
				got, _ := json.Marshal(d.makerStats(makers))
				if w, _ := json.Marshal(want); string(got) != string(w) {
					t.Fatalf("makerStats %s, computed afresh %s", got, w)
				}
			}
		}
	})
}
