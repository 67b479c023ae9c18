package main

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/transport"
)

// maxLabelValues bounds the distinct values of a label fed by the desk's outputs (failure
// reasons, ledger failure categories): past it, new values are counted under "other", so a
// bug upstream cannot grow the exposition without bound. Instruments are bounded by the
// catalog the configuration declares.
const maxLabelValues = 64

// deskMetrics is the desk's Prometheus registry (its own, never the global default, so a
// desk in a test starts from zero) and the collectors fed as things happen: request and
// ledger-call latencies, journal fsyncs, and the business figures derived from the outputs
// the loop releases. The counters the loop, the transport, the node and the house makers
// keep themselves are read at scrape time by stateCollector.
type deskMetrics struct {
	reg *prometheus.Registry

	httpDuration *prometheus.HistogramVec

	ledgerDuration *prometheus.HistogramVec
	ledgerFailures *prometheus.CounterVec
	failureCats    boundedLabels

	journalFsync   *prometheus.HistogramVec
	journalRecords *prometheus.CounterVec

	rfqs          *prometheus.CounterVec
	quotes        *prometheus.CounterVec
	tradesSettled prometheus.Counter
	tradesFailed  *prometheus.CounterVec
	failReasons   boundedLabels
	volume        *prometheus.CounterVec
	fees          *prometheus.CounterVec

	// synced counts the records each journal made durable in this process ([0] desk,
	// [1] ledger), for the last log line.
	synced [2]atomic.Uint64
	// ops is the operator view the admin listener serves (ops.go), when set.
	ops *opsView
}

// newDeskMetrics builds the registry with the Go and process collectors and build_info.
func newDeskMetrics() *deskMetrics {
	m := &deskMetrics{reg: prometheus.NewRegistry()}
	m.httpDuration = histogramVec("desk_http_request_duration_seconds",
		"Latency of public API requests by route (the router's pattern, never the raw path) and status.",
		prometheus.DefBuckets, "route", "status")
	m.ledgerDuration = histogramVec("desk_ledger_call_duration_seconds",
		"Latency of ledger calls by kind, until their effects are durable in the ledger journal.",
		prometheus.ExponentialBuckets(0.0005, 2, 16), "op")
	m.ledgerFailures = counterVec("desk_ledger_failures_total", "Ledger calls that failed, by failure category (contention, unavailable, rejected, expired...).", "category")
	m.journalFsync = histogramVec("desk_journal_fsync_duration_seconds",
		"Duration of the fsync of each group commit of the desk and ledger journals.",
		prometheus.ExponentialBuckets(0.0001, 2, 16), "journal")
	m.journalRecords = counterVec("desk_journal_records_synced_total", "Journal records made durable by an fsync, by journal.", "journal")
	m.rfqs = counterVec("desk_rfqs_total", "RFQs by outcome: created, filled, expired, cancelled.", "outcome")
	m.quotes = counterVec("desk_quotes_total", "Quotes by outcome: created (recorded), then won, lost, revoked, cancelled or expired.", "outcome")
	m.tradesSettled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "desk_trades_settled_total",
		Help: "Trades settled on the ledger.",
	})
	m.tradesFailed = counterVec("desk_trades_failed_total", "Trades that failed with nothing moved, by reason.", "reason")
	m.volume = counterVec("desk_volume_total", "Settled volume in units of each instrument: the base quantity, and quantity × price of the quote instrument (a float for dashboards; /trades is the exact record).", "instrument")
	m.fees = counterVec("desk_fees_total", "Fees of settled trades in units of the instrument they are paid in (the quote instrument; a float for dashboards).", "instrument")
	m.failureCats = newBoundedLabels(maxLabelValues)
	m.failReasons = newBoundedLabels(maxLabelValues)

	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(),
		m.httpDuration, m.ledgerDuration, m.ledgerFailures, m.journalFsync, m.journalRecords,
		m.rfqs, m.quotes, m.tradesSettled, m.tradesFailed, m.volume, m.fees,
	)
	// The outcomes exist from the start (at 0), so that rates and alerts see them before
	// the first event.
	for _, o := range []string{"created", "filled", "expired", "cancelled"} {
		m.rfqs.WithLabelValues(o)
	}
	for _, o := range []string{"created", "won", "lost", "revoked", "cancelled", "expired"} {
		m.quotes.WithLabelValues(o)
	}
	for _, j := range []string{"desk", "ledger"} {
		m.journalRecords.WithLabelValues(j)
	}
	for _, c := range []string{machine.LedgerContention, machine.LedgerInactive, machine.LedgerUnavailable, machine.LedgerRejected,
		machine.LedgerInternal, machine.LedgerUnknownOutcome, machine.LedgerBadSignature, machine.LedgerExpired,
		machine.LedgerInsufficientFunds, machine.LedgerNotFound, machine.LedgerNotSupported,
		machine.LedgerPreapprovalNeeded, machine.LedgerForbidden} {
		m.ledgerFailures.WithLabelValues(m.failureCats.label(c))
	}
	return m
}

