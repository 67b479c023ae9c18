package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/transport"
	"github.com/deskco/rfqdesk/web/operator"
)

// The operator view (docs/operations.md): a page and two JSON endpoints on the admin
// listener, never the public one. They read what the desk already keeps (the loop's
// operator read, the metrics registry, the loop's and the node's counters) and the
// sampler's bounded time series; nothing they do feeds back into the desk.
const (
	// opsReadTimeout bounds the wait for the loop's operator read.
	opsReadTimeout = 2 * time.Second
	// opsQueryLimit is what ?limit= may ask of each list at most (machine.OpsMaxLimit).
	opsQueryLimit = machine.OpsMaxLimit
	// opsStateMaxAge is how long an answer of /ops/state is served again: several pages
	// open at once cost the loop one operator read a refresh, not one each.
	opsStateMaxAge = 500 * time.Millisecond
)

// opsView is the operator view's state: the desk it reads once it serves (nil before,
// and on a standby), the HA run it reports on (nil for a desk on files) and the sampler.
type opsView struct {
	metrics *deskMetrics
	sampler *opsSampler
	data    string // -data, where the file journals live
	files   bool   // the journals are files under data (not PostgreSQL)
	started time.Time
	live    atomic.Pointer[opsLive]
	ha      atomic.Pointer[haRun]
	// cache is the last answer of /ops/state, served again for opsStateMaxAge.
	cache struct {
		mu    sync.Mutex
		at    time.Time
		limit int
		body  []byte
	}
}

// opsLive is a serving desk as the operator view reads it.
type opsLive struct {
	n      *node.Node
	srv    *transport.Server
	houses int
}

func newOpsView(m *deskMetrics, data string, files bool) *opsView {
	v := &opsView{metrics: m, data: data, files: files, started: time.Now()}
	v.sampler = newOpsSampler(v)
	return v
}

// serving hands the view the desk it reads from now on.
func (v *opsView) serving(n *node.Node, srv *transport.Server, houses int) {
	if v != nil {
		v.live.Store(&opsLive{n: n, srv: srv, houses: houses})
	}
}

// standingBy hands the view the HA run whose standby it reports on.
func (v *opsView) standingBy(h *haRun) {
	if v != nil {
		v.ha.Store(h)
	}
}

// routes mounts the page and its endpoints on the admin mux.
func (v *opsView) routes(mux *http.ServeMux) {
	page := operator.Handler()
	mux.Handle("GET /ops/", http.StripPrefix("/ops", page))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ops/", http.StatusFound)
	})
	mux.HandleFunc("GET /ops/state", v.serveState)
	mux.HandleFunc("GET /ops/series", v.serveSeries)
}

// opsState is GET /ops/state.
type opsState struct {
	// Role is "leader" (serving), "standby" (following the journals, not serving) or
	// "starting" (recovering, not serving yet).
	Role          string           `json:"role"`
	Now           time.Time        `json:"now"`
	UptimeSeconds float64          `json:"uptimeSeconds"`
	Desk          *machine.OpsView `json:"desk"` // null unless serving
	// DeskError says why Desk is null while serving (the loop did not answer in time).
	DeskError string       `json:"deskError,omitempty"`
	Ledger    opsLedger    `json:"ledger"`
	Journals  []opsJournal `json:"journals"`
	Follower  opsFollower  `json:"follower"`
	Loop      opsLoop      `json:"loop"`
	Stream    opsStream    `json:"stream"`
}

// opsLedger is the ledger's health: calls, failures by category, the latency
// percentiles of the sampler's window, and what waits on the ledger.
type opsLedger struct {
	Calls    uint64            `json:"calls"`
	Failures map[string]uint64 `json:"failures"` // by category, bounded (maxLabelValues)
	// P50, P90, P99 are seconds over the last opsWindow samples; null without calls.
	P50 optFloat `json:"p50"`
	P90 optFloat `json:"p90"`
	P99 optFloat `json:"p99"`
	// WindowSeconds is the span of the percentiles.
	WindowSeconds int `json:"windowSeconds"`
	// InFlight are the calls with the ledger or waiting to be sent again, Retrying those
	// among them the desk sends again later (a cleanup the ledger could not confirm),
	// HeldReplies the requests whose answers wait on the ledger: from the desk's read.
	InFlight    int   `json:"inFlight"`
	Retrying    int   `json:"retrying"`
	HeldReplies int   `json:"heldReplies"`
	Offset      int64 `json:"offset"`
}

