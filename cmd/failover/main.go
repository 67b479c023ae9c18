// Command failover rehearses a desk's failover on PostgreSQL (`make ha`): it starts a
// PostgreSQL cluster of its own (pgcluster: initdb in a temporary directory, loopback, a
// free port), two desk processes on it with -role auto, and a bounded load of takers
// (registrations, faucet draws, trades with the house maker). Then, for -rounds rounds,
// it kills the leader at a random moment (SIGKILL), or pauses it (SIGSTOP) until the
// standby has taken over and resumes it (SIGCONT), so that a zombie leader tries to
// write. After each round it checks, on the new leader:
//
//   - losses: every acknowledged registration still authenticates, every acknowledged
//     trade is in its taker's trades, and every party that never met a failure sees the
//     balances it last saw;
//   - split-brain writes: records of an older epoch after a newer one's in either journal,
//     and epochs claimed by more than one desk process (each desk logs the epochs it
//     leads under);
//   - the zombie: it must exit non-zero saying it was fenced or lost the leader's lock,
//     and a request sent to it while paused must not be acknowledged.
//
// It prints one line a round and a summary: rounds, writes, losses, split-brain writes,
// zombies fenced, and the take over time (from the signal to the standby's /readyz
// answering 200) at p50 and p99. It exits 1 when a loss, a split-brain write or an
// unfenced zombie was found.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/internal/cli"
	"github.com/deskco/rfqdesk/internal/pgcluster"
)

func main() { cli.MainInterruptible("failover", run) }

// options are the command line.
type options struct {
	rounds, workers  int
	deskBin, workDir string
	seed             uint64
	minRun, maxRun   time.Duration
	stopShare        float64
	keep             bool
	// bench, when set, measures trades per second with each backend instead (bench.go).
	bench                    time.Duration
	benchMakers, benchTakers int
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("failover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.rounds, "rounds", 10, "failovers to rehearse")
	fs.IntVar(&o.workers, "workers", 4, "takers trading at once (the bounded load)")
	fs.StringVar(&o.deskBin, "desk-bin", "", "desk binary (default: go build ./cmd/desk)")
	fs.StringVar(&o.workDir, "dir", "", "working directory for the desks' data and logs (default: a temporary one)")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the random moments and signals (0: drawn, and printed)")
	fs.DurationVar(&o.minRun, "min-run", 500*time.Millisecond, "least time under load before a failure")
	fs.DurationVar(&o.maxRun, "max-run", 3*time.Second, "most time under load before a failure")
	fs.Float64Var(&o.stopShare, "stop-share", 0.5, "share of rounds that pause the leader (SIGSTOP) instead of killing it")
	fs.BoolVar(&o.keep, "keep", false, "keep the working directory (logs) at the end")
	fs.DurationVar(&o.bench, "bench", 0, "instead of failovers: settled trades per second over the wire on files and on PostgreSQL (cmd/loadgen), phases this long")
	fs.IntVar(&o.benchMakers, "bench-makers", 10, "makers of -bench")
	fs.IntVar(&o.benchTakers, "bench-takers", 8, "takers of -bench")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.rounds < 1 || o.workers < 1 || o.minRun <= 0 || o.maxRun < o.minRun || o.stopShare < 0 || o.stopShare > 1 {
		fmt.Fprintln(stderr, "failover: -rounds and -workers must be positive, 0 < -min-run <= -max-run, 0 <= -stop-share <= 1")
		return o, fmt.Errorf("bad flags")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	if o.bench > 0 {
		if err := benchTrades(ctx, o, stdout); err != nil {
			fmt.Fprintln(stderr, "failover:", err)
			return 1
		}
		return 0
	}
	if o.seed == 0 {
		o.seed = rand.Uint64()
	}
	fmt.Fprintf(stdout, "failover: seed %d, %d rounds, %d workers\n", o.seed, o.rounds, o.workers)
	r, err := newRehearsal(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "failover:", err)
		return 1
	}
	res, err := r.run(ctx)
	r.close()
	if err != nil {
		fmt.Fprintln(stderr, "failover:", err)
		if !o.keep {
			fmt.Fprintln(stderr, "failover: rerun with -keep -dir DIR to keep the desks' logs")
		}
		return 1
	}
	res.print(stdout)
	if !res.ok() {
		return 1
	}
	return 0
}

// rehearsal is one run: the cluster, the two desks and the load.
type rehearsal struct {
	o       options
	out     io.Writer
	rng     *rand.Rand
	dir     string
	cluster *pgcluster.Cluster
	dsn     string
	desks   [2]*desk
	load    *load
}

func newRehearsal(ctx context.Context, o options, out io.Writer) (*rehearsal, error) {
	r := &rehearsal{o: o, out: out, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))}
	ok := false
	defer func() {
		if !ok {
			r.close()
		}
	}()
	var err error
	if r.dir = o.workDir; r.dir == "" {
		if r.dir, err = os.MkdirTemp("", "rfqdesk-failover-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, err
	}
	bin := o.deskBin
	if bin == "" {
		bin = filepath.Join(r.dir, "desk")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/desk")
		if b, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build the desk: %w\n%s", err, b)
		}
	}
	if r.cluster, err = pgcluster.Start(ctx); err != nil {
		return nil, err
	}
	if r.dsn, err = r.cluster.CreateDatabase(ctx, "desk"); err != nil {
		return nil, err
	}
	cfg := filepath.Join(r.dir, "desk.toml")
	if err := os.WriteFile(cfg, []byte(deskConfig), 0o600); err != nil {
		return nil, err
	}
	for i, name := range []string{"a", "b"} {
		if r.desks[i], err = newDesk(name, bin, cfg, r.dsn, r.dir); err != nil {
			return nil, err
		}
	}
	// The first to start leads: start it alone, so the take overs measured are the
	// rounds', and the other stands by.
	if err := r.desks[0].start(); err != nil {
		return nil, err
	}
	if err := r.desks[0].waitReady(ctx, 60*time.Second); err != nil {
		return nil, err
	}
	if err := r.desks[1].start(); err != nil {
		return nil, err
	}
	if err := r.desks[1].waitStandby(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	r.load = newLoad(o.workers, r.desks[0].base())
	ok = true
	return r, nil
}