// counterVec is a counter of the given name and help by the given labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// histogramVec is a histogram of the given name, help and buckets by the given labels.
func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// buildInfo is the constant gauge build_info{version, revision, goversion} = 1, from the
// binary's build information.
func buildInfo() prometheus.Collector {
	version, revision := "(devel)", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.modified" && s.Value == "true" && revision != "unknown" {
				revision += "-dirty"
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "build_info",
		Help: "The desk binary: its module version, VCS revision and Go version (always 1).",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "goversion": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}

// handler serves the registry in the Prometheus text (or negotiated) format.
func (m *deskMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// observeRequest is the transport's RequestObserver.
func (m *deskMetrics) observeRequest(route string, status int, took time.Duration) {
	m.httpDuration.WithLabelValues(route, strconv.Itoa(status)).Observe(took.Seconds())
}

// LedgerCall implements node.Observer.
func (m *deskMetrics) LedgerCall(op machine.LedgerOp, took time.Duration, failure string) {
	m.ledgerDuration.WithLabelValues(string(op)).Observe(took.Seconds())
	if failure != "" {
		m.ledgerFailures.WithLabelValues(m.failureCats.label(failure)).Inc()
	}
}

// JournalSync implements node.Observer.
func (m *deskMetrics) JournalSync(journal string, records int, took time.Duration) {
	m.journalFsync.WithLabelValues(journal).Observe(took.Seconds())
	m.journalRecords.WithLabelValues(journal).Add(float64(records))
	if journal == "ledger" {
		m.synced[1].Add(uint64(records))
	} else {
		m.synced[0].Add(uint64(records))
	}
}

var _ node.Observer = (*deskMetrics)(nil)

// boundedLabels admits at most max distinct label values; later ones read "other".
type boundedLabels struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

func newBoundedLabels(max int) boundedLabels {
	return boundedLabels{max: max, seen: make(map[string]bool)}
}

func (b *boundedLabels) label(v string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen[v] {
		return v
	}
	if len(b.seen) >= b.max {
		return "other"
	}
	b.seen[v] = true
	return v
}

// stateCollector reads, at each scrape, the counters the loop, the transport, the node and
// the house makers keep themselves (atomics), under the names the desk always had.
type stateCollector struct {
	n       *node.Node
	srv     *transport.Server
	houses  []*houseMaker
	figures []stateMetric
	// Labelled figures, written in Collect.
	requests, ledgerSnapshots, houseSent, houseRefused, houseSkipped *prometheus.Desc
}

// stateMetric is one figure of stateCollector.
type stateMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(c *stateCollector) float64
}

func seconds(nanos uint64) float64 { return time.Duration(nanos).Seconds() }

