package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestScorecardCommand: deskctl scorecard asks for the window given (24h by default) and
// prints every figure, "-" for a percentile without a sample and one row per reason; -json
// prints the answer as it came.
func TestScorecardCommand(t *testing.T) {
	var windows []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/maker/scorecard" {
			http.NotFound(w, r)
			return
		}
		windows = append(windows, r.URL.Query().Get("window"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"invited":12,"quoted":9,"declined":2,"responseRate":0.9000,"quoteLatencyMs":{"p50":850,"p99":2400},` +
			`"won":4,"lost":3,"settled":3,"failed":{"byReason":{"the settlement window expired":1}},"revoked":{"byReason":{"disconnect":1,"maker":2}},` +
			`"lostDistanceBps":{"p50":null},"settleRate":0.7500}`))
	}))
	t.Cleanup(srv.Close)
	env := func(k string) string { return map[string]string{"DESK_URL": srv.URL, "DESK_API_KEY": "mk_test"}[k] }
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"scorecard"}, &out, &errOut, env); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"invited", "12", "response rate", "0.9", "quote latency p99 ms", "2400", "lost distance p50 bps", "-",
		"failed (the settlement window expired)", "revoked (disconnect)", "revoked (maker)", "settle rate", "0.75"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"scorecard", "-window", "7d", "-json"}, &out, &errOut, env); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `"invited": 12`) && !strings.Contains(out.String(), `"invited":12`) {
		t.Fatalf("-json printed %s", out.String())
	}
	if strings.Join(windows, ",") != "24h,7d" {
		t.Fatalf("asked for windows %v, want 24h then 7d", windows)
	}
}
