package client

import (
	"context"
	"net/http"
	"net/url"
)

// Scorecard windows: the values GET /maker/scorecard accepts.
const (
	ScoreWindow1h  = "1h"
	ScoreWindow24h = "24h"
	ScoreWindow7d  = "7d"
)

// Scorecard is the answer of GET /maker/scorecard: the caller's own record over the RFQs
// that invited it within the window. Rates and percentiles are not money: plain numbers.
type Scorecard struct {
	Invited  int `json:"invited"`
	Quoted   int `json:"quoted"`
	Declined int `json:"declined"` // declined and never quoted
	// ResponseRate is Quoted ÷ (Invited − Declined), 4 decimals; 0 when the divisor is 0.
	ResponseRate   float64         `json:"responseRate"`
	QuoteLatencyMs LatencyQuantile `json:"quoteLatencyMs"`
	Won            int             `json:"won"`
	Lost           int             `json:"lost"`
	Settled        int             `json:"settled"`
	Failed         ByReason        `json:"failed"`
	Revoked        ByReason        `json:"revoked"`
	// LostDistanceBps is the median distance from the winning price on the RFQs it lost.
	LostDistanceBps DistanceQuantile `json:"lostDistanceBps"`
	// SettleRate is Settled ÷ Won, 4 decimals; 0 when Won is 0.
	SettleRate float64 `json:"settleRate"`
}

// LatencyQuantile holds nearest-rank percentiles in milliseconds; nil with no sample.
type LatencyQuantile struct {
	P50 *int64 `json:"p50"`
	P99 *int64 `json:"p99"`
}

// DistanceQuantile holds the nearest-rank median of distances in basis points (2
// decimals); nil with no sample.
type DistanceQuantile struct {
	P50 *float64 `json:"p50"`
}

// ByReason counts outcomes by their reason.
type ByReason struct {
	ByReason map[string]int `json:"byReason"`
}

// MakerStats is a maker's public summary in GET /desk's makerStats.
type MakerStats struct {
	Maker             string  `json:"maker"` // hint
	ResponseRate      float64 `json:"responseRate"`
	SettleRate        float64 `json:"settleRate"`
	QuoteLatencyMsP50 *int64  `json:"quoteLatencyMsP50"`
}

// Scorecard returns the caller's own scorecard over window (ScoreWindow1h, ScoreWindow24h
// or ScoreWindow7d; "" is the desk's default, 24h) (GET /maker/scorecard).
func (c *Client) Scorecard(ctx context.Context, window string) (*Scorecard, error) {
	var q url.Values
	if window != "" {
		q = url.Values{"window": {window}}
	}
	return call[Scorecard](ctx, c, http.MethodGet, "/maker/scorecard", q, nil, true)
}