// stateFigures are the unlabelled figures of stateCollector.
func stateFigures() []stateMetric {
	return []stateMetric{
		gauge("desk_makers_online", "Parties with at least one stream socket open, the in-desk house makers included: the makers a taker can invite.",
			func(c *stateCollector) float64 { return float64(c.srv.Hub().PartiesOnline() + len(c.houses)) }),
		gauge("desk_sign_queue_depth", "Sign actions waiting for their party's signature (the action queue), after the loop's last input.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().SignQueue.Load()) }),
		counter("desk_http_rate_limited_total", "Requests refused by the per-IP limits.",
			func(c *stateCollector) float64 { return float64(c.srv.Metrics().RateLimited) }),
		counter("desk_loop_inputs_total", "Inputs applied by the desk loop.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().Inputs.Load()) }),
		counter("desk_loop_reads_total", "Reads answered by the desk loop.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().Reads.Load()) }),
		counter("desk_loop_apply_seconds_total", "Time spent applying inputs.",
			func(c *stateCollector) float64 { return seconds(c.n.Loop.Stats().ApplyNanos.Load()) }),
		gauge("desk_loop_queue_depth", "Requests waiting for the loop.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().QueueDepth.Load()) }),
		gauge("desk_loop_held_outputs", "Inputs applied whose outputs wait for durability.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().HeldOutputs.Load()) }),
		counter("desk_loop_panics_total", "Inputs whose application panicked (bugs).",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().PanicsHandled.Load()) }),
		counter("desk_loop_checkpoints_total", "Checkpoints taken (the state encoded, hashed and journaled as a digest).",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().Checkpoints.Load()) }),
		counter("desk_loop_checkpoint_seconds_total", "Time the loop spent taking checkpoints itself (the first after a start, or after a follower failed).",
			func(c *stateCollector) float64 { return seconds(c.n.Loop.Stats().CheckpointNanos.Load()) }),
		gauge("desk_loop_checkpoint_seconds_max", "The longest checkpoint the loop took itself: the longest pause of the loop.",
			func(c *stateCollector) float64 { return seconds(c.n.Loop.Stats().CheckpointMaxNanos.Load()) }),
		counter("desk_follower_checkpoint_seconds_total", "Time the follower desk spent encoding and hashing checkpoints, beside the loop.",
			func(c *stateCollector) float64 { return seconds(c.n.Loop.Stats().FollowerNanos.Load()) }),
		gauge("desk_follower_checkpoint_seconds_max", "The follower's longest checkpoint.",
			func(c *stateCollector) float64 { return seconds(c.n.Loop.Stats().FollowerMaxNanos.Load()) }),
		counter("desk_follower_failures_total", "Follower desks dropped after an error (bugs); each is replaced at the next checkpoint.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().FollowerFailures.Load()) }),
		gauge("desk_follower_lag_records", "Journal records waiting for the follower desk after the loop's last input.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().FollowerLag.Load()) }),
		counter("desk_follower_stalls_total", "Inputs after which the loop waited for room in the follower's full queue.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().FollowerStalls.Load()) }),
		counter("desk_follower_stall_seconds_total", "Time the loop waited for the follower's full queue.",
			func(c *stateCollector) float64 { return seconds(c.n.Loop.Stats().FollowerStallNanos.Load()) }),
		counter("desk_ledger_calls_total", "Ledger calls completed.",
			func(c *stateCollector) float64 { return float64(c.n.Loop.Stats().LedgerCalls.Load()) }),
		counter("desk_ledger_call_seconds_total", "Time spent in ledger calls.",
			func(c *stateCollector) float64 { return seconds(c.n.Loop.Stats().LedgerNanos.Load()) }),
		counter("desk_ledger_follower_failures_total", "Ledger followers that failed (bugs); each is replaced at the next snapshot.",
			func(c *stateCollector) float64 { return float64(c.n.LedgerSnapshots.FollowerFailures.Load()) }),
		gauge("desk_ledger_follower_lag_records", "Ledger journal records waiting for the follower ledger.",
			func(c *stateCollector) float64 { return float64(c.n.LedgerSnapshots.FollowerLag.Load()) }),
		counter("desk_ledger_follower_stalls_total", "Ledger records that waited for room in the follower's full queue (the ledger's lock held).",
			func(c *stateCollector) float64 { return float64(c.n.LedgerSnapshots.FollowerStalls.Load()) }),
		counter("desk_ledger_follower_stall_seconds_total", "Time ledger records waited for the follower's full queue.",
			func(c *stateCollector) float64 { return seconds(c.n.LedgerSnapshots.FollowerStallNanos.Load()) }),
		gauge("desk_ledger_offset", "The embedded ledger's offset.",
			func(c *stateCollector) float64 { return float64(c.n.Ledger.L.Offset()) }),
		gauge("desk_stream_sockets_open", "Stream sockets open.",
			func(c *stateCollector) float64 { return float64(c.srv.Metrics().SocketsOpen) }),
		counter("desk_stream_sockets_opened_total", "Stream sockets that completed the handshake.",
			func(c *stateCollector) float64 { return float64(c.srv.Metrics().SocketsOpened) }),
		counter("desk_stream_sockets_refused_total", "Stream upgrades refused or closed at once.",
			func(c *stateCollector) float64 { return float64(c.srv.Metrics().SocketsRefused) }),
		counter("desk_stream_frames_sent_total", "Stream frames written.",
			func(c *stateCollector) float64 { return float64(c.srv.Metrics().FramesSent) }),
		counter("desk_stream_writes_total", "Socket writes that carried stream frames (frames queued together for one socket share a write).",
			func(c *stateCollector) float64 { return float64(c.srv.Metrics().StreamWrites) }),
		counter("desk_stream_slow_consumers_total", "Sockets closed because their queue was full.",
			func(c *stateCollector) float64 { return float64(c.srv.Metrics().SlowConsumersDropped) }),
		counter("desk_stream_pong_timeouts_total", "Sockets dropped for a missed pong.",
			func(c *stateCollector) float64 { return float64(c.srv.Metrics().PongTimeouts) }),
	}
}

func gauge(name, help string, v func(*stateCollector) float64) stateMetric {
	return stateMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, v}
}

func counter(name, help string, v func(*stateCollector) float64) stateMetric {
	return stateMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, v}
}

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.figures {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{c.requests, c.ledgerSnapshots, c.houseSent, c.houseRefused, c.houseSkipped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.figures {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(c))
	}
	for _, r := range c.srv.Metrics().Requests {
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(r.Count), r.Route, strconv.Itoa(r.Status))
	}
	ls := &c.n.LedgerSnapshots
	ch <- prometheus.MustNewConstMetric(c.ledgerSnapshots, prometheus.CounterValue, float64(ls.FromLedger.Load()), "ledger")
	ch <- prometheus.MustNewConstMetric(c.ledgerSnapshots, prometheus.CounterValue, float64(ls.FromFollower.Load()), "follower")
	for _, h := range c.houses {
		ch <- prometheus.MustNewConstMetric(c.houseSent, prometheus.CounterValue, float64(h.metrics.sent.Load()), h.hint)
		ch <- prometheus.MustNewConstMetric(c.houseRefused, prometheus.CounterValue, float64(h.metrics.refused.Load()), h.hint)
		ch <- prometheus.MustNewConstMetric(c.houseSkipped, prometheus.CounterValue, float64(h.metrics.skipped.Load()), h.hint)
	}
}

// watchState registers the collector of the desk's own counters; call it once the node, the
// transport and the house makers exist.
func (m *deskMetrics) watchState(n *node.Node, srv *transport.Server, houses []*houseMaker) {
	m.reg.MustRegister(&stateCollector{
		n: n, srv: srv, houses: houses, figures: stateFigures(),
		requests: prometheus.NewDesc("desk_http_requests_total",
			"HTTP requests by route and status.", []string{"route", "status"}, nil),
		ledgerSnapshots: prometheus.NewDesc("desk_ledger_snapshots_total",
			"Ledger snapshots saved, by where they were encoded: the live ledger (every ledger call waits) or its follower.", []string{"source"}, nil),
		houseSent: prometheus.NewDesc("desk_house_quotes_sent_total",
			"Quotes the in-desk house makers submitted.", []string{"house"}, nil),
		houseRefused: prometheus.NewDesc("desk_house_quotes_refused_total",
			"House maker quotes the desk refused (ordinary racing).", []string{"house"}, nil),
		houseSkipped: prometheus.NewDesc("desk_house_rfqs_skipped_total",
			"RFQs the house makers' strategy skipped.", []string{"house"}, nil),
	})
}
