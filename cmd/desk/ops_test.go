package main

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/transport"
)

// opsConfig is the test desk with an in-desk house maker beside the house taker.
const opsConfig = baseConfig + `
[[house]]
name = "house-maker"
role = "maker"
strategy = true
fund = { cbtc = "10", usdcx = "1000000" }
`

// opsTraffic runs one trade to settlement with a registered maker and leaves a second
// quote of that maker unsigned, its allocations in the sign queue. It returns the maker.
func opsTraffic(t *testing.T, d *liveDesk) *client.Client {
	t.Helper()
	m, taker := maker(t, d, "Ops Maker", true), house(t, d)
	s := subscribe(t, m)
	req := client.CreateRFQRequest{Direction: "SELL", Qty: "0.05", Base: "cbtc", Quote: "usdcx", TTLSeconds: 120}
	_, q := quoteRFQ(t, taker, m, s, req, "60000")
	anchor(t, m, s, q)
	if _, err := taker.AcceptQuote(ctx(t), q.QuoteID); err != nil {
		t.Fatal(err)
	}
	await(t, s, "trade.settled", nil)
	quoteRFQ(t, taker, m, s, req, "61000") // unsigned: two allocate actions wait for the maker
	return m
}

// getOps reads an operator endpoint into out and returns the raw body.
func getOps(t *testing.T, url string, out any) string {
	t.Helper()
	status, body := rawCall(t, "GET", url, "", "")
	if status != 200 {
		t.Fatalf("GET %s: %d %s", url, status, body)
	}
	if err := json.Unmarshal([]byte(body), out); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
	return body
}

// TestOpsStateOverTheWire: /ops/state on the admin listener shows the whole desk (the
// settled trade, the sign queue, the makers online, ledger and journal figures), its lists
// are bounded by ?limit, it shows no party's API key nor its hash, and the public listener
// does not serve it.
func TestOpsStateOverTheWire(t *testing.T) {
	d := startLive(t, opsConfig)
	m := opsTraffic(t, d)
	var st opsState
	body := getOps(t, d.admin+"/ops/state", &st)
	if st.Role != "leader" || st.Desk == nil {
		t.Fatalf("role %q, desk %v, error %q", st.Role, st.Desk, st.DeskError)
	}
	c := st.Desk.Counts
	if c.Trades != 1 || c.RFQs != 2 || c.SignQueue != 2 || c.MakersOnline != 2 || c.QuotesLive != 1 {
		t.Fatalf("counts %+v", c)
	}
	if tr := st.Desk.Trades[0]; tr.State != machine.TradeSettled || tr.Maker != m.Hint() || tr.Taker != "house-taker" || tr.UpdateID == "" {
		t.Fatalf("trade %+v", tr)
	}
	if x := st.Desk.SignQueue[0]; x.Party != m.Hint() || x.Purpose == "" {
		t.Fatalf("sign queue %+v", st.Desk.SignQueue)
	}
	if st.Ledger.Calls == 0 || st.Ledger.Offset == 0 || len(st.Ledger.Failures) == 0 {
		t.Fatalf("ledger %+v", st.Ledger)
	}
	if len(st.Journals) != 2 || st.Journals[0].Name != "desk" || st.Journals[0].LastSeq == 0 || st.Journals[0].Bytes == nil ||
		*st.Journals[0].Bytes == 0 || st.Journals[1].Syncs == 0 || st.Journals[1].Records < st.Journals[1].Syncs {
		t.Fatalf("journals %+v", st.Journals)
	}
	if st.Follower.HA != nil || st.Stream.MakersOnline != 2 || st.Stream.SocketsOpen != 1 {
		t.Fatalf("follower %+v, stream %+v", st.Follower, st.Stream)
	}
	for _, key := range []string{m.APIKey(), houseKey} {
		if strings.Contains(body, key) || strings.Contains(body, transport.HashKey(key)) {
			t.Fatalf("the operator view shows an API key or its hash: %s", body)
		}
	}

	before := time.Now()
	_, again := rawCall(t, "GET", d.admin+"/ops/state", "", "")
	_, third := rawCall(t, "GET", d.admin+"/ops/state", "", "")
	if time.Since(before) < opsStateMaxAge && again != third {
		t.Errorf("two reads within %v were not the same answer:\n%s\n%s", opsStateMaxAge, again, third)
	}

	var one opsState
	getOps(t, d.admin+"/ops/state?limit=1", &one)
	if len(one.Desk.RFQs) != 1 || len(one.Desk.SignQueue) != 1 || len(one.Desk.Makers) != 1 || one.Desk.Counts.RFQs != 2 {
		t.Fatalf("limit=1: %+v", one.Desk)
	}
	for _, bad := range []string{"0", "-1", "201", "x"} {
		if status, body := rawCall(t, "GET", d.admin+"/ops/state?limit="+bad, "", ""); status != 400 || !strings.Contains(body, "BAD_REQUEST") {
			t.Errorf("limit=%s: %d %s", bad, status, body)
		}
	}
	for _, path := range []string{"/ops/", "/ops/state", "/ops/series", "/ops/ops.js"} {
		if status, _ := rawCall(t, "GET", d.base+path, "", ""); status != 404 && status != 401 {
			t.Errorf("%s answered %d on the public listener", path, status)
		}
	}
}

