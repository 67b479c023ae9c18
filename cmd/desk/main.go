// Command desk runs the request-for-quote swap desk: the public API (REST and the maker
// stream) on -addr, health, Prometheus metrics and profiles on -admin-addr, and the
// embedded ledger simulator, all durable under -data. With no flags it serves a testnet desk on
// 127.0.0.1:8080 with data in ./desk-data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/internal/cli"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/transport"
	"github.com/deskco/rfqdesk/web/console"
)

func main() {
	cli.MainInterruptible("desk", func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		node.ApplyGCPercent(os.Getenv)
		return run(ctx, args, stdout, stderr, os.Getenv, nil)
	})
}

// flags are the command line.
type flags struct {
	addr, adminAddr, data, network, config, logLevel string
	logFormat                                        string
	journal, role                                    string // ha.go
	printConfig                                      bool
	checkpointEvery                                  int
}

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("desk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "public API listen address")
	fs.StringVar(&f.adminAddr, "admin-addr", "127.0.0.1:9090", "health, metrics and profiles listen address (never public)")
	fs.StringVar(&f.data, "data", "./desk-data", "data directory (journals and snapshots)")
	fs.StringVar(&f.network, "network", "", "ledger profile: testnet, sandbox or mainnet (overrides the file)")
	fs.StringVar(&f.config, "config", "", "configuration file (TOML)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text (logfmt) or json (one object a line)")
	fs.BoolVar(&f.printConfig, "print-config", false, "print the configuration in force in -data (else the effective one) and exit")
	fs.StringVar(&f.journal, "journal", "", "where the journals and snapshots live: empty for files under -data, or a postgres:// URL (docs/ha.md; the password may come from PGPASSWORD)")
	fs.StringVar(&f.role, "role", roleLeader, "with -journal postgres://: leader (lead now, or refuse when another desk leads) or auto (stand by, take over when the leader is gone)")
	fs.IntVar(&f.checkpointEvery, "checkpoint-every", 0, "inputs between a checkpoint and snapshot of the desk and its ledger (0: 10000, or more for a large state, at most 256 encoded bytes per input)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := checkJournalFlags(f); err != nil {
		fmt.Fprintln(stderr, err)
		return f, err
	}
	return f, nil
}

