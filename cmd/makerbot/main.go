// Command makerbot is the reference maker: a bot that runs forever, quotes every RFQ it can
// settle at the desk's reference price ± a spread, signs what it is handed, and keeps
// itself funded and connected. It is meant to be copied: the quoting rule lives in package
// strategy (one small file), the plumbing here.
//
//	makerbot -url http://127.0.0.1:8080 -identity ./makerbot-identity.json -spread-bps 20
//
// What it does:
//
//   - Identity: loads the identity file, or registers a new party (display name -name) and
//     saves it with mode 0600. A dead API key (401, or the stream closed with 4401) is
//     replaced through challenge + rotate with the party key, and the file is rewritten.
//     An unknown party (a desk whose data was wiped) is registered afresh.
//   - Funding: accepts every deposit (signing the transfer-accept), and draws from the
//     faucet only when a free holding is below its low-water mark (-low-water, default half
//     of what one faucet draw offers), at most once per -faucet-every.
//   - Quoting: quotes every open RFQ it is invited to at the reference price
//     (GET /maker/reference-price) ± -spread-bps, skips an RFQ that would spend more than
//     -max-share-bps of a free holding, signs the allocations, and quotes again when its
//     quote expires or is revoked while the RFQ is still open.
//   - Declining: an RFQ the strategy skips is declined (POST /maker/rfq/{id}/decline) with
//     the strategy's reason (strategy.DeclineReason: no reference price is price, too large
//     a share of a holding or a quote that rounds to zero is size, no free holding of what
//     the quote spends is inventory, else other), so the taker hears quote.declined rather
//     than silence. The bot declines an RFQ again only when the reason changes, and may
//     still quote it later (e.g. once funded). On by default; -decline=false turns it off.
//   - Signing: signs every action it is handed except withdrawals (transfer-out), which a
//     bot must never sign on its own.
//   - Connection: the stream reconnects with exponential backoff and jitter; every
//     -status-every the bot checks `invitable` in GET /maker/status and recycles a stream
//     the desk does not see; every -reconcile-every it re-reads its incoming RFQs and
//     pending actions, so a missed event costs at most that long. By default
//     (-cancel-on-disconnect, on) every stream is opened with ?cancelOnDisconnect=true:
//     when the bot's last stream drops (or the desk restarts) the desk revokes its live
//     quotes, and the bot quotes again once reconnected.
//   - Maker protection: with -mmp-window S (off by default) the bot sets its protection on
//     the desk at start (-mmp-max-fills, -mmp-max-notional, -mmp-freeze, default 60 s):
//     when fills in the window reach a limit the desk revokes its other quotes and refuses
//     new ones until the freeze ends; the bot logs the trip and quotes again after it.
//   - Metrics: Prometheus text on -metrics-addr/metrics: quotes sent, won, lost, skipped,
//     refused, the settle latency (from quote submission to the quote's win), key
//     recoveries, stream connects, faucet draws.
//
// Logs are structured (log/slog, text) on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/internal/cli"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/strategy"
)

func main() {
	cli.MainInterruptible("makerbot", func(ctx context.Context, args []string, _, stderr io.Writer) int {
		return run(ctx, args, stderr, os.Getenv)
	})
}

// config is the bot's command line.
type config struct {
	url, identity, name, metricsAddr, logLevel string
	params                                     strategy.Params
	lowWater                                   map[string]money.Decimal // nil: half a faucet drip
	reconcileEvery, statusEvery, faucetEvery   time.Duration
	maxBackoff                                 time.Duration
	cancelOnDisconnect                         bool
	decline                                    bool                       // decline what the strategy skips (decline.go)
	protection                                 *client.ProtectionSettings // nil: not set (-mmp-window 0)
}

func parseFlags(args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	var c config
	fs := flag.NewFlagSet("makerbot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.url, "url", orDefault(getenv("DESK_URL"), "http://127.0.0.1:8080"), "desk base URL (env DESK_URL)")
	fs.StringVar(&c.identity, "identity", orDefault(getenv("MAKERBOT_IDENTITY"), "./makerbot-identity.json"), "identity file (env MAKERBOT_IDENTITY); created at the first start")
	fs.StringVar(&c.name, "name", "makerbot", "display name used when registering")
	fs.IntVar(&c.params.SpreadBps, "spread-bps", 20, "distance from the reference price, in basis points")
	fs.IntVar(&c.params.MaxShareBps, "max-share-bps", 2500, "skip an RFQ that would spend more than this share of a free holding, in basis points")
	low := fs.String("low-water", "", "faucet low-water marks, e.g. cbtc=0.05,usdcx=5000 (default: half of one faucet draw of each instrument)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:9191", "listen address of /metrics (empty: none)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&c.reconcileEvery, "reconcile-every", 5*time.Second, "how often to re-read incoming RFQs, pending actions and funding")
	fs.DurationVar(&c.statusEvery, "status-every", 10*time.Second, "how often to check `invitable`")
	fs.DurationVar(&c.faucetEvery, "faucet-every", time.Minute, "least time between two faucet draws")
	fs.DurationVar(&c.maxBackoff, "max-backoff", 10*time.Second, "longest wait between reconnection attempts")
	fs.BoolVar(&c.cancelOnDisconnect, "cancel-on-disconnect", true, "open the stream with ?cancelOnDisconnect=true: the desk revokes the bot's live quotes when its last stream drops (the safe default: a bot that cannot hear its RFQs cannot renew or withdraw its quotes); -cancel-on-disconnect=false keeps them live")
	fs.BoolVar(&c.decline, "decline", true, "decline (POST /maker/rfq/{id}/decline) each RFQ the strategy skips, with its reason: price, size, inventory or other; -decline=false skips silently")
	protection := protectionFlags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.protection, err = protection(); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := c.params.Validate(); err != nil {
		return c, err
	}
	if *low != "" {
		c.lowWater = map[string]money.Decimal{}
		for _, kv := range strings.Split(*low, ",") {
			sym, amt, ok := strings.Cut(strings.TrimSpace(kv), "=")
			d, err := money.Parse(amt)
			if !ok || sym == "" || err != nil {
				return c, fmt.Errorf("-low-water: %q is not symbol=amount", kv)
			}
			c.lowWater[strings.ToLower(sym)] = d
		}
	}
	if c.reconcileEvery <= 0 || c.statusEvery <= 0 || c.faucetEvery <= 0 || c.maxBackoff <= 0 {
		return c, errors.New("durations must be positive")
	}
	return c, nil
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// run runs the bot until ctx ends; it returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string) int {
	cfg, err := parseFlags(args, stderr, getenv)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "makerbot:", err)
		}
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.logLevel)); err != nil {
		fmt.Fprintln(stderr, "makerbot: -log-level:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	b := newBot(cfg, log)
	if cfg.metricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			log.Error("metrics listener", "err", err)
			return 1
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			b.metrics.write(w)
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		log.Info("metrics serving", "addr", ln.Addr().String())
	}
	if err := b.run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("makerbot stopped", "err", err)
		return 1
	}
	log.Info("makerbot stopped")
	return 0
}
