package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// The operator view's cost (docs/performance.md): the desk process's CPU under the same
// paced load with the view polled once a second, as the page does, and without, in
// alternating phases of one run (the machine's other load spreads over both; the phases
// run off-on, on-off, off-on, ... so that a drift of the desk's own cost spreads too).
// Run it with
//
//	go test ./cmd/desk -run '^$' -bench OperatorViewCPU -benchtime 1x
//
// It reports cpu-off-s and cpu-on-s (the desk's user+system CPU seconds in all the phases
// of each kind), trades-off and trades-on (the load settled in each, to check it was the
// same) and growth-% (on/off − 1, in percent; the target is under 5).
const (
	opsBenchRounds  = 4                      // of two phases, off-on then on-off
	opsBenchPhase   = 15 * time.Second       // each phase
	opsBenchWarmUp  = 10 * time.Second       // of load before the first phase
	opsBenchPace    = 200 * time.Millisecond // each worker starts a lifecycle at most this often
	opsBenchWorkers = 4                      // so at most 20 trades/s
	opsBenchPoll    = time.Second            // the page's refresh
)

func BenchmarkOperatorViewCPU(b *testing.B) {
	dir := b.TempDir()
	bin := buildBinary(b, dir, ".", "desk")
	cfg := filepath.Join(dir, "desk.toml")
	if err := os.WriteFile(cfg, []byte(opsConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	desk := launch(b, exec.Command(bin, "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"), "-config", cfg), false)
	cmd, base, admin := desk.cmd, desk.base, desk.admin
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	taker, err := client.New(base, client.WithAPIKey(houseKey))
	if err != nil {
		b.Fatal(err)
	}
	s := taker.Subscribe(ctx, nil)
	defer s.Close()
	var settled atomic.Int64
	loadErr := make(chan error, 1)
	go func() { loadErr <- opsBenchLoad(ctx, taker, s, &settled) }()

	time.Sleep(opsBenchWarmUp)
	b.ResetTimer()
	var cpu, trades [2]float64 // [0] off, [1] on
	for round := range b.N * opsBenchRounds {
		// off, on, then on, off: the desk's cost per trade drifts as its retained state
		// grows, and a fixed order would hand the drift to the later kind.
		for k := range 2 {
			on := k
			if round%2 == 1 {
				on = 1 - k
			}
			before, t0 := procCPU(b, cmd.Process.Pid), settled.Load()
			phase, stop := context.WithTimeout(ctx, opsBenchPhase)
			if on == 1 {
				opsBenchPollView(phase, admin)
			}
			<-phase.Done()
			stop()
			cpu[on] += procCPU(b, cmd.Process.Pid) - before
			trades[on] += float64(settled.Load() - t0)
			select {
			case err := <-loadErr:
				b.Fatalf("the load stopped: %v", err)
			default:
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(cpu[0], "cpu-off-s")
	b.ReportMetric(cpu[1], "cpu-on-s")
	b.ReportMetric(trades[0], "trades-off")
	b.ReportMetric(trades[1], "trades-on")
	b.ReportMetric(100*(cpu[1]/cpu[0]-1), "growth-%")
}

// opsBenchLoad runs opsBenchWorkers workers of the house taker's lifecycles against the
// in-desk house maker until ctx ends, each at most one lifecycle per opsBenchPace: an RFQ,
// the maker's quote accepted, the trade settled (the directions alternate, so the
// balances hold). One stream serves them all, its events routed by RFQ and trade.
func opsBenchLoad(ctx context.Context, taker *client.Client, s *client.Stream, settled *atomic.Int64) error {
	r := &opsRouter{waiting: map[string]chan client.Event{}, early: map[string]client.Event{}}
	go r.run(s)
	errs := make(chan error, opsBenchWorkers)
	for w := range opsBenchWorkers {
		go func() { errs <- opsBenchWorker(ctx, taker, r, w, settled) }()
	}
	var first error
	for range opsBenchWorkers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func opsBenchWorker(ctx context.Context, taker *client.Client, r *opsRouter, w int, settled *atomic.Int64) error {
	tick := time.NewTicker(opsBenchPace)
	defer tick.Stop()
	for i := w; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		dir := client.Sell
		if i%2 == 1 {
			dir = client.Buy
		}
		rfq, err := taker.CreateRFQ(ctx, client.CreateRFQRequest{Direction: dir, Qty: "0.01", Base: "cbtc", Quote: "usdcx",
			InvitedMakers: []string{"house-maker"}, TTLSeconds: 30})
		if err != nil {
			return ctxOr(ctx, fmt.Errorf("create an RFQ: %w", err))
		}
		ev, err := r.await(ctx, "rfq:"+rfq.RFQID)
		if err != nil {
			return ctxOr(ctx, err)
		}
		q, _ := ev.QuoteCreated()
		tr, err := taker.AcceptQuote(ctx, q.QuoteID)
		if err != nil {
			return ctxOr(ctx, fmt.Errorf("accept: %w", err))
		}
		if ev, err = r.await(ctx, "trade:"+tr.TradeID); err != nil {
			return ctxOr(ctx, err)
		}
		if ev.Type != client.EventTradeSettled {
			return fmt.Errorf("trade %s: %s %s", tr.TradeID, ev.Type, ev.Payload)
		}
		settled.Add(1)
	}
}

func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// opsRouter hands the stream's events to the workers waiting for them: quote.created by
// RFQ, trade.settled and trade.failed by trade. An event nobody waits for yet is kept
// (at most opsRouterEarly of them) for the worker about to ask.
type opsRouter struct {
	mu      sync.Mutex
	waiting map[string]chan client.Event
	early   map[string]client.Event
}

const opsRouterEarly = 1000

func (r *opsRouter) run(s *client.Stream) {
	for e := range s.Events() {
		var key string
		switch e.Type {
		case client.EventQuoteCreated:
			if q, err := e.QuoteCreated(); err == nil {
				key = "rfq:" + q.RFQID
			}
		case client.EventTradeSettled, client.EventTradeFailed:
			var t struct {
				TradeID string `json:"tradeId"`
			}
			if json.Unmarshal(e.Payload, &t) == nil {
				key = "trade:" + t.TradeID
			}
		}
		if key == "" {
			continue
		}
		r.mu.Lock()
		if ch, ok := r.waiting[key]; ok {
			delete(r.waiting, key)
			ch <- e
		} else if _, seen := r.early[key]; !seen {
			if len(r.early) >= opsRouterEarly {
				clear(r.early)
			}
			r.early[key] = e
		}
		r.mu.Unlock()
	}
}

// await returns the event of key, waiting at most 10 seconds.
func (r *opsRouter) await(ctx context.Context, key string) (client.Event, error) {
	r.mu.Lock()
	if e, ok := r.early[key]; ok {
		delete(r.early, key)
		r.mu.Unlock()
		return e, nil
	}
	ch := make(chan client.Event, 1)
	r.waiting[key] = ch
	r.mu.Unlock()
	select {
	case e := <-ch:
		return e, nil
	case <-time.After(10 * time.Second):
		return client.Event{}, fmt.Errorf("no event for %s within 10s", key)
	case <-ctx.Done():
		return client.Event{}, ctx.Err()
	}
}

// opsBenchPollView fetches what the page fetches, once a second, until ctx ends: the
// state, and the series since the last sample it has.
func opsBenchPollView(ctx context.Context, admin string) {
	go func() {
		tick := time.NewTicker(opsBenchPoll)
		defer tick.Stop()
		var since int64
		for {
			for _, path := range []string{"/ops/state", "/ops/series?since=" + strconv.FormatInt(since, 10)} {
				req, err := http.NewRequestWithContext(ctx, "GET", admin+path, nil)
				if err != nil {
					return
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				var series struct{ T []int64 }
				if strings.HasPrefix(path, "/ops/series") && json.NewDecoder(resp.Body).Decode(&series) == nil && len(series.T) > 0 {
					since = series.T[len(series.T)-1]
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// procCPU is the user+system CPU seconds of process pid so far (Linux /proc).
func procCPU(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("the desk's CPU time needs Linux's /proc: %v", err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return (utime + stime) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux the desk
// targets.
const clockTicks = 100
