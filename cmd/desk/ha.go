package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/pglog"
)

// Roles of a desk on PostgreSQL (-role).
const (
	roleLeader = "leader" // lead now, or refuse to start when another desk leads
	roleAuto   = "auto"   // stand by until the leader's lock is free, then take over
)

// checkJournalFlags refuses a -journal or -role the desk cannot run with.
func checkJournalFlags(f flags) error {
	if f.journal != "" && !pglog.IsURL(f.journal) {
		return fmt.Errorf("-journal: want a postgres:// (or postgresql://) URL, or nothing for files under -data; got %q", pglog.Redact(f.journal))
	}
	switch f.role {
	case roleLeader:
	case roleAuto:
		if f.journal == "" {
			return errors.New("-role auto needs -journal postgres://…: a standby follows journals in PostgreSQL, not files")
		}
	default:
		return fmt.Errorf("-role: %q is neither leader nor auto", f.role)
	}
	return nil
}

// haRun is a desk on PostgreSQL: its store, the leader's lease, and how it learns it must
// stop (fenced by a newer epoch, or its lease lost). A nil *haRun is a desk on files.
type haRun struct {
	store  *pglog.Store
	lease  *pglog.Lease
	logger *slog.Logger
	// stop is closed at the first reason this desk may no longer serve (why).
	stop     chan struct{}
	why      error
	stopOnce sync.Once
	// api and admin are the standby's listeners, handed to the serving desk.
	api, admin net.Listener
	// standby is the state the standby kept current, taken over by node.Open (nil if it
	// could not follow: the take over then recovers from the journals).
	standby atomic.Pointer[node.Standby]
	// leading is 1 once this desk leads; takeover is how long its last take over took
	// (from getting the lock to serving), in seconds; lag is how many desk journal
	// records a standby has not read yet.
	leading  atomic.Bool
	takeover atomic.Uint64 // nanoseconds
}