// TestOpsSeriesOverTheWire: /ops/series holds one sample a second, as columns of one
// length; the trade and its volume show in the cumulative columns; ?since returns only
// newer samples.
func TestOpsSeriesOverTheWire(t *testing.T) {
	d := startLive(t, opsConfig)
	opsTraffic(t, d)
	var se opsSeries
	deadline := time.Now().Add(10 * time.Second)
	for {
		getOps(t, d.admin+"/ops/series", &se)
		if n := len(se.T); n > 0 && se.Settled[n-1] == 1 && len(se.Instruments) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample with the settled trade: %+v", se)
		}
		time.Sleep(200 * time.Millisecond)
	}
	n := len(se.T)
	for name, col := range map[string]int{"settled": len(se.Settled), "failed": len(se.Failed), "p50": len(se.P50),
		"p99": len(se.P99), "makersOnline": len(se.MakersOnline), "signQueue": len(se.SignQueue), "followerLag": len(se.FollowerLag),
		"volume[0]": len(se.Volume[0]), "volume[1]": len(se.Volume[1])} {
		if col != n {
			t.Errorf("column %s has %d samples, t has %d", name, col, n)
		}
	}
	if se.Capacity != opsSeriesCap || se.IntervalSeconds != 1 || se.MakersOnline[n-1] != 2 || se.SignQueue[n-1] != 2 {
		t.Fatalf("series %+v", se)
	}
	vol := map[string]float64{}
	for i, name := range se.Instruments {
		vol[name] = se.Volume[i][n-1]
	}
	if vol["cbtc"] != 0.05 || vol["usdcx"] != 3000 {
		t.Fatalf("volume %v", vol)
	}
	var later opsSeries
	getOps(t, d.admin+"/ops/series?since="+jsonNumber(se.T[n-1]), &later)
	for _, at := range later.T {
		if at <= se.T[n-1] {
			t.Fatalf("since=%d returned the sample of %d", se.T[n-1], at)
		}
	}
	if status, _ := rawCall(t, "GET", d.admin+"/ops/series?since=-5", "", ""); status != 400 {
		t.Fatalf("since=-5: %d", status)
	}
}