// opsJournal is one journal's figures.
type opsJournal struct {
	Name    string `json:"name"` // desk or ledger
	LastSeq uint64 `json:"lastSeq"`
	// Bytes is the size of its files (null on PostgreSQL or before serving).
	Bytes *int64 `json:"bytes"`
	// Syncs and Records are the group commits (fsyncs) and the records they made durable
	// since the start; FsyncP99 the 99th percentile fsync in seconds and RecordsPerSync
	// the group commit's mean size, both over the sampler's window (null when idle).
	Syncs          uint64   `json:"syncs"`
	Records        uint64   `json:"records"`
	FsyncP99       optFloat `json:"fsyncP99"`
	RecordsPerSync optFloat `json:"recordsPerSync"`
}

// opsFollower is how far the followers are behind.
type opsFollower struct {
	// DeskLag and LedgerLag are the records waiting for the in-process followers that
	// take the checkpoints and snapshots.
	DeskLag   int64 `json:"deskLag"`
	LedgerLag int64 `json:"ledgerLag"`
	// HA is the hot standby's state, null for a desk on files: on a standby, how many
	// journal records it has not applied yet; on the leader, 0 (its standbys report
	// their own lag on their own admin listeners).
	HA *opsHA `json:"ha"`
}

// opsHA is the HA figures of this desk.
type opsHA struct {
	Leader     bool    `json:"leader"`
	LagRecords int64   `json:"lagRecords"`
	Applied    uint64  `json:"applied"`
	TakeoverS  float64 `json:"takeoverSeconds"`
}

// opsLoop is the desk loop's load.
type opsLoop struct {
	Inputs      uint64 `json:"inputs"`
	QueueDepth  int64  `json:"queueDepth"`
	HeldOutputs int64  `json:"heldOutputs"`
	Panics      uint64 `json:"panics"`
}

// opsStream is the stream's sockets.
type opsStream struct {
	SocketsOpen  int64 `json:"socketsOpen"`
	MakersOnline int   `json:"makersOnline"`
}

// serveState answers GET /ops/state?limit=N (each list of the desk's read at most N,
// default machine.OpsDefaultLimit, at most opsQueryLimit).
func (v *opsView) serveState(w http.ResponseWriter, r *http.Request) {
	limit := machine.OpsDefaultLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > opsQueryLimit {
			opsError(w, http.StatusBadRequest, "limit must be a whole number between 1 and "+strconv.Itoa(opsQueryLimit))
			return
		}
		limit = n
	}
	v.cache.mu.Lock()
	defer v.cache.mu.Unlock()
	if time.Since(v.cache.at) >= opsStateMaxAge || v.cache.limit != limit {
		// Not the request's context: the answer is cached for every page, so one page that
		// goes away while the desk reads must not leave its cancellation to the others.
		ctx, cancel := context.WithTimeout(context.Background(), opsReadTimeout)
		defer cancel()
		body, err := json.Marshal(v.state(ctx, limit))
		if err != nil {
			opsError(w, http.StatusInternalServerError, "encode the state: "+err.Error())
			return
		}
		v.cache.at, v.cache.limit, v.cache.body = time.Now(), limit, append(body, '\n')
	}
	opsHeaders(w)
	_, _ = w.Write(v.cache.body)
}

