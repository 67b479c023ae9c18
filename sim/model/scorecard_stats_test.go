package model

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// makerStatsUncached is makerStatsText as it was before the cache: every row computed
// from figures on every read. The cached rows must always equal it.
func (m *Model) makerStatsUncached(listed []string) string {
	type row struct{ hint, text string }
	var rows []row
	for _, id := range listed {
		g := m.figures(id, m.st.Now.Add(-24*time.Hour))
		if g.invited < statsMinInvites {
			continue
		}
		hint := m.hintOf(id)
		hb, _ := json.Marshal(hint)
		rows = append(rows, row{hint, fmt.Sprintf(`{"maker":%s,"responseRate":%s,"settleRate":%s,"quoteLatencyMsP50":%s}`,
			hb, rateText(g.quoted, g.invited-g.declined), rateText(g.settled, g.won), rankText(g.latency, 50, false))})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].hint < rows[j].hint })
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = r.text
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestMakerStatsCacheProperty: through any sequence of invitations, changes to facts
// (anchored, declined, won, settled), the clock moving (facts leaving the 24-hour window),
// clones and reads, the cached makerStats equal the rows computed afresh on every read.
// Facts out of invitation order (a clock set back) are never cached and still agree.
func TestMakerStatsCacheProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		makers := []string{"p-a", "p-b", "p-c"}
		m := &Model{}
		m.st.Now = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
		m.st.Parties = map[string]*Party{}
		for i, id := range makers {
			m.st.Parties[id] = &Party{ID: id, Hint: fmt.Sprintf("maker-%d", 2-i)}
		}
		rfqs := 0
		for range rapid.IntRange(1, 400).Draw(t, "steps") {
			switch rapid.IntRange(0, 19).Draw(t, "op") {
			case 0, 1, 2, 3, 4, 5, 6, 7: // an RFQ inviting some makers
				rfqs++
				r := &RFQ{ID: fmt.Sprintf("rfq-%d", rfqs)}
				for _, mk := range makers {
					if rapid.Bool().Draw(t, "invite") {
						r.Invited = append(r.Invited, mk)
					}
				}
				m.scoreInvited(r, m.st.Now)
			case 8, 9, 10, 11: // a fact changes, mostly a recent one
				if rfqs == 0 {
					continue
				}
				mk := rapid.SampledFrom(makers).Draw(t, "maker")
				id := fmt.Sprintf("rfq-%d", rfqs-rapid.IntRange(0, min(rfqs-1, 20)).Draw(t, "age"))
				if f := m.scoreFact(mk, id); f != nil {
					switch rapid.IntRange(0, 3).Draw(t, "change") {
					case 0:
						f.Quoted, f.LatencyMs = true, rapid.Int64Range(0, 5000).Draw(t, "latency")
					case 1:
						f.Declined = true
					case 2:
						f.Won++
					case 3:
						f.Settled++
					}
				}
			case 12, 13: // the clock moves on
				m.st.Now = m.st.Now.Add(time.Duration(rapid.Int64Range(0, int64(12*time.Hour)).Draw(t, "advance")))
			case 14: // sometimes back (facts then fall out of order)
				if rapid.IntRange(0, 2).Draw(t, "back") == 0 {
					m.st.Now = m.st.Now.Add(-time.Duration(rapid.Int64Range(0, int64(12*time.Hour)).Draw(t, "back by")))
				}
			case 15:
				m = m.Clone()
			default:
				listed := makers[:rapid.IntRange(0, len(makers)).Draw(t, "listed")]
				if got, want := m.makerStatsText(listed), m.makerStatsUncached(listed); got != want {
					t.Fatalf("cached makerStats\n got %s\nwant %s", got, want)
				}
			}
		}
	})
}

// TestMakerStatsCacheWindow: a cached row is recomputed when facts leave the 24-hour
// window with no fact changing, and facts out of invitation order are never cached.
func TestMakerStatsCacheWindow(t *testing.T) {
	m := &Model{}
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	m.st.Parties = map[string]*Party{"p-a": {ID: "p-a", Hint: "maker-a"}}
	invite := func(i int, at time.Time, quoted bool) {
		id := fmt.Sprintf("rfq-%d", i)
		m.scoreInvited(&RFQ{ID: id, Invited: []string{"p-a"}}, at)
		if quoted {
			f := m.scoreFact("p-a", id)
			f.Quoted, f.LatencyMs = true, 100
		}
	}
	for i := range 10 {
		invite(i, t0, true)
	}
	for i := 10; i < 20; i++ {
		invite(i, t0.Add(12*time.Hour), false)
	}
	read := func(now time.Time) string {
		m.st.Now = now
		got, want := m.makerStatsText([]string{"p-a"}), m.makerStatsUncached([]string{"p-a"})
		if got != want {
			t.Fatalf("at %v: cached makerStats\n got %s\nwant %s", now, got, want)
		}
		return got
	}
	if got := read(t0.Add(12 * time.Hour)); !strings.Contains(got, `"responseRate":0.5000`) {
		t.Fatalf("both halves: %s", got)
	}
	if _, ok := m.statsRows["p-a"]; !ok {
		t.Fatal("the row of facts in order is not cached")
	}
	if got := read(t0.Add(30 * time.Hour)); !strings.Contains(got, `"responseRate":0.0000`) {
		t.Fatalf("the quoted half left the window: %s", got)
	}
	invite(20, t0, true) // out of order
	read(t0.Add(20 * time.Hour))
	if _, ok := m.statsRows["p-a"]; ok {
		t.Fatal("facts out of invitation order were cached")
	}
}
