package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/deskco/rfqdesk/client"
)

// settleOne runs one trade to settlement on d: a funded maker quotes 60000 on a 0.05 CBTC
// SELL RFQ of the house taker, which accepts (3000 USDCx, a 9 USDCx fee at 30 bps).
// beforeSign, if set, runs while the quote's sign actions wait for the maker.
func settleOne(t *testing.T, d *liveDesk, beforeSign func()) {
	t.Helper()
	m, taker := maker(t, d, "Metrics Maker", true), house(t, d)
	s := subscribe(t, m)
	_, q := quoteRFQ(t, taker, m, s, client.CreateRFQRequest{Direction: "SELL", Qty: "0.05", Base: "CBTC", Quote: "usdcx", TTLSeconds: 120}, "60000")
	if beforeSign != nil {
		beforeSign()
	}
	anchor(t, m, s, q)
	if _, err := taker.AcceptQuote(ctx(t), q.QuoteID); err != nil {
		t.Fatal(err)
	}
	await(t, s, "trade.settled", nil)
	await(t, s, "quote.status", nil) // the win, released with the settlement
}

// scrape reads the admin /metrics of d, lints it as Prometheus does, and parses it.
func scrape(t *testing.T, d *liveDesk) map[string]*dto.MetricFamily {
	t.Helper()
	status, body := rawCall(t, "GET", d.admin+"/metrics", "", "")
	if status != 200 {
		t.Fatalf("GET /metrics: %d %s", status, body)
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "desk_") || p.Metric == "build_info" {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// value is the value of the series of family name whose labels include want (nil: the only
// series); ok false when there is none.
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := families[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsScrape: the admin /metrics of a running desk, after one settled trade, holds the
// Go and process collectors, build_info and every business metric with its type, the trade
// and its volume counted exactly once, request latencies by route pattern (never a raw
// path), and the metrics the desk always had; and it passes Prometheus's own linter.
func TestMetricsScrape(t *testing.T) {
	d := startLive(t, baseConfig)
	var waiting float64
	settleOne(t, d, func() {
		waiting, _ = value(scrape(t, d), "desk_sign_queue_depth", nil)
	})
	if waiting < 1 {
		t.Errorf("desk_sign_queue_depth = %v while a quote's actions wait for their signature", waiting)
	}
	f := scrape(t, d)

	types := map[string]dto.MetricType{
		"go_goroutines":                        dto.MetricType_GAUGE,
		"process_resident_memory_bytes":        dto.MetricType_GAUGE,
		"build_info":                           dto.MetricType_GAUGE,
		"desk_http_request_duration_seconds":   dto.MetricType_HISTOGRAM,
		"desk_http_requests_total":             dto.MetricType_COUNTER,
		"desk_rfqs_total":                      dto.MetricType_COUNTER,
		"desk_quotes_total":                    dto.MetricType_COUNTER,
		"desk_trades_settled_total":            dto.MetricType_COUNTER,
		"desk_volume_total":                    dto.MetricType_COUNTER,
		"desk_fees_total":                      dto.MetricType_COUNTER,
		"desk_makers_online":                   dto.MetricType_GAUGE,
		"desk_sign_queue_depth":                dto.MetricType_GAUGE,
		"desk_ledger_call_duration_seconds":    dto.MetricType_HISTOGRAM,
		"desk_ledger_failures_total":           dto.MetricType_COUNTER,
		"desk_journal_fsync_duration_seconds":  dto.MetricType_HISTOGRAM,
		"desk_journal_records_synced_total":    dto.MetricType_COUNTER,
		"desk_loop_inputs_total":               dto.MetricType_COUNTER,
		"desk_loop_checkpoint_seconds_total":   dto.MetricType_COUNTER,
		"desk_loop_checkpoint_seconds_max":     dto.MetricType_GAUGE,
		"desk_follower_lag_records":            dto.MetricType_GAUGE,
		"desk_follower_stalls_total":           dto.MetricType_COUNTER,
		"desk_ledger_snapshots_total":          dto.MetricType_COUNTER,
		"desk_ledger_follower_lag_records":     dto.MetricType_GAUGE,
		"desk_ledger_calls_total":              dto.MetricType_COUNTER,
		"desk_ledger_offset":                   dto.MetricType_GAUGE,
		"desk_stream_sockets_open":             dto.MetricType_GAUGE,
		"desk_stream_frames_sent_total":        dto.MetricType_COUNTER,
		"desk_stream_writes_total":             dto.MetricType_COUNTER,
		"desk_http_rate_limited_total":         dto.MetricType_COUNTER,
		"desk_loop_queue_depth":                dto.MetricType_GAUGE,
		"desk_follower_checkpoint_seconds_max": dto.MetricType_GAUGE,
	}
	for name, want := range types {
		mf := f[name]
		if mf == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if mf.GetType() != want {
			t.Errorf("%s: type %v, want %v", name, mf.GetType(), want)
		}
	}
	if bi := f["build_info"]; bi != nil {
		labels := map[string]string{}
		for _, l := range bi.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["version"] == "" || labels["revision"] == "" || !strings.HasPrefix(labels["goversion"], "go") {
			t.Errorf("build_info labels %v", labels)
		}
	}

	exact := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"desk_trades_settled_total", nil, 1},
		{"desk_rfqs_total", map[string]string{"outcome": "created"}, 1},
		{"desk_rfqs_total", map[string]string{"outcome": "filled"}, 1},
		{"desk_rfqs_total", map[string]string{"outcome": "expired"}, 0},
		{"desk_quotes_total", map[string]string{"outcome": "created"}, 1},
		{"desk_quotes_total", map[string]string{"outcome": "won"}, 1},
		{"desk_volume_total", map[string]string{"instrument": "cbtc"}, 0.05},
		{"desk_volume_total", map[string]string{"instrument": "usdcx"}, 3000},
		{"desk_fees_total", map[string]string{"instrument": "usdcx"}, 9},
		{"desk_ledger_failures_total", map[string]string{"category": "contention"}, 0},
		{"desk_sign_queue_depth", nil, 0},
		{"desk_makers_online", nil, 1}, // the maker's stream (the house taker is no maker)
		{"desk_http_request_duration_seconds", map[string]string{"route": "POST /quote/:id/accept", "status": "202"}, 1},
	}
	for _, c := range exact {
		if got, ok := value(f, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	atLeast := []struct {
		name   string
		labels map[string]string
	}{
		{"desk_ledger_call_duration_seconds", map[string]string{"op": "submit"}},
		{"desk_journal_fsync_duration_seconds", map[string]string{"journal": "desk"}},
		{"desk_journal_records_synced_total", map[string]string{"journal": "ledger"}},
		{"go_goroutines", nil},
		{"process_resident_memory_bytes", nil},
	}
	for _, c := range atLeast {
		if got, ok := value(f, c.name, c.labels); !ok || got <= 0 {
			t.Errorf("%s%v = %v (present %v), want > 0", c.name, c.labels, got, ok)
		}
	}
	for _, m := range f["desk_http_request_duration_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && (strings.Contains(l.GetValue(), "q_") || strings.Contains(l.GetValue(), "rfq_")) {
				t.Errorf("a raw path as a route label: %q", l.GetValue())
			}
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the desk's concurrent log writes.
type syncBuffer struct {
	ch chan struct{}
	b  bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{ch: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.ch <- struct{}{}
	defer func() { <-s.ch }()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.ch <- struct{}{}
	defer func() { <-s.ch }()
	return s.b.String()
}

// TestLogFormatJSONAndShutdownLine: with -log-format json every line of the desk's log is a
// JSON object; a request with an X-Request-Id is logged (at debug) with it; and the last
// line, at shutdown, says what was flushed: journals up to their last record, the records
// synced, the sockets closed.
func TestLogFormatJSONAndShutdownLine(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "desk.toml")
	if err := os.WriteFile(cfgPath, []byte(baseConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := newSyncBuffer()
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan [2]string, 1)
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"),
			"-config", cfgPath, "-log-level", "debug", "-log-format", "json"}, io.Discard, logs, os.Getenv, ready)
	}()
	var base string
	select {
	case addrs := <-ready:
		base = "http://" + addrs[0]
	case code := <-done:
		t.Fatalf("desk exited %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("desk did not start within 10s")
	}
	req, _ := http.NewRequest("GET", base+"/config", nil)
	req.Header.Set("X-Request-Id", "trace-me-42")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("X-Request-Id"); got != "trace-me-42" {
		t.Errorf("X-Request-Id echoed %q", got)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("desk exited %d: %s", code, logs.String())
	}

	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a log line that is not JSON: %q: %v", sc.Text(), err)
		}
		lines = append(lines, line)
	}
	if len(lines) < 3 {
		t.Fatalf("%d log lines", len(lines))
	}
	requestLogged := false
	for _, l := range lines {
		if l["msg"] == "request" && l["id"] == "trace-me-42" && l["route"] == "GET /config" && l["status"] == float64(401) {
			requestLogged = true
		}
	}
	if !requestLogged {
		t.Errorf("the request was not logged with its id:\n%s", logs.String())
	}
	last := lines[len(lines)-1]
	if last["msg"] != "desk stopped: journals flushed and closed" || last["level"] != "INFO" {
		t.Fatalf("last line %v", last)
	}
	for _, k := range []string{"desk_journal_last_seq", "ledger_journal_last_seq", "desk_records_synced", "ledger_records_synced", "sockets_closed", "checkpoints"} {
		if _, ok := last[k]; !ok {
			t.Errorf("last line lacks %s: %v", k, last)
		}
	}
	// A fresh desk journals its genesis and boot: something was synced, and everything
	// journaled is accounted for.
	if last["desk_journal_last_seq"].(float64) < 1 || last["desk_records_synced"].(float64) != last["desk_journal_last_seq"].(float64) {
		t.Errorf("desk journal: last seq %v, synced %v: want equal and positive", last["desk_journal_last_seq"], last["desk_records_synced"])
	}
}

// TestLogFormatFlag: text and json are the formats; anything else is a usage error (exit 2)
// naming the flag, before anything starts.
func TestLogFormatFlag(t *testing.T) {
	for format, wantJSON := range map[string]bool{"text": false, "json": true} {
		var b bytes.Buffer
		l, err := newLogger(&b, "info", format)
		if err != nil {
			t.Fatal(err)
		}
		l.Info("hello", "k", "v")
		if got := json.Valid(bytes.TrimSpace(b.Bytes())); got != wantJSON {
			t.Errorf("%s: %q is JSON: %v", format, b.String(), got)
		}
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-log-format", "yaml", "-data", t.TempDir()}, io.Discard, &stderr, os.Getenv, nil); code != 2 || !strings.Contains(stderr.String(), "-log-format") {
		t.Errorf("-log-format yaml: exit %d, %q", code, stderr.String())
	}
}