// noRedirect is an HTTP client that reports redirects rather than following them.
var noRedirect = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestOpsPageHeaders: the page and its files come with a strict CSP and no inline script.
func TestOpsPageHeaders(t *testing.T) {
	d := startLive(t, opsConfig)
	for _, path := range []string{"/ops/", "/ops/ops.js", "/ops/ops.css"} {
		resp, err := noRedirect.Get(d.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: %d, CSP %q", path, resp.StatusCode, csp)
		}
	}
	_, page := rawCall(t, "GET", d.admin+"/ops/", "", "")
	if strings.Contains(page, "<script>") || strings.Contains(page, "style=") || strings.Contains(page, "http") {
		t.Errorf("the page has inline script, inline style or an absolute URL:\n%s", page)
	}
	resp, err := noRedirect.Get(d.admin + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/ops/" {
		t.Errorf("GET / on the admin listener: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestOpsSamplerIsBounded: the ring keeps the newest opsSeriesCap samples, oldest first.
func TestOpsSamplerIsBounded(t *testing.T) {
	v := newOpsView(newDeskMetrics(), t.TempDir(), true)
	t0 := time.UnixMilli(1_000_000)
	for i := range opsSeriesCap + 25 {
		v.sampler.sample(t0.Add(time.Duration(i) * time.Second))
	}
	se := v.sampler.series(0)
	if len(se.T) != opsSeriesCap || se.T[0] != t0.Add(25*time.Second).UnixMilli() || se.T[len(se.T)-1] != t0.Add((opsSeriesCap+24)*time.Second).UnixMilli() {
		t.Fatalf("%d samples from %d to %d", len(se.T), se.T[0], se.T[len(se.T)-1])
	}
	if got := v.sampler.series(se.T[len(se.T)-2]); len(got.T) != 1 {
		t.Fatalf("since the last but one: %d samples", len(got.T))
	}
}

// TestOpsSamplerStops: the sampler's goroutine samples until stopped, and stop waits
// for it to end.
func TestOpsSamplerStops(t *testing.T) {
	v := newOpsView(newDeskMetrics(), t.TempDir(), true)
	stop := v.sampler.start()
	deadline := time.Now().Add(5 * time.Second)
	for len(v.sampler.series(0).T) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no sample within 5s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return: the sampler's goroutine is still running")
	}
	n := len(v.sampler.series(0).T)
	time.Sleep(2 * opsSampleEvery)
	if m := len(v.sampler.series(0).T); m != n {
		t.Fatalf("the sampler sampled after stop: %d then %d", n, m)
	}
}

// TestOpsBeforeServing: before the desk serves, and on a standby, the state says so and
// the sampler samples, without a desk to read.
func TestOpsBeforeServing(t *testing.T) {
	v := newOpsView(newDeskMetrics(), t.TempDir(), true)
	v.sampler.sample(time.Now())
	if st := v.state(t.Context(), 10); st.Role != "starting" || st.Desk != nil || st.Follower.HA != nil {
		t.Fatalf("starting: %+v", st)
	}
	v.standingBy(&haRun{})
	v.sampler.sample(time.Now())
	st := v.state(t.Context(), 10)
	if st.Role != "standby" || st.Desk != nil || st.Follower.HA == nil || st.Follower.HA.Leader {
		t.Fatalf("standby: %+v", st)
	}
	if _, err := json.Marshal(st); err != nil {
		t.Fatal(err)
	}
}

// TestOpsLatencyWindow: the ledger latency percentiles are those of the calls of the last
// opsWindow samples, null once the window holds none.
func TestOpsLatencyWindow(t *testing.T) {
	m := newDeskMetrics()
	v := newOpsView(m, t.TempDir(), true)
	at := time.UnixMilli(5_000_000)
	for range 100 {
		m.LedgerCall(machine.OpPrepare, 3*time.Millisecond, "")
	}
	v.sampler.sample(at)
	m.LedgerCall(machine.OpSubmit, 700*time.Millisecond, machine.LedgerUnavailable)
	v.sampler.sample(at.Add(time.Second))
	smp := v.sampler.latest()
	if p := float64(smp.P50); p < 0.002 || p > 0.004 {
		t.Fatalf("p50 %v, want about 3ms", p)
	}
	if p := float64(smp.P99); p < 0.002 || p > 0.004 {
		t.Fatalf("p99 %v: one slow call of 101 is above the 99th percentile's rank only in its own window", p)
	}
	for i := range opsWindow {
		v.sampler.sample(at.Add(time.Duration(2+i) * time.Second))
	}
	if p := v.sampler.latest().P50; !math.IsNaN(float64(p)) {
		t.Fatalf("p50 %v after a window without calls, want none", p)
	}
	if got := v.metrics.ledgerFailureCounts()[machine.LedgerUnavailable]; got != 1 {
		t.Fatalf("unavailable failures %d", got)
	}
}

// TestQuantileLaws: the estimate is monotone in q and lies within the histogram's bounds.
func TestQuantileLaws(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "buckets")
		h := histSnap{}
		bound, count := 0.0, uint64(0)
		for i := range n {
			bound += rapid.Float64Range(0.001, 10).Draw(t, "width")
			count += uint64(rapid.IntRange(0, 50).Draw(t, "count"))
			h.bounds = append(h.bounds, bound)
			h.counts = append(h.counts, count)
			_ = i
		}
		h.total = count + uint64(rapid.IntRange(0, 5).Draw(t, "overflow"))
		if h.total == 0 {
			if !math.IsNaN(float64(quantile(h, 0.5))) {
				t.Fatal("a quantile of no observations")
			}
			return
		}
		prev := 0.0
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
			v := float64(quantile(h, q))
			if v < prev || v < 0 || v > h.bounds[n-1] {
				t.Fatalf("q=%v: %v after %v (bounds %v, counts %v, total %d)", q, v, prev, h.bounds, h.counts, h.total)
			}
			prev = v
		}
	})
}

// BenchmarkOpsSample: one sample of the sampler (it takes one a second whether or not a
// page is open), with every ledger call kind and both journals observed.
func BenchmarkOpsSample(b *testing.B) {
	m := newDeskMetrics()
	v := newOpsView(m, b.TempDir(), true)
	for _, op := range []machine.LedgerOp{machine.OpPrepare, machine.OpExecute, machine.OpSubmit} {
		m.LedgerCall(op, 3*time.Millisecond, "")
	}
	m.JournalSync("desk", 3, time.Millisecond)
	m.JournalSync("ledger", 2, time.Millisecond)
	at := time.UnixMilli(1_000_000)
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(time.Second)
		v.sampler.sample(at)
	}
}
