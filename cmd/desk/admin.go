package main

import (
	"io"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
)

// adminHandler serves /healthz (the process is up), /readyz (it serves requests),
// /metrics (the desk's Prometheus registry: Go and process figures, build_info, request and
// ledger latencies, the loop, ledger and stream figures and the business metrics; see
// docs/operations.md) and the Go
// runtime's profiles under /debug/pprof/ (CPU, heap, goroutines, execution trace: what an
// operator needs to see where a live desk's time and memory go), and the operator view
// under /ops/ (ops.go). It needs no key and must
// never be on the public listener. (Importing net/http/pprof also registers its handlers
// on http.DefaultServeMux, which the desk never serves.)
func adminHandler(metrics *deskMetrics, ready *atomic.Bool) http.Handler {
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
	mux.Handle("GET /metrics", metrics.handler())
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	if metrics.ops != nil {
		metrics.ops.routes(mux) // the operator view: /ops/, /ops/state, /ops/series
	}
	return mux
}
