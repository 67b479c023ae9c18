package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/transport"
)

// adminHandler serves /healthz (the process is up), /readyz (it serves requests),
// /metrics (Prometheus text format: requests, loop, ledger and stream figures) and the Go
// runtime's profiles under /debug/pprof/ (CPU, heap, goroutines, execution trace: what an
// operator needs to see where a live desk's time and memory go). It needs no key and must
// never be on the public listener. (Importing net/http/pprof also registers its handlers
// on http.DefaultServeMux, which the desk never serves.)
func adminHandler(n *node.Node, srv *transport.Server, ready *atomic.Bool, houses []*houseMaker) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready\n", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		writeMetrics(w, n, srv.Metrics())
		writeHouseMetrics(w, houses)
	})
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// writeMetrics renders the counters in the Prometheus text exposition format.
func writeMetrics(w io.Writer, n *node.Node, m transport.MetricsSnapshot) {
	metric := func(name, kind, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
	}
	metric("desk_http_requests_total", "counter", "HTTP requests by route and status.")
	for _, r := range m.Requests {
		fmt.Fprintf(w, "desk_http_requests_total{route=%q,status=\"%d\"} %d\n", r.Route, r.Status, r.Count)
	}
	metric("desk_http_rate_limited_total", "counter", "Requests refused by the per-IP limits.")
	fmt.Fprintf(w, "desk_http_rate_limited_total %d\n", m.RateLimited)

	s := n.Loop.Stats()
	metric("desk_loop_inputs_total", "counter", "Inputs applied by the desk loop.")
	fmt.Fprintf(w, "desk_loop_inputs_total %d\n", s.Inputs.Load())
	metric("desk_loop_reads_total", "counter", "Reads answered by the desk loop.")
	fmt.Fprintf(w, "desk_loop_reads_total %d\n", s.Reads.Load())
	metric("desk_loop_apply_seconds_total", "counter", "Time spent applying inputs.")
	fmt.Fprintf(w, "desk_loop_apply_seconds_total %g\n", time.Duration(s.ApplyNanos.Load()).Seconds())
	metric("desk_loop_queue_depth", "gauge", "Requests waiting for the loop.")
	fmt.Fprintf(w, "desk_loop_queue_depth %d\n", s.QueueDepth.Load())
	metric("desk_loop_held_outputs", "gauge", "Inputs applied whose outputs wait for durability.")
	fmt.Fprintf(w, "desk_loop_held_outputs %d\n", s.HeldOutputs.Load())
	metric("desk_loop_panics_total", "counter", "Inputs whose application panicked (bugs).")
	fmt.Fprintf(w, "desk_loop_panics_total %d\n", s.PanicsHandled.Load())
	metric("desk_loop_checkpoints_total", "counter", "Checkpoints taken (the state encoded, hashed and journaled as a digest).")
	fmt.Fprintf(w, "desk_loop_checkpoints_total %d\n", s.Checkpoints.Load())
	metric("desk_loop_checkpoint_seconds_total", "counter", "Time the loop spent taking checkpoints itself (the first after a start, or after a follower failed).")
	fmt.Fprintf(w, "desk_loop_checkpoint_seconds_total %g\n", time.Duration(s.CheckpointNanos.Load()).Seconds())
	metric("desk_loop_checkpoint_seconds_max", "gauge", "The longest checkpoint the loop took itself: the longest pause of the loop.")
	fmt.Fprintf(w, "desk_loop_checkpoint_seconds_max %g\n", time.Duration(s.CheckpointMaxNanos.Load()).Seconds())
	metric("desk_follower_checkpoint_seconds_total", "counter", "Time the follower desk spent encoding and hashing checkpoints, beside the loop.")
	fmt.Fprintf(w, "desk_follower_checkpoint_seconds_total %g\n", time.Duration(s.FollowerNanos.Load()).Seconds())
	metric("desk_follower_checkpoint_seconds_max", "gauge", "The follower's longest checkpoint.")
	fmt.Fprintf(w, "desk_follower_checkpoint_seconds_max %g\n", time.Duration(s.FollowerMaxNanos.Load()).Seconds())
	metric("desk_follower_failures_total", "counter", "Follower desks dropped after an error (bugs); each is replaced at the next checkpoint.")
	fmt.Fprintf(w, "desk_follower_failures_total %d\n", s.FollowerFailures.Load())
	metric("desk_follower_lag_records", "gauge", "Journal records waiting for the follower desk after the loop's last input.")
	fmt.Fprintf(w, "desk_follower_lag_records %d\n", s.FollowerLag.Load())
	metric("desk_follower_stalls_total", "counter", "Inputs after which the loop waited for room in the follower's full queue.")
	fmt.Fprintf(w, "desk_follower_stalls_total %d\n", s.FollowerStalls.Load())
	metric("desk_follower_stall_seconds_total", "counter", "Time the loop waited for the follower's full queue.")
	fmt.Fprintf(w, "desk_follower_stall_seconds_total %g\n", time.Duration(s.FollowerStallNanos.Load()).Seconds())

	metric("desk_ledger_calls_total", "counter", "Ledger calls completed.")
	fmt.Fprintf(w, "desk_ledger_calls_total %d\n", s.LedgerCalls.Load())
	metric("desk_ledger_failures_total", "counter", "Ledger calls that failed.")
	fmt.Fprintf(w, "desk_ledger_failures_total %d\n", s.LedgerFails.Load())
	metric("desk_ledger_call_seconds_total", "counter", "Time spent in ledger calls.")
	fmt.Fprintf(w, "desk_ledger_call_seconds_total %g\n", time.Duration(s.LedgerNanos.Load()).Seconds())
	metric("desk_ledger_snapshots_total", "counter", "Ledger snapshots saved, by where they were encoded: the live ledger (every ledger call waits) or its follower.")
	fmt.Fprintf(w, "desk_ledger_snapshots_total{source=\"ledger\"} %d\n", n.LedgerSnapshots.FromLedger.Load())
	fmt.Fprintf(w, "desk_ledger_snapshots_total{source=\"follower\"} %d\n", n.LedgerSnapshots.FromFollower.Load())
	metric("desk_ledger_follower_failures_total", "counter", "Ledger followers that failed (bugs); each is replaced at the next snapshot.")
	fmt.Fprintf(w, "desk_ledger_follower_failures_total %d\n", n.LedgerSnapshots.FollowerFailures.Load())
	metric("desk_ledger_follower_lag_records", "gauge", "Ledger journal records waiting for the follower ledger.")
	fmt.Fprintf(w, "desk_ledger_follower_lag_records %d\n", n.LedgerSnapshots.FollowerLag.Load())
	metric("desk_ledger_follower_stalls_total", "counter", "Ledger records that waited for room in the follower's full queue (the ledger's lock held).")
	fmt.Fprintf(w, "desk_ledger_follower_stalls_total %d\n", n.LedgerSnapshots.FollowerStalls.Load())
	metric("desk_ledger_follower_stall_seconds_total", "counter", "Time ledger records waited for the follower's full queue.")
	fmt.Fprintf(w, "desk_ledger_follower_stall_seconds_total %g\n", time.Duration(n.LedgerSnapshots.FollowerStallNanos.Load()).Seconds())
	metric("desk_ledger_offset", "gauge", "The embedded ledger's offset.")
	fmt.Fprintf(w, "desk_ledger_offset %d\n", n.Ledger.L.Offset())

	metric("desk_stream_sockets_open", "gauge", "Stream sockets open.")
	fmt.Fprintf(w, "desk_stream_sockets_open %d\n", m.SocketsOpen)
	metric("desk_stream_sockets_opened_total", "counter", "Stream sockets that completed the handshake.")
	fmt.Fprintf(w, "desk_stream_sockets_opened_total %d\n", m.SocketsOpened)
	metric("desk_stream_sockets_refused_total", "counter", "Stream upgrades refused or closed at once.")
	fmt.Fprintf(w, "desk_stream_sockets_refused_total %d\n", m.SocketsRefused)
	metric("desk_stream_frames_sent_total", "counter", "Stream frames written.")
	fmt.Fprintf(w, "desk_stream_frames_sent_total %d\n", m.FramesSent)
	metric("desk_stream_slow_consumers_total", "counter", "Sockets closed because their queue was full.")
	fmt.Fprintf(w, "desk_stream_slow_consumers_total %d\n", m.SlowConsumersDropped)
	metric("desk_stream_pong_timeouts_total", "counter", "Sockets dropped for a missed pong.")
	fmt.Fprintf(w, "desk_stream_pong_timeouts_total %d\n", m.PongTimeouts)
}

// writeHouseMetrics renders the in-desk house makers' counters.
func writeHouseMetrics(w io.Writer, houses []*houseMaker) {
	if len(houses) == 0 {
		return
	}
	for _, m := range []struct {
		name, help string
		get        func(*houseMaker) uint64
	}{
		{"desk_house_quotes_sent_total", "Quotes the in-desk house makers submitted.", func(h *houseMaker) uint64 { return h.metrics.sent.Load() }},
		{"desk_house_quotes_refused_total", "House maker quotes the desk refused (ordinary racing).", func(h *houseMaker) uint64 { return h.metrics.refused.Load() }},
		{"desk_house_rfqs_skipped_total", "RFQs the house makers' strategy skipped.", func(h *houseMaker) uint64 { return h.metrics.skipped.Load() }},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", m.name, m.help, m.name)
		for _, h := range houses {
			fmt.Fprintf(w, "%s{house=%q} %d\n", m.name, h.hint, m.get(h))
		}
	}
}