// startHA opens the store and gets the lease: at once for -role leader, after standing by
// (serving 503 on the public API and not-ready on /readyz) for -role auto. It returns nil
// and ctx's error when ctx ends while standing by.
func startHA(ctx context.Context, f flags, logger *slog.Logger, metrics *deskMetrics, nopts node.Options) (*haRun, error) {
	h := &haRun{logger: logger, stop: make(chan struct{})}
	metrics.ops.standingBy(h)
	// -data still holds the pid file and the house makers' keys.
	if err := os.MkdirAll(f.data, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	store, err := pglog.Open(ctx, f.journal, pglog.Options{
		OnFenced: func(log string, err error) {
			h.halt(fmt.Errorf("the %s journal was taken over by another desk: %w", log, err))
		},
		OnWriteFailure: func(log string, err error) {
			h.halt(fmt.Errorf("the %s journal cannot be written any more: %w", log, err))
		},
		OnCommit: func(log string, records int, took time.Duration) { metrics.JournalSync(log, records, took) },
	})
	if err != nil {
		return nil, err
	}
	h.store = store
	metrics.reg.MustRegister(h.collectors()...)
	if f.role == roleLeader {
		lease, ok, err := store.TryLead(ctx, 0)
		if err != nil {
			store.Close()
			return nil, err
		}
		if !ok {
			store.Close()
			return nil, fmt.Errorf("another desk leads %s (it holds the leader's lock): start this one with -role auto to stand by", store.Where())
		}
		h.lease = lease
	} else if err := h.standBy(ctx, f, metrics, nopts); err != nil {
		store.Close()
		return nil, err
	}
	h.leading.Store(true)
	go func() {
		select {
		case <-h.lease.Lost():
			h.halt(h.lease.Err())
		case <-h.stop:
		}
	}()
	return h, nil
}

// standBy serves the standby's answers and follows the desk journal until this desk
// gets the leader's lock.
func (h *haRun) standBy(ctx context.Context, f flags, metrics *deskMetrics, nopts node.Options) error {
	var err error
	if h.api, err = net.Listen("tcp", f.addr); err != nil {
		return fmt.Errorf("listen on %s: %w", f.addr, err)
	}
	if h.admin, err = net.Listen("tcp", f.adminAddr); err != nil {
		_ = h.api.Close()
		return fmt.Errorf("listen on %s: %w", f.adminAddr, err)
	}
	apiL, adminL := newHandoff(h.api), newHandoff(h.admin)
	var notReady atomic.Bool
	api := &http.Server{Handler: http.HandlerFunc(standbyAnswer), ReadHeaderTimeout: 5 * time.Second}
	admin := &http.Server{Handler: adminHandler(metrics, &notReady), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = api.Serve(apiL) }()
	go func() { _ = admin.Serve(adminL) }()
	nopts.Journals = h.store
	sb, err := node.OpenStandby(ctx, nopts)
	if err != nil {
		h.logger.Warn("standby: cannot follow the journals; a take over will recover from them", "err", err)
	} else {
		h.standby.Store(sb)
	}
	h.logger.Info("desk standing by", "journal", h.store.Where(), "addr", f.addr, "admin", f.adminAddr, "following", sb != nil)
	lease, err := h.store.Lead(ctx, 0, 0)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = api.Shutdown(shutdownCtx)
	_ = admin.Shutdown(shutdownCtx)
	_ = apiL.TCPListener.SetDeadline(time.Time{}) // the serving desk accepts on them
	_ = adminL.TCPListener.SetDeadline(time.Time{})
	if err != nil {
		if sb := h.standby.Load(); sb != nil {
			sb.Close()
		}
		_ = h.api.Close()
		_ = h.admin.Close()
		return err
	}
	if sb := h.standby.Load(); sb != nil {
		if ferr := sb.Err(); ferr != nil {
			h.logger.Warn("standby: stopped following; the take over recovers from the journals", "err", ferr)
		}
	}
	h.lease = lease
	h.logger.Info("desk got the leader's lock: taking over", "journal", h.store.Where())
	return nil
}

// standbyAnswer answers every public request of a standby: 503 RETRY_LATER with
// Retry-After, as for any write the desk cannot make now.
func standbyAnswer(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"error":"this desk is a standby; the leader answers, or this desk once it takes over: retry shortly","code":"RETRY_LATER"}`+"\n")
}

// listen returns the standby's listener for addr, or a new one.
func (h *haRun) listen(addr string, admin bool) (net.Listener, error) {
	if h != nil && !admin && h.api != nil {
		return h.api, nil
	}
	if h != nil && admin && h.admin != nil {
		return h.admin, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return l, nil
}

// stopped is closed when this desk may no longer serve (reason says why); a nil channel
// for a desk on files: never.
func (h *haRun) stopped() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.stop
}

// reason is why stopped was closed.
func (h *haRun) reason() error {
	<-h.stop
	return h.why
}

func (h *haRun) halt(err error) {
	h.stopOnce.Do(func() {
		h.why = err
		close(h.stop)
	})
}

// served records the take over's duration once the desk serves, and logs the epochs
// it leads under (cmd/failover reads them to check that no epoch had two leaders).
func (h *haRun) served(n *node.Node, took time.Duration) {
	if h == nil {
		return
	}
	h.takeover.Store(uint64(took))
	de, le := n.Epochs()
	h.logger.Info("desk leads", "desk_epoch", de, "ledger_epoch", le, "takeover", took.String(),
		"from_standby", n.Recovered.FromStandby)
}

// close releases the lease and the store.
func (h *haRun) close() {
	if h == nil {
		return
	}
	if h.lease != nil {
		h.lease.Release()
	}
	h.store.Close()
}

// collectors are the HA figures on /metrics.
func (h *haRun) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "desk_ha_leader",
			Help: "1 when this desk leads (holds the leader's lock and writes the journals), 0 while it stands by."},
			func() float64 { return b2f(h.leading.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "desk_ha_takeover_seconds",
			Help: "How long this desk's take over took, from getting the leader's lock to serving (0 if it started as leader)."},
			func() float64 { return time.Duration(h.takeover.Load()).Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "desk_ha_follower_lag_records",
			Help: "Journal records (desk and ledger) the standby has not applied yet, as of its last read (0 on the leader)."},
			func() float64 { return float64(h.followerLag()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "desk_ha_follower_records_total",
			Help: "Journal records (desk and ledger) the standby applied while standing by."},
			func() float64 {
				if sb := h.standby.Load(); sb != nil {
					return float64(sb.Applied.Load())
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "desk_ha_follower_checkpoints_verified_total",
			Help: "The leader's desk checkpoints whose digest the standby's own state matched: those of the replay it started from and those it followed."},
			func() float64 { v, _ := h.standbyCheckpoints(); return float64(v) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "desk_ha_follower_checkpoint_mismatches_total",
			Help: "The leader's desk checkpoints whose digest differed from the standby's own state (a determinism bug: a take over would not serve the leader's state)."},
			func() float64 { _, m := h.standbyCheckpoints(); return float64(m) }),
	}
}

// standbyCheckpoints is what the standby verified of the leader's checkpoints (0, 0
// without a standby).
func (h *haRun) standbyCheckpoints() (verified, mismatched int) {
	if sb := h.standby.Load(); sb != nil {
		return sb.Checkpoints()
	}
	return 0, 0
}

// followerLag is the standby's lag (0 once leading, or without a standby).
func (h *haRun) followerLag() int64 {
	sb := h.standby.Load()
	if h.leading.Load() || sb == nil {
		return 0
	}
	d, l := sb.Lag()
	return d + l
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// handoff is a TCP listener that an http.Server can stop serving without closing it, so
// the standby's listener passes to the serving desk with no moment where the port is
// free: Close makes Accept return net.ErrClosed, and the listener stays open.
type handoff struct {
	*net.TCPListener
	closed atomic.Bool
}

func newHandoff(l net.Listener) *handoff { return &handoff{TCPListener: l.(*net.TCPListener)} }

// Accept implements net.Listener.
func (h *handoff) Accept() (net.Conn, error) {
	c, err := h.TCPListener.Accept()
	if h.closed.Load() {
		if c != nil {
			_ = c.Close()
		}
		return nil, net.ErrClosed
	}
	return c, err
}

// Close implements net.Listener: it wakes Accept and leaves the socket open.
func (h *handoff) Close() error {
	h.closed.Store(true)
	return h.TCPListener.SetDeadline(time.Now())
}
