// Command loadgen drives a desk over the wire on this machine and reports settled trades
// per second and the latency of every API call, beside the same calls against a bare
// httprouter server measured in the same run (the transport floor).
//
// It starts the desk itself (it builds cmd/desk, or runs -desk-bin, on loopback with a
// fresh data directory and a configuration made for load) unless -url names one; any
// -url must be a loopback address. It registers -makers makers and -takers takers, each
// funding itself from the faucet and keeping its stream open. Makers quote every RFQ they
// are invited to and sign their allocations; each taker runs lifecycles one at a time:
// an RFQ to -invite makers, the first quote that goes live (quote.created) accepted, the
// taker's allocations signed, trade.settled awaited.
//
// Phases, each bounded by -duration and -trades:
//
//   - max: closed loop, every taker as fast as it goes: the settled-trades-per-second rate.
//   - half: the takers paced to half the max phase's rate: the per-call latencies at
//     that load.
//   - floor: the bare server, same client, same concurrency, same five calls per
//     lifecycle, closed loop and then paced like the half phase.
//   - fanout: -fanout-rounds RFQs each inviting up to 100 makers (the desk's bound):
//     POST /rfq to the arrival of rfq.created at each maker.
//
// It prints a summary and writes every number to -out as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/internal/cli"
	"github.com/deskco/rfqdesk/machine"
)

func main() { cli.MainInterruptible("loadgen", run) }

