// Command sim runs seeded deterministic simulations of the desk: the pure desk core and the
// embedded ledger driven single-threaded on a virtual clock, with faults, crashes and
// simulated clients, checking the invariants after every step.
//
//	go run ./cmd/sim -seed 7 -duration 1h -faults harsh -crash-rate 0.001
//
// It writes nothing unless a run fails; then it prints the seed, the command that
// reproduces the run and the path of a trace (sim/TRACE.md), and exits with the failure
// class's status: 2 safety, 3 liveness, 4 crash recovery, 5 coverage (1 for bad flags).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/deskco/rfqdesk/internal/buildinfo"
	"github.com/deskco/rfqdesk/sim"
)

func main() {
	if buildinfo.Requested(os.Args[1:]) {
		fmt.Println(buildinfo.Read().Line("sim"))
		return
	}
	if strings.TrimSpace(os.Getenv("GOGC")) == "" { // an operator's GOGC wins
		debug.SetGCPercent(sim.GCPercent)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// maxSeeds and maxJobs bound a run's seeds and the runs at once (a limit on everything).
const (
	maxSeeds = 100000
	maxJobs  = 256
)

func run(args []string, stdout, stderr io.Writer) int {
	def := sim.DefaultKnobs()
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", def.Seed, "seed of the (first) run")
	seeds := fs.Int("seeds", 1, "number of runs, with seeds seed, seed+1, …")
	duration := fs.Duration("duration", def.Duration, "simulated time of the busy phase (a liveness phase follows)")
	makers := fs.Int("makers", def.Makers, "simulated makers")
	takers := fs.Int("takers", def.Takers, "simulated registered takers (the house taker comes on top)")
	rate := fs.Float64("rfq-rate", def.RFQRate, "RFQs per simulated second over all takers")
	faults := fs.String("faults", def.Faults, "fault profile: none, mild or harsh")
	crash := fs.Float64("crash-rate", def.CrashRate, "probability of a desk crash after each step")
	checkpoint := fs.Int("checkpoint-every", def.CheckpointEvery, "desk inputs between checkpoints")
	snapshot := fs.Int("snapshot-every", def.SnapshotEvery, "desk inputs between snapshots")
	stateBytes := fs.Int("state-bytes-per-input", def.StateBytesPerInput, "stretch those intervals to at least the state's encoded size over this many bytes (0: exact intervals)")
	ledgerCheck := fs.Int("ledger-check-every", def.LedgerCheckEvery, "ledger-changing steps between full ledger invariant walks (1: every one; 0: adaptive)")
	adversaries := fs.Int("adversaries", def.Adversaries, "most honest makers and takers a seed turns hostile (it draws 1 to this many; 0: none)")
	requireCov := fs.Bool("require-coverage", false, "fail a run that never reached a coverage goal (long runs)")
	useModel := fs.Bool("model", true, "judge every reply, frame and read with the reference model of the contract (off only to measure its cost)")
	jobs := fs.Int("jobs", 1, "seeds run at once (each run stays single-threaded and deterministic)")
	verbose := fs.Bool("v", false, "print each run's summary and coverage, and progress lines")
	traceDir := fs.String("trace-dir", "", "where a failing run's trace directory is made, created when missing (default: the temp dir)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the runs to `file`")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "sim: unexpected arguments %q\n", fs.Args())
		return 1
	case *seeds < 1 || *seeds > maxSeeds:
		fmt.Fprintf(stderr, "sim: -seeds must be between 1 and %d, not %d\n", maxSeeds, *seeds)
		return 1
	case *jobs < 1 || *jobs > maxJobs:
		fmt.Fprintf(stderr, "sim: -jobs must be between 1 and %d, not %d\n", maxJobs, *jobs)
		return 1
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "sim: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "sim: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	// With several seeds, coverage is required of the whole run (every seed together), as
	// DESIGN.md asks of a long run: one seed need not meet every rare race.
	perSeedCoverage := *requireCov && *seeds == 1
	knobs := make([]sim.Knobs, *seeds)
	for i := range knobs {
		knobs[i] = sim.Knobs{Seed: *seed + uint64(i), Duration: *duration, Makers: *makers, Takers: *takers, RFQRate: *rate,
			Faults: *faults, CrashRate: *crash, CheckpointEvery: *checkpoint, SnapshotEvery: *snapshot, StateBytesPerInput: *stateBytes,
			LedgerCheckEvery: *ledgerCheck, Adversaries: *adversaries, RequireCoverage: perSeedCoverage, NoModel: !*useModel}
	}
	type outcome struct {
		r      *sim.Result
		status int
		out    bytes.Buffer
	}
	outcomes := make([]outcome, len(knobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(*jobs, len(knobs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o := &outcomes[i]
				w := io.Writer(&o.out)
				if *jobs <= 1 {
					w = stdout // one at a time: print as it goes
				}
				o.r, o.status = runSeed(knobs[i], *verbose, *traceDir, w, stderr)
			}
		}()
	}
	started := time.Now()
	for i := range knobs {
		next <- i
	}
	close(next)
	wg.Wait()
	status := 0
	results := make([]*sim.Result, 0, len(outcomes))
	for i := range outcomes {
		if *jobs > 1 {
			_, _ = io.Copy(stdout, &outcomes[i].out)
		}
		if outcomes[i].r == nil {
			return 1
		}
		results = append(results, outcomes[i].r)
		if status == 0 {
			status = outcomes[i].status
		}
	}
	if *requireCov && *seeds > 1 {
		if missing := sim.MissingOver(results); len(missing) > 0 {
			fmt.Fprintf(stdout, "FAIL coverage over %d seeds: never reached: %v\n", *seeds, missing)
			if status == 0 {
				status = int(sim.Coverage)
			}
		} else {
			fmt.Fprintf(stdout, "coverage over %d seeds: every goal reached\n", *seeds)
		}
	}
	if *seeds > 1 {
		fmt.Fprintf(stdout, "%d seeds in %s wall\n", *seeds, time.Since(started).Round(time.Second))
	}
	return status
}

// runSeed runs one seed, printing its header, result and (on failure) the command that
// reproduces it and its trace; it returns the result and the exit status of the run.
func runSeed(k sim.Knobs, verbose bool, traceDir string, stdout, stderr io.Writer) (*sim.Result, int) {
	s, err := sim.New(k)
	if err != nil {
		fmt.Fprintf(stderr, "sim: %v\n", err)
		return nil, 1
	}
	fmt.Fprintln(stdout, k.Header(s.Mix()))
	start := time.Now()
	var lastSteps uint64
	lastAt := start
	if verbose || k.Duration >= 30*time.Minute {
		s.OnProgress(func(p sim.Progress) {
			now := time.Now()
			if now.Sub(lastAt) < 2*time.Second {
				return
			}
			rate := float64(p.Steps-lastSteps) / now.Sub(lastAt).Seconds()
			fmt.Fprintf(stdout, "  simulated %s, %.0f events/s, %d checks passed, %d crashes\n",
				p.SimTime.Round(time.Second), rate, p.Checks, p.Crashes)
			lastSteps, lastAt = p.Steps, now
		})
	}
	var busyWall time.Duration
	s.OnBusyEnd(func() { busyWall = time.Since(start) })
	r := s.Run()
	wall := time.Since(start)
	if verbose || r.Failure != nil {
		r.WriteSummary(stdout)
	}
	fmt.Fprintf(stdout, "seed %d: %s simulated in %s wall (%.0f× real time", k.Seed, r.SimTime.Round(time.Second),
		wall.Round(time.Millisecond), r.SimTime.Seconds()/wall.Seconds())
	if busyWall > 0 {
		// The liveness phase is mostly quiet simulated time; the busy phase is the load.
		fmt.Fprintf(stdout, "; busy %s in %s: %.0f×", k.Duration, busyWall.Round(time.Millisecond), k.Duration.Seconds()/busyWall.Seconds())
	}
	fmt.Fprint(stdout, ")")
	// What a multi-seed run keeps of each seed: the figures, not the simulation itself
	// (a Result holds its whole world for WriteTrace; a hundred of them do not fit).
	kept := &sim.Result{Knobs: r.Knobs, Mix: r.Mix, Failure: r.Failure, Stats: r.Stats, Coverage: r.Coverage,
		Steps: r.Steps, SimTime: r.SimTime, DeskDigest: r.DeskDigest, LedgerDigest: r.LedgerDigest}
	if r.Failure == nil {
		fmt.Fprintln(stdout, ", ok")
		return kept, 0
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "FAIL seed %d: %v\nreproduce: %s\n", k.Seed, r.Failure, k.Command())
	if path, err := r.WriteTrace(traceDir); err != nil {
		fmt.Fprintf(stderr, "sim: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "trace: %s\nreplay: go run ./cmd/replay -trace %s\n", path, path)
	}
	return kept, int(r.Failure.Class)
}
