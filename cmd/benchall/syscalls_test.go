package main

import (
	"strings"
	"testing"
)

// TestOfCeilingRow: the max phase's rate over the ceiling of the run's invite count, with
// issue 23's target of 0.6 (1 invited: the five-call ceiling).
func TestOfCeilingRow(t *testing.T) {
	s := &suite{res: &Results{Machine: Machine{CPUs: 2}, Benchmarks: map[string][]Bench{"inproc": {
		{Name: "BenchmarkLifecycle/signatures-only", Metrics: map[string]float64{"cpu-ns/op": 500_000}},
	}}}}
	for _, tc := range []struct {
		invite  int
		rate    float64
		ceiling float64
	}{
		{1, 1000, 2000 / 1.5}, // 5 calls × 1 ms/5 + 4 signature pairs 0.5 ms
		{3, 500, 2000 / 2.8},  // 9/5 × 1 + 8/4 × 0.5
	} {
		l := &LoadgenResults{Invite: tc.invite, Max: LoadPhase{SettledPerS: tc.rate}, Floor: &FloorRun{CPU: &CPUUse{PerUnitMS: 1}}}
		var got *Row
		for _, r := range s.wireCeiling("g", l) {
			if strings.HasPrefix(r.Metric, "settled trades/s ÷ ceiling for") {
				got = &r
			}
		}
		want := tc.rate / tc.ceiling
		if got == nil || got.Value != want || got.Target != "≥ 0.600" || *got.Ratio != want/0.6 || *got.Met != (want >= 0.6) {
			t.Errorf("invite %d: %+v, want value %v against ≥ 0.6", tc.invite, got, want)
		}
	}
}

// TestSyscallRows: the total per settled trade, one row per largest call with what it is
// for (at most syscallTop), the stream's frames and writes beside write, and the journals'
// fsyncs per trade with their records per group commit.
func TestSyscallRows(t *testing.T) {
	if rows := syscallRows("g", nil, nil); rows != nil {
		t.Errorf("no counts: %+v", rows)
	}
	u := &SyscallUse{Tool: "perf stat", Total: 20000, Trades: 100, PerTrade: 200, ContextSwitchesPerTrade: 90,
		FramesPerTrade: 30, StreamWritesPerTrade: 12,
		Journals: map[string]JournalSyncs{"desk": {Fsyncs: 500, Records: 2000, PerTrade: 5}, "ledger": {Fsyncs: 400, Records: 1000, PerTrade: 4}}}
	for _, n := range []string{"write", "futex", "read", "fsync", "nanosleep", "epoll_pwait", "sched_yield", "other", "mmap", "close"} {
		u.Calls = append(u.Calls, SyscallCount{Name: n, PerTrade: 1, For: "for " + n})
	}
	half := &SyscallUse{Trades: 50, PerTrade: 260, ContextSwitchesPerTrade: 120,
		Journals: map[string]JournalSyncs{"desk": {PerTrade: 6}, "ledger": {PerTrade: 5.5}}}
	rows := syscallRows("g", u, half)
	if len(rows) != 1+syscallTop+3 {
		t.Fatalf("%d rows, want %d: %+v", len(rows), 1+syscallTop+3, rows)
	}
	if r := rows[len(rows)-1]; r.Value != 260 || r.Note != "context switches 120.0 a trade; journal fsyncs 11.50 a trade" {
		t.Errorf("half load row %+v", r)
	}
	rows = rows[:len(rows)-1]
	if r := rows[0]; r.Value != 200 || !strings.Contains(r.Note, "perf stat") || !strings.Contains(r.Note, "context switches 90.0") {
		t.Errorf("total row %+v", r)
	}
	if r := rows[1]; !strings.HasPrefix(r.Note, "for write") || !strings.Contains(r.Note, "30.0 frames in 12.0 writes") {
		t.Errorf("write row %+v", r)
	}
	if r := rows[4]; !strings.Contains(r.Note, "desk journal 5.00 a trade, ledger journal 4.00 a trade") {
		t.Errorf("fsync row %+v", r)
	}
	if r := rows[len(rows)-2]; r.Value != 5 || r.Note != "4.0 records per group commit" {
		t.Errorf("desk journal row %+v", r)
	}
	if r := rows[len(rows)-1]; r.Value != 4 || r.Note != "2.5 records per group commit" {
		t.Errorf("ledger journal row %+v", r)
	}
}
