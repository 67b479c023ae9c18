package main

import (
	"context"
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/deskco/rfqdesk/client"
)

// cmdScorecard is `deskctl scorecard [-window 1h|24h|7d]`: the party's own maker scorecard.
func cmdScorecard(e *env, args []string) error {
	fs := e.flags("scorecard", "")
	window := fs.String("window", client.ScoreWindow24h, "the window: 1h, 24h or 7d (by the RFQs' invitation time)")
	fetch := func(c *client.Client, ctx context.Context) (*client.Scorecard, error) {
		return c.Scorecard(ctx, *window)
	}
	return query(e, fs, args, fetch, func(s *client.Scorecard, w *tabwriter.Writer) {
		row(w, "window", *window)
		row(w, "invited", s.Invited)
		row(w, "quoted", s.Quoted)
		row(w, "declined", s.Declined)
		row(w, "response rate", s.ResponseRate)
		row(w, "quote latency p50 ms", orNone(s.QuoteLatencyMs.P50))
		row(w, "quote latency p99 ms", orNone(s.QuoteLatencyMs.P99))
		row(w, "won", s.Won)
		row(w, "lost", s.Lost)
		row(w, "lost distance p50 bps", orNone(s.LostDistanceBps.P50))
		row(w, "settled", s.Settled)
		row(w, "settle rate", s.SettleRate)
		reasons(w, "failed", s.Failed.ByReason)
		reasons(w, "revoked", s.Revoked.ByReason)
	})
}

// orNone renders a percentile, "-" when there was no sample.
func orNone[T int64 | float64](v *T) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// reasons writes one row per reason, sorted, or one "none" row.
func reasons(w *tabwriter.Writer, what string, by map[string]int) {
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		row(w, what, 0)
	}
	for _, k := range keys {
		row(w, what+" ("+k+")", by[k])
	}
}