// state builds the operator's state; it never fails: what it cannot read is null.
func (v *opsView) state(ctx context.Context, limit int) opsState {
	now := time.Now()
	st := opsState{Role: "starting", Now: now, UptimeSeconds: now.Sub(v.started).Seconds(), Journals: []opsJournal{}}
	st.Ledger.Failures = v.metrics.ledgerFailureCounts()
	st.Ledger.WindowSeconds = int(opsWindow * opsSampleEvery / time.Second)
	latest := v.sampler.latest()
	st.Ledger.P50, st.Ledger.P90, st.Ledger.P99 = latest.P50, latest.P90, latest.P99
	syncs := v.metrics.journalSyncs()
	for i, name := range [...]string{"desk", "ledger"} {
		j := opsJournal{Name: name, Syncs: syncs[name].count, Records: syncs[name].records,
			FsyncP99: latest.FsyncP99[i], RecordsPerSync: latest.PerSync[i]}
		st.Journals = append(st.Journals, j)
	}
	if h := v.ha.Load(); h != nil {
		ha := &opsHA{Leader: h.leading.Load(), LagRecords: h.followerLag(), TakeoverS: time.Duration(h.takeover.Load()).Seconds()}
		if sb := h.standby.Load(); sb != nil {
			ha.Applied = sb.Applied.Load()
		}
		st.Follower.HA = ha
		if !ha.Leader {
			st.Role = "standby"
		}
	}
	live := v.live.Load()
	if live == nil {
		return st
	}
	st.Role = "leader"
	stats := live.n.Loop.Stats()
	st.Ledger.Calls = stats.LedgerCalls.Load()
	st.Ledger.Offset = live.n.Ledger.L.Offset()
	deskSeq, ledgerSeq := live.n.JournalLastSeqs()
	st.Journals[0].LastSeq, st.Journals[1].LastSeq = deskSeq, ledgerSeq
	if v.files {
		for i, dir := range [...]string{"desk", "ledger"} {
			if b, err := dirBytes(filepath.Join(v.data, dir)); err == nil {
				st.Journals[i].Bytes = &b
			}
		}
	}
	st.Follower.DeskLag = stats.FollowerLag.Load()
	st.Follower.LedgerLag = live.n.LedgerSnapshots.FollowerLag.Load()
	st.Loop = opsLoop{Inputs: stats.Inputs.Load(), QueueDepth: stats.QueueDepth.Load(), HeldOutputs: stats.HeldOutputs.Load(),
		Panics: stats.PanicsHandled.Load()}
	sm := live.srv.Metrics()
	st.Stream = opsStream{SocketsOpen: int64(sm.SocketsOpen), MakersOnline: live.makersOnline()}
	desk, err := live.n.Loop.ReadOps(ctx, limit)
	if err != nil {
		st.DeskError = err.Error()
		return st
	}
	st.Desk = &desk
	st.Ledger.InFlight, st.Ledger.Retrying, st.Ledger.HeldReplies = desk.Counts.LedgerCalls, desk.Counts.CallRetries, desk.Counts.HeldReplies
	return st
}

// makersOnline is what desk_makers_online reports: the parties with a stream socket open
// and the in-desk house makers.
func (l *opsLive) makersOnline() int { return l.srv.Hub().PartiesOnline() + l.houses }

// serveSeries answers GET /ops/series?since=T: the sampler's samples taken after T (unix
// milliseconds; 0 or absent: all it holds, at most opsSeriesCap).
func (v *opsView) serveSeries(w http.ResponseWriter, r *http.Request) {
	var since int64
	if s := r.URL.Query().Get("since"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			opsError(w, http.StatusBadRequest, "since must be a time in unix milliseconds")
			return
		}
		since = n
	}
	opsJSON(w, v.sampler.series(since))
}

// dirBytes sums the sizes of the regular files in dir (not below it).
func dirBytes(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed meanwhile (a pruned segment)
			}
			return 0, err
		}
		total += info.Size()
	}
	return total, nil
}

func opsJSON(w http.ResponseWriter, body any) {
	opsHeaders(w)
	_ = json.NewEncoder(w).Encode(body)
}

func opsHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

func opsError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": "BAD_REQUEST"})
}

// ledgerFailureCounts reads desk_ledger_failures_total by category.
func (m *deskMetrics) ledgerFailureCounts() map[string]uint64 {
	out := map[string]uint64{}
	for _, mt := range collect(m.ledgerFailures) {
		if c := mt.GetCounter(); c != nil {
			out[labelOf(mt, "category")] = uint64(c.GetValue())
		}
	}
	return out
}

// syncFigures are one journal's group commits since the start.
type syncFigures struct{ count, records uint64 }

// journalSyncs reads the fsync count and the records synced, by journal.
func (m *deskMetrics) journalSyncs() map[string]syncFigures {
	out := map[string]syncFigures{}
	for _, mt := range collect(m.journalFsync) {
		name := labelOf(mt, "journal")
		f := out[name]
		f.count = mt.GetHistogram().GetSampleCount()
		out[name] = f
	}
	for _, mt := range collect(m.journalRecords) {
		name := labelOf(mt, "journal")
		f := out[name]
		f.records = uint64(mt.GetCounter().GetValue())
		out[name] = f
	}
	return out
}

// collect reads a collector's metrics as the registry would, without the exposition.
func collect(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric, maxLabelValues)
	go func() { c.Collect(ch); close(ch) }()
	var out []*dto.Metric
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) == nil {
			out = append(out, &d)
		}
	}
	return out
}

// labelOf is the value of a metric's label name ("" if it has none).
func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