// deskConfig is the desks' configuration: both read the same one. The house maker's key
// is set, not drawn: each desk has its own -data, where a drawn key would be kept.
const deskConfig = `
faucet_cooldown = "0s"
per_ip_per_minute = 10000000

[[house]]
name = "house-maker"
role = "maker"
strategy = true
api_key = "hk_failover_rehearsal_0123456789abcdef"
fund = { cc = "5000000", usdcx = "10000000", cbtc = "1000", ceth = "300" }
`

func (r *rehearsal) close() {
	if r.load != nil {
		r.load.stop()
	}
	for _, d := range r.desks {
		if d != nil {
			d.terminate()
		}
	}
	if r.cluster != nil {
		if err := r.cluster.Stop(); err != nil {
			fmt.Fprintln(r.out, "failover: stop PostgreSQL:", err)
		}
	}
	if !r.o.keep && r.o.workDir == "" && r.dir != "" {
		_ = os.RemoveAll(r.dir)
	} else if r.dir != "" {
		fmt.Fprintln(r.out, "failover: logs and data kept in", r.dir)
	}
}

// run rehearses the rounds.
func (r *rehearsal) run(ctx context.Context) (*results, error) {
	res := &results{}
	r.load.start()
	leader, standby := r.desks[0], r.desks[1]
	for round := 1; round <= r.o.rounds; round++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		wait := r.o.minRun + time.Duration(r.rng.Int64N(int64(r.o.maxRun-r.o.minRun)+1))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pause := r.rng.Float64() < r.o.stopShare
		rr, err := r.failover(ctx, leader, standby, pause)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
		check, err := r.load.verify(ctx, standby.base())
		if err != nil {
			return nil, fmt.Errorf("round %d: verify: %w", round, err)
		}
		split, err := splitBrain(ctx, r.dsn, r.desks[:])
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
		rr.check, rr.split = check, split
		res.add(rr)
		fmt.Fprintln(r.out, rr.line(round))
		// The old leader comes back as the standby.
		if err := leader.start(); err != nil {
			return nil, fmt.Errorf("round %d: restart desk %s: %w", round, leader.name, err)
		}
		if err := leader.waitStandby(ctx, 30*time.Second); err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
		r.load.resume()
		leader, standby = standby, leader
	}
	r.load.stop()
	res.writes = r.load.acknowledged()
	return res, nil
}

// roundResult is what one round found.
type roundResult struct {
	signal   string
	takeover time.Duration
	hot      bool // the new leader started from its standby's followed state
	zombie   zombieReport
	check    verdict
	split    int
}

func (rr roundResult) line(round int) string {
	s := fmt.Sprintf("round %3d: %-7s takeover %6dms (hot %-5v)  acked %5d  lost %d  split-brain %d", round, rr.signal,
		rr.takeover.Milliseconds(), rr.hot, rr.check.acked, rr.check.lost(), rr.split)
	if rr.signal == "SIGSTOP" {
		s += fmt.Sprintf("  zombie: exited %v, said %q, write refused %v, request acknowledged %v",
			rr.zombie.exited, rr.zombie.said, rr.zombie.refused, rr.zombie.acked)
	}
	for _, l := range rr.check.losses {
		s += "\n    LOST: " + l
	}
	return s
}

// results sum the rounds.
type results struct {
	rounds, zombies, zombiesFenced, zombieWritesRefused, zombieAcked int
	losses, split, hot                                               int
	writes                                                           int
	takeovers                                                        []time.Duration
}

func (res *results) add(rr roundResult) {
	res.rounds++
	res.losses += rr.check.lost()
	res.split += rr.split
	res.takeovers = append(res.takeovers, rr.takeover)
	if rr.hot {
		res.hot++
	}
	if rr.signal == "SIGSTOP" {
		res.zombies++
		if rr.zombie.fenced() {
			res.zombiesFenced++
		}
		if rr.zombie.refused {
			res.zombieWritesRefused++
		}
		if rr.zombie.acked {
			res.zombieAcked++
		}
	}
}

func (res *results) ok() bool {
	return res.losses == 0 && res.split == 0 && res.zombiesFenced == res.zombies && res.zombieAcked == 0
}

func (res *results) print(w io.Writer) {
	t := slices.Clone(res.takeovers)
	slices.Sort(t)
	q := func(p float64) time.Duration {
		if len(t) == 0 {
			return 0
		}
		return t[min(len(t)-1, int(p*float64(len(t))))]
	}
	fmt.Fprintf(w, "rounds %d, writes %d, losses %d, split-brain writes %d, zombies fenced %d/%d (writes refused %d, acknowledged %d), takeover p50 %dms p99 %dms max %dms, %d from a hot standby\n",
		res.rounds, res.writes, res.losses, res.split, res.zombiesFenced, res.zombies, res.zombieWritesRefused, res.zombieAcked,
		q(0.50).Milliseconds(), q(0.99).Milliseconds(), q(1).Milliseconds(), res.hot)
	if res.ok() {
		fmt.Fprintln(w, "PASS")
	} else {
		fmt.Fprintln(w, "FAIL")
	}
}