// run is the whole process until ctx ends (main ends it on SIGINT/SIGTERM); ready, if
// set, receives the bound addresses once serving (tests use it).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, ready chan<- [2]string) int {
	f, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fc, err := loadConfig(f.config)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if f.network != "" {
		fc.Network = f.network
	}
	if f.printConfig {
		if err := printInForce(fc, f.data, getenv, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	deskCfg, spec, err := fc.resolve(getenv, houseKeys(f.data))
	if err != nil {
		fmt.Fprintln(stderr, "configuration:", err)
		return 2
	}
	if err := serve(ctx, f, fc, deskCfg, spec, logger, ready); err != nil {
		logger.Error("desk stopped", "err", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format: %q is neither text nor json", format)
}

// sinkProxy lets the node start before the transport whose hub receives its events: the
// loop's first input (Boot) has no socket to reach. It also tees the events of the in-desk
// house makers' parties to them (without blocking: see houseRouter.route).
type sinkProxy struct {
	hub    atomic.Pointer[transport.Hub]
	houses atomic.Pointer[houseRouter]
	// metrics derives the business metrics from the outputs (set before the node starts).
	metrics *deskMetrics
}

func (s *sinkProxy) Deliver(out machine.Outputs) {
	if s.metrics != nil {
		s.metrics.observeOutputs(out)
	}
	if h := s.hub.Load(); h != nil {
		h.Deliver(out)
	}
	if r := s.houses.Load(); r != nil {
		r.route(out)
	}
}

// serve runs the desk until ctx ends, then shuts down gracefully: stop accepting, finish
// in-flight requests, close sockets with 1001, let the loop flush, close the journals.
func serve(ctx context.Context, f flags, fc fileConfig, deskCfg machine.Config, spec node.LedgerSpec,
	logger *slog.Logger, ready chan<- [2]string) error {
	metrics := newDeskMetrics()
	metrics.ops = newOpsView(metrics, f.data, f.journal == "")
	stopSampler := metrics.ops.sampler.start()
	defer stopSampler()
	sink := &sinkProxy{metrics: metrics}
	nopts := node.Options{
		Dir: f.data, Desk: deskCfg, Ledger: spec, Clock: wallClock{}, Sink: sink, Logger: logger,
		Sync: journal.SyncAlways, Retries: 3, Backoff: ledgeradapter.RealBackoff, CheckpointEvery: f.checkpointEvery,
		Observer: metrics,
	}
	var ha *haRun
	if f.journal != "" {
		var err error
		if ha, err = startHA(ctx, f, logger, metrics, nopts); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while standing by
			}
			return fmt.Errorf("open the journals: %w", err)
		}
		defer ha.close()
		nopts.Journals, nopts.Standby = ha.store, ha.standby.Load()
	}
	con, err := console.New()
	if err != nil {
		return err
	}
	started := time.Now()
	n, err := node.Open(nopts)
	if err != nil {
		return fmt.Errorf("open the desk: %w", err)
	}
	removePID, err := writePIDFile(f.data)
	if err != nil {
		_ = n.Close(context.Background())
		return err
	}
	defer removePID()
	srv := transport.New(transport.Options{
		Desk: n.Loop, Logger: logger, PerIPPerMinute: fc.PerIPPerMinute, PingInterval: time.Duration(fc.PingInterval),
		ObserveRequest: metrics.observeRequest, CORSOrigins: fc.CORSOrigins,
		Console: con,
	})
	sink.hub.Store(srv.Hub())

	makers := newHouseMakers(fc, n.Config, n.Loop, logger)
	router := houseRouter{}
	for _, h := range makers {
		router[h.party] = h
	}
	sink.houses.Store(&router)
	houseCtx, stopHouses := context.WithCancel(context.Background())
	var houses sync.WaitGroup
	defer houses.Wait()
	defer stopHouses()
	for _, h := range makers {
		openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := h.open(openCtx)
		cancel()
		if err != nil {
			_ = n.Close(context.Background())
			return err
		}
		houses.Add(1)
		go func() { defer houses.Done(); h.run(houseCtx) }()
	}

	api, err := ha.listen(f.addr, false)
	if err != nil {
		_ = n.Close(context.Background())
		return err
	}
	admin, err := ha.listen(f.adminAddr, true)
	if err != nil {
		_ = api.Close()
		_ = n.Close(context.Background())
		return err
	}
	var readyFlag atomic.Bool
	httpAPI := srv.HTTPServer(f.addr)
	metrics.watchState(n, srv, makers)
	metrics.ops.serving(n, srv, len(makers))
	httpAdmin := &http.Server{Handler: adminHandler(metrics, &readyFlag), ReadHeaderTimeout: 5 * time.Second}
	errs := make(chan error, 2)
	go func() { errs <- httpAPI.Serve(api) }()
	go func() { errs <- httpAdmin.Serve(admin) }()
	readyFlag.Store(true)
	ha.served(n, time.Since(started))
	logger.Info("desk serving", "addr", api.Addr().String(), "admin", admin.Addr().String(), "data", f.data,
		"network", n.Config.Network, "fresh", n.Recovered.Fresh, "snapshot", n.Recovered.SnapshotSeq,
		"replayed", n.Recovered.DeskInputs, "ledgerReplayed", n.Recovered.LedgerInputs, "startup", time.Since(started).String())
	if n.Recovered.DigestMismatch > 0 {
		logger.Error("replay met checkpoints whose digest differs: the desk is not deterministic", "count", n.Recovered.DigestMismatch)
	}
	if ready != nil {
		ready <- [2]string{api.Addr().String(), admin.Addr().String()}
	}

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case serveErr = <-errs:
		logger.Error("a listener failed", "err", serveErr)
	case <-ha.stopped():
		// Another desk leads: stop serving at once. Nothing this desk did not make durable
		// was acknowledged, and nothing more of it can be.
		readyFlag.Store(false)
		_ = httpAPI.Close()
		_ = httpAdmin.Close()
		stopHouses()
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = n.Close(closeCtx)
		cancel()
		return fmt.Errorf("fenced: this desk no longer leads %s and stopped serving (%w)", ha.store.Where(), ha.reason())
	}
	readyFlag.Store(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	flushed := shutdownReport{sockets: srv.Metrics().SocketsOpen, houses: len(makers)}
	if err := httpAPI.Shutdown(shutdownCtx); err != nil {
		logger.Warn("finish in-flight requests", "err", err)
	}
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("close stream sockets", "err", err)
	}
	stopHouses()
	houses.Wait()
	closeErr := n.Close(shutdownCtx)
	if closeErr != nil {
		serveErr = errors.Join(serveErr, closeErr)
	}
	flushed.log(logger, n, metrics, started, closeErr)
	_ = httpAdmin.Shutdown(shutdownCtx)
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// wallClock is the process's clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
