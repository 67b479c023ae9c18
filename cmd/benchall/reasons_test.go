package main

import (
	"strings"
	"testing"
)

// TestReasonsOnUnmetTargets: a row whose target is not met carries the measured reason,
// computed from the run's own figures; a met row carries none.
func TestReasonsOnUnmetTargets(t *testing.T) {
	s := &suite{res: &Results{Machine: Machine{CPUs: 2}, Benchmarks: map[string][]Bench{"inproc": {
		{Name: "BenchmarkLifecycle/signatures-only", Metrics: map[string]float64{"cpu-ns/op": 200_000, "ns/op": 150_000}},
		{Name: "BenchmarkLifecycle/desk", Metrics: map[string]float64{"cpu-ns/op": 800_000, "lifecycles/s": 2000, "of-floor": 0.35}},
	}}}}
	l := &LoadgenResults{Invite: 1,
		Max:   LoadPhase{SettledPerS: 200, CPU: &CPUUse{PerUnitMS: 6, DeskPerUnitMS: 4.5}, Syscalls: &SyscallUse{Trades: 10, PerTrade: 80, ContextSwitchesPerTrade: 40}},
		Half:  LoadPhase{SettledPerS: 100, TargetRate: 100, CPU: &CPUUse{PerUnitMS: 10, DeskPerUnitMS: 8}, Syscalls: &SyscallUse{Trades: 5, PerTrade: 200, ContextSwitchesPerTrade: 170}, Calls: map[string]Summary{"POST /rfq": {P50: 1, P99: 12, Max: 20}, "POST /maker/quotes": {P50: 1, P99: 4, Max: 9}}},
		Floor: &FloorRun{CPU: &CPUUse{PerUnitMS: 1}}}
	s.res.Loadgen = l
	byMetric := map[string]Row{}
	for _, r := range s.rows() {
		byMetric[r.Metric] = r
	}
	for metric, want := range map[string]string{
		"lifecycle rate / signature floor (the desk's GOGC 200)": "why: a lifecycle costs 800 µs of CPU, its 4 signatures and 4 verifications 200 µs; the rest (loop, machine, ledger, allocation) 600 µs is 3.0× the signatures, where the target allows 0.43×",
		// Ceiling for 1 invited: 2 cores ÷ (1 ms of calls + 0.2 ms of signatures) = 1,667/s,
		// so 1.2 ms a trade; 0.6 of it allows 2 ms.
		"settled trades/s ÷ ceiling for 1 invited (max phase)": "why: a settled trade cost 6.00 ms of CPU (desk 4.50, load generator 1.50) where its calls and signatures alone cost 1.20 ms; 0.6 of the ceiling allows 2.00 ms",
		"POST /rfq p99 at half load (100 RFQ/s offered)":       "why: at this pace the two processes kept 1.00 of the 2 cores busy (10.00 ms of CPU a trade, desk 8.00, against 4.50 at max); 200 system calls and 170 context switches a trade against 80 and 40 at max",
	} {
		r, ok := byMetric[metric]
		if !ok {
			t.Fatalf("no row %q", metric)
		}
		if !strings.HasSuffix(r.Note, want) {
			t.Errorf("%s: note %q, want it to end with %q", metric, r.Note, want)
		}
	}
	if r := byMetric["POST /maker/quotes p99 at half load (100 RFQ/s offered)"]; strings.Contains(r.Note, "why:") {
		t.Errorf("a met target carries a reason: %q", r.Note)
	}
}

// TestReasonsWhenNotTheCPU: a row missed although the CPU would meet the target says so:
// the in-process lifecycles waited, the closed loop was bound by latency.
func TestReasonsWhenNotTheCPU(t *testing.T) {
	s := &suite{res: &Results{Machine: Machine{CPUs: 2}, Benchmarks: map[string][]Bench{"inproc": {
		{Name: "BenchmarkLifecycle/signatures-only", Metrics: map[string]float64{"cpu-ns/op": 200_000}},
		{Name: "BenchmarkLifecycle/desk", Metrics: map[string]float64{"cpu-ns/op": 250_000}},
	}}}}
	if got, want := s.inProcessReason(), "why: not the CPU (a lifecycle costs 250 µs of CPU, its signatures 200 µs, within the target): the lifecycles waited, for the host or for each other"; got != want {
		t.Errorf("in process: %q, want %q", got, want)
	}
	// Ceiling 1,000/s on 2 cores: 2 ms a trade, the target allows 3.33 ms; 1.5 ms at
	// 300/s keeps 0.45 of a core busy, 22%.
	l := &LoadgenResults{Max: LoadPhase{SettledPerS: 300, CPU: &CPUUse{PerUnitMS: 1.5, DeskPerUnitMS: 1}}}
	if got, want := ceilingReason(l, 1000, 2), "why: not the CPU a trade costs (1.50 ms, within the 3.33 ms the target allows): the cores were 22% busy, so the closed loop waited on latency"; got != want {
		t.Errorf("ceiling: %q, want %q", got, want)
	}
}