// options are the command line.
type options struct {
	url, deskBin, out, cpuProfile string
	deskPerf                      string
	deskArgs                      string
	makers, takers, invite        int
	duration                      time.Duration
	trades                        int64
	fanoutRounds                  int
	noFloor                       bool
	noSyscalls                    bool
	// halfRate, when positive, is the half phase's offered rate instead of half the max
	// phase's: two desks compared at the same load on a host whose speed moves.
	halfRate float64
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "", "base URL of a running desk on loopback (default: start one)")
	fs.StringVar(&o.deskBin, "desk-bin", "", "desk binary to start (default: go build ./cmd/desk)")
	fs.StringVar(&o.out, "out", "", "write the results as JSON to this file")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write this process's CPU profile of the max phase to this file")
	fs.StringVar(&o.deskPerf, "desk-perf", "", "record the started desk's CPU profile of the max phase with Linux perf into this file")
	fs.IntVar(&o.makers, "makers", 100, "makers (registered, funded, streaming, quoting)")
	fs.IntVar(&o.takers, "takers", 32, "takers, each running one lifecycle at a time")
	fs.IntVar(&o.invite, "invite", 3, "makers invited per load RFQ")
	fs.DurationVar(&o.duration, "duration", 15*time.Second, "bound of each phase")
	fs.Int64Var(&o.trades, "trades", 20000, "bound of settled trades (or floor sequences) per phase")
	fs.IntVar(&o.fanoutRounds, "fanout-rounds", 10, "RFQs inviting every maker (up to 100) for the fan-out measurement; 0 skips it")
	fs.BoolVar(&o.noFloor, "no-floor", false, "skip the transport floor")
	fs.BoolVar(&o.noSyscalls, "no-syscalls", false, "do not count the started desk's system calls in the max and half phases (perf stat, else strace -c -f)")
	fs.Float64Var(&o.halfRate, "half-rate", 0, "lifecycles/s the half phase offers (default: half the max phase's rate), to compare desks at one load")
	fs.StringVar(&o.deskArgs, "desk-args", "", "more flags for the desk it starts, space-separated (e.g. \"-journal postgres://…\")")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch {
	case o.makers < 1 || o.takers < 1:
		return o, fmt.Errorf("-makers and -takers must be at least 1")
	case o.invite < 1 || o.invite > o.makers || o.invite > machine.MaxInvited:
		return o, fmt.Errorf("-invite must be 1 to min(-makers, %d)", machine.MaxInvited)
	case o.duration <= 0 || o.duration > 10*time.Minute:
		return o, fmt.Errorf("-duration must be positive and at most 10m")
	case o.trades < 1:
		return o, fmt.Errorf("-trades must be at least 1")
	}
	if o.url != "" {
		if err := checkLoopback(o.url); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Results is the JSON the run writes.
type Results struct {
	Makers, Takers, Invite int
	Max                    PhaseResult   `json:"max"`
	Half                   PhaseResult   `json:"half"`
	Floor                  *FloorResult  `json:"floor,omitempty"`
	FloorHalf              *FloorResult  `json:"floor_half,omitempty"`
	Fanout                 *FanoutResult `json:"fanout,omitempty"`
	// OfFloor is the max phase's settled trades per second over the floor's lifecycle
	// call sequences per second.
	OfFloor float64 `json:"of_floor,omitempty"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	res, err := load(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	printResults(stdout, res)
	if o.out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.out, b, 0o644); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
	}
	return 0
}

func load(ctx context.Context, o options, stderr io.Writer) (*Results, error) {
	base := o.url
	var desk *deskProc
	if base == "" {
		d, err := startDesk(ctx, o.deskBin, strings.Fields(o.deskArgs), stderr)
		if err != nil {
			return nil, err
		}
		defer d.stop()
		base, desk = d.base, d
	}
	hc := httpClient(4 * (o.makers + o.takers))
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	makers, err := setup(sctx, base, "load maker", o.makers, 16, hc)
	defer closeAll(makers)
	if err != nil {
		return nil, fmt.Errorf("set up makers: %w", err)
	}
	takerParties, err := setup(sctx, base, "load taker", o.takers, 16, hc)
	defer closeAll(takerParties)
	if err != nil {
		return nil, fmt.Errorf("set up takers: %w", err)
	}
	fmt.Fprintf(stderr, "loadgen: %d makers and %d takers registered, funded and streaming in %s\n", o.makers, o.takers, time.Since(start).Round(time.Millisecond))
	hints := make([]string, len(makers))
	for i, m := range makers {
		hints[i] = m.c.Hint()
	}
	takers := make([]*taker, len(takerParties))
	for i, p := range takerParties {
		takers[i] = &taker{p: p, makers: hints, next: i * o.invite, invite: o.invite}
	}
	res := &Results{Makers: o.makers, Takers: o.takers, Invite: o.invite}
	var meter cpuMeter
	if desk != nil {
		meter.deskPID = desk.cmd.Process.Pid
	}

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	var stopPerf func()
	if o.deskPerf != "" && desk != nil {
		stopPerf = desk.perf(o.deskPerf, stderr)
	}
	var counter *syscallCounter
	if desk != nil && !o.noSyscalls {
		counter = countSyscalls(desk.cmd.Process.Pid, desk.dir, desk.metricsURL(), stderr)
	}
	res.Max = runPhase(ctx, "max", takers, makers, o.duration, o.trades, 0, meter)
	res.Max.Syscalls = counter.stop(res.Max.Settled, stderr)
	if stopPerf != nil {
		stopPerf()
	}
	if o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	fmt.Fprintf(stderr, "loadgen: max phase: %d settled in %.1fs (%.0f/s)\n", res.Max.Settled, res.Max.DurationS, res.Max.SettledPerS)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	half := res.Max.SettledPerS / 2
	if o.halfRate > 0 {
		half = o.halfRate
	}
	if half > 0 {
		var counter *syscallCounter
		if desk != nil && !o.noSyscalls {
			counter = countSyscalls(desk.cmd.Process.Pid, desk.dir, desk.metricsURL(), stderr)
		}
		res.Half = runPhase(ctx, "half", takers, makers, o.duration, o.trades, half, meter)
		res.Half.Syscalls = counter.stop(res.Half.Settled, stderr)
		fmt.Fprintf(stderr, "loadgen: half phase: %d settled at %.0f/s offered\n", res.Half.Settled, half)
	}
	if o.fanoutRounds > 0 {
		n := min(len(makers), machine.MaxInvited)
		f := runFanout(ctx, takerParties[0], makers[:n], o.fanoutRounds)
		res.Fanout = &f
	}
	if !o.noFloor {
		f, err := runFloor(ctx, o.takers, o.duration, o.trades, hc, 0)
		if err != nil {
			return nil, fmt.Errorf("transport floor: %w", err)
		}
		res.Floor = &f
		if f.SequencesPer > 0 {
			res.OfFloor = res.Max.SettledPerS / f.SequencesPer
		}
		if res.Half.TargetRate > 0 {
			h, err := runFloor(ctx, o.takers, o.duration, o.trades, hc, res.Half.TargetRate)
			if err != nil {
				return nil, fmt.Errorf("transport floor at half load: %w", err)
			}
			res.FloorHalf = &h
		}
	}
	return res, ctx.Err()
}

func closeAll(ps []*party) {
	for _, p := range ps {
		if p != nil && p.stream != nil {
			p.stream.Close()
		}
	}
}

// printResults writes a human summary.
func printResults(w io.Writer, r *Results) {
	fmt.Fprintf(w, "makers %d, takers %d, invite %d\n", r.Makers, r.Takers, r.Invite)
	for _, p := range []PhaseResult{r.Max, r.Half} {
		fmt.Fprintf(w, "\n%s phase (offered %.0f/s): %d settled in %.1fs = %.0f settled/s; skipped %d, not offered %d, errors %v\n",
			p.Name, p.TargetRate, p.Settled, p.DurationS, p.SettledPerS, p.Skipped, p.NotOffered, p.Errors)
		printCPU(w, p.CPU, "settled trade")
		printSyscalls(w, p.Syscalls)
		printCalls(w, p.Calls)
	}
	if r.Floor != nil {
		fmt.Fprintf(w, "\ntransport floor: %d call sequences in %.1fs = %.0f/s (desk max phase = %.2f of it)\n",
			r.Floor.Sequences, r.Floor.DurationS, r.Floor.SequencesPer, r.OfFloor)
		printCPU(w, r.Floor.CPU, "call sequence")
		printCalls(w, r.Floor.Calls)
	}
	if r.FloorHalf != nil {
		fmt.Fprintf(w, "\ntransport floor paced like the half phase (%.0f/s offered): %.0f/s\n", r.FloorHalf.TargetRate, r.FloorHalf.SequencesPer)
		printCalls(w, r.FloorHalf.Calls)
	}
	if r.Fanout != nil {
		s := r.Fanout.Summary
		fmt.Fprintf(w, "\nfan-out: rfq.created to %d makers × %d rounds: p50 %.2f ms, p99 %.2f ms, max %.2f ms, missing %d\n",
			r.Fanout.Invited, r.Fanout.Rounds, s.P50, s.P99, s.Max, r.Fanout.Missing)
	}
}

// printCPU writes a phase's CPU use, per unit of work.
func printCPU(w io.Writer, u *CPUUse, unit string) {
	if u == nil {
		return
	}
	if u.DeskS > 0 {
		fmt.Fprintf(w, "  CPU: desk %.2f s + loadgen %.2f s = %.2f ms per %s (desk %.2f ms)\n", u.DeskS, u.LoadgenS, u.PerUnitMS, unit, u.DeskPerUnitMS)
		return
	}
	fmt.Fprintf(w, "  CPU: %.2f s = %.2f ms per %s\n", u.LoadgenS, u.PerUnitMS, unit)
}

func printCalls(w io.Writer, calls map[string]Summary) {
	for _, name := range []string{callCreateRFQ, callSubmitQuote, callExecMaker, callAccept, callExecTaker, lagFirstQuote, lagAcceptSettled, lagLifecycle} {
		if s, ok := calls[name]; ok {
			fmt.Fprintf(w, "  %-28s n=%-7d p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n", name, s.N, s.P50, s.P99, s.Max)
		}
	}
}
