package model

import (
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// The scorecard judged against the real desk in lockstep: invitations, a decline, the
// maker's scorecard in each window and the takers' GET /desk with makerStats once the
// maker was invited ten times. Then the model must call each of a desk's plausible
// mistakes a divergence: a wrong count, a rate not rounded as documented, a percentile
// where there is no sample, a bad window answered, and makerStats missing or shown early.
func TestScorecardInLockstep(t *testing.T) {
	w := newDeskWorld(t, []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 10}})
	read := func(key string, q machine.Query) machine.Reply {
		t.Helper()
		rep := machine.Read(w.d, w.now, key, q)
		if err := w.m.Read(w.now, key, q, rep); err != nil {
			t.Fatalf("%T %+v: %v", q, q, err)
		}
		return rep
	}
	judge := func(key string, q machine.Query, rep machine.Reply) error {
		return w.m.Clone().Read(w.now, key, q, rep)
	}

	first := w.rfq(takerKey, "1", 60).Body.(machine.RfqDTO)
	if rep := w.apply(machine.DeclineRFQ{Req: machine.Req{KeyHash: makerKey}, RFQID: first.RfqID, Reason: "size"}); rep == nil || rep.Status != 204 {
		t.Fatalf("decline: %+v", rep)
	}
	for range 8 {
		w.rfq(takerKey, "1", 60)
	}
	for _, win := range []string{"1h", "24h", "7d"} {
		sc := read(makerKey, machine.QScorecard{Window: win}).Body.(machine.ScorecardDTO)
		if sc.Invited != 9 || sc.Declined != 1 || sc.Quoted != 0 || sc.QuoteLatencyMs.P50 != nil {
			t.Fatalf("%s: %+v", win, sc)
		}
	}
	if stats := read(takerKey, machine.QDesk{}).Body.(machine.DeskDTO).MakerStats; len(stats) != 0 {
		t.Fatalf("makerStats after 9 invitations: %+v", stats)
	}
	w.rfq(takerKey, "1", 60)
	desk := read(takerKey, machine.QDesk{})
	if stats := desk.Body.(machine.DeskDTO).MakerStats; len(stats) != 1 || stats[0].Maker != "maker-one" {
		t.Fatalf("makerStats after 10 invitations: %+v", stats)
	}
	if rep := read(makerKey, machine.QScorecard{Window: "2h"}); rep.Status != 400 {
		t.Fatalf("window 2h: %+v", rep)
	}

	q := machine.QScorecard{Window: "24h"}
	good := machine.Read(w.d, w.now, makerKey, q)
	wrong := func(what string, change func(*machine.ScorecardDTO)) {
		t.Helper()
		sc := good.Body.(machine.ScorecardDTO)
		change(&sc)
		if err := judge(makerKey, q, machine.Reply{Status: 200, Body: sc}); err == nil || !strings.Contains(err.Error(), "want") {
			t.Fatalf("%s: the model did not object (%v)", what, err)
		}
	}
	wrong("a declined RFQ counted as invited only", func(sc *machine.ScorecardDTO) { sc.Declined = 0 })
	wrong("responseRate not 0 with no quote", func(sc *machine.ScorecardDTO) { sc.ResponseRate = 1 })
	wrong("a latency without a sample", func(sc *machine.ScorecardDTO) { v := int64(0); sc.QuoteLatencyMs.P50 = &v })
	wrong("a revocation that never was", func(sc *machine.ScorecardDTO) { sc.Revoked.ByReason = map[string]int{"maker": 1} })
	if err := judge(makerKey, machine.QScorecard{Window: "30d"}, good); err == nil {
		t.Fatal("a 200 to window 30d: the model did not object")
	}
	d := desk.Body.(machine.DeskDTO)
	d.MakerStats = []machine.MakerStatsDTO{}
	if err := judge(takerKey, machine.QDesk{}, machine.Reply{Status: 200, Body: d}); err == nil {
		t.Fatal("makerStats without the maker invited 10 times: the model did not object")
	}
}
