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
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/deskco/rfqdesk/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

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
	ledgerCheck := fs.Int("ledger-check-every", def.LedgerCheckEvery, "ledger-changing steps between full ledger invariant walks (1: every one; 0: adaptive)")
	requireCov := fs.Bool("require-coverage", false, "fail a run that never reached a coverage goal (long runs)")
	verbose := fs.Bool("v", false, "print each run's summary and coverage, and progress lines")
	traceDir := fs.String("trace-dir", "", "where a failing run's trace directory is made (default: the temp dir)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the runs to `file`")
	if err := fs.Parse(args); err != nil {
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
	status := 0
	for i := 0; i < *seeds; i++ {
		k := sim.Knobs{Seed: *seed + uint64(i), Duration: *duration, Makers: *makers, Takers: *takers, RFQRate: *rate,
			Faults: *faults, CrashRate: *crash, CheckpointEvery: *checkpoint, SnapshotEvery: *snapshot, LedgerCheckEvery: *ledgerCheck, RequireCoverage: *requireCov}
		s, err := sim.New(k)
		if err != nil {
			fmt.Fprintf(stderr, "sim: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, k.Header(s.Mix()))
		start := time.Now()
		var lastSteps uint64
		lastAt := start
		if *verbose || *duration >= 30*time.Minute {
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
		r := s.Run()
		wall := time.Since(start)
		if *verbose || r.Failure != nil {
			r.WriteSummary(stdout)
		}
		fmt.Fprintf(stdout, "seed %d: %s simulated in %s wall (%.0f× real time)", k.Seed, r.SimTime.Round(time.Second),
			wall.Round(time.Millisecond), r.SimTime.Seconds()/wall.Seconds())
		if r.Failure == nil {
			fmt.Fprintln(stdout, ", ok")
			continue
		}
		fmt.Fprintln(stdout)
		fmt.Fprintf(stdout, "FAIL seed %d: %v\nreproduce: %s\n", k.Seed, r.Failure, k.Command())
		if path, err := r.WriteTrace(*traceDir); err != nil {
			fmt.Fprintf(stderr, "sim: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "trace: %s\n", path)
		}
		if status == 0 {
			status = int(r.Failure.Class)
		}
	}
	return status
}
