package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// GET /desk's makerStats is judged on every read of /desk (several a simulated second),
// and each row is a pass over the maker's facts of the last 24 hours: thousands of facts per
// maker a few hours into a run, for every listed maker. The rows are kept here between
// reads and recomputed only for a maker whose facts changed (statsGen) or whose window
// lost facts since (the first fact inside it moved). The row is the same text either
// way: statsRowText is what makerStatsText rendered before the cache.

// statsRow is one maker's cached makerStats row and what it was computed from.
type statsRow struct {
	gen  uint64     // statsGen of the maker when computed
	n    int        // how many facts the maker had
	base *ScoreFact // its first fact (a trimmed or replaced slice is another)
	lo   int        // the index of the first fact inside the window
	hint string     // the maker's hint the row names
	ok   bool       // the maker qualifies (statsMinInvites)
	text string     // the row
}

// touchScores notes that the maker's facts (may) change: its cached row is stale.
func (m *Model) touchScores(maker string) {
	if m.statsGen == nil {
		m.statsGen = map[string]uint64{}
	}
	m.statsGen[maker]++
}

// statsRowOf returns the maker's makerStats row for the window starting at from, and
// whether the maker qualifies; cached while neither its facts nor its window's first fact
// changed. A maker whose facts are not in invitation order is never cached.
func (m *Model) statsRowOf(maker string, from time.Time) (string, bool) {
	fs := m.st.Scores[maker]
	hint := m.hintOf(maker)
	if c, hit := m.statsRows[maker]; hit && c.gen == m.statsGen[maker] && c.n == len(fs) && len(fs) > 0 && c.base == &fs[0] && c.hint == hint {
		lo := sort.Search(len(fs), func(i int) bool { return !fs[i].At.Before(from) })
		if lo == c.lo {
			return c.text, c.ok
		}
	}
	g, sorted := m.statsFigures(fs, from)
	row := statsRow{gen: m.statsGen[maker], n: len(fs), lo: len(fs) - g.invited, hint: hint, ok: g.invited >= statsMinInvites}
	if row.ok {
		hb, _ := json.Marshal(hint)
		row.text = fmt.Sprintf(`{"maker":%s,"responseRate":%s,"settleRate":%s,"quoteLatencyMsP50":%s}`,
			hb, rateText(g.quoted, g.invited-g.declined), rateText(g.settled, g.won), rankText(g.latency, 50, false))
	}
	if sorted && len(fs) > 0 {
		row.base = &fs[0]
		if m.statsRows == nil {
			m.statsRows = map[string]statsRow{}
		}
		m.statsRows[maker] = row
	} else {
		delete(m.statsRows, maker)
	}
	return row.text, row.ok
}

// statsFigures computes the figures makerStats shows (figures' invited, quoted, declined,
// won, settled and sorted latencies, nothing else) over the facts invited at or after
// from, and reports whether the facts are in invitation order (At never decreasing). The
// latencies are sorted in the model's scratch buffer: valid until the next call.
func (m *Model) statsFigures(fs []ScoreFact, from time.Time) (scoreFigures, bool) {
	var g scoreFigures
	g.latency = m.statsScratch[:0]
	sorted := true
	for i := range fs {
		f := &fs[i]
		if i > 0 && f.At.Before(fs[i-1].At) {
			sorted = false
		}
		if f.At.Before(from) {
			continue
		}
		g.countInvited(f)
	}
	slices.Sort(g.latency)
	m.statsScratch = g.latency
	return g, sorted
}

// makerStatsText renders GET /desk's makerStats for the listed makers (party ids).
func (m *Model) makerStatsText(listed []string) string {
	type row struct{ hint, text string }
	var rows []row
	from := m.st.Now.Add(-24 * time.Hour)
	for _, id := range listed {
		text, ok := m.statsRowOf(id, from)
		if !ok {
			continue
		}
		rows = append(rows, row{m.hintOf(id), text}) // the hint again: a map hit, no marshal
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].hint < rows[j].hint })
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = r.text
	}
	return "[" + strings.Join(parts, ",") + "]"
}
