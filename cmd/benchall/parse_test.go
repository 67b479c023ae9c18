package main

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A result line split over several output events, a log line between benchmarks, custom
// metrics and the -GOMAXPROCS suffix.
const goTestJSON = `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"BenchmarkReplay/read\n"}
{"Action":"output","Package":"p","Output":"BenchmarkReplay/read-2               \t"}
{"Action":"output","Package":"p","Output":"      51\t  21934201 ns/op\t   4219028 inputs/s\t         0.2370 s/1M\t 1051560 B/op\t      13 allocs/op\n"}
{"Action":"output","Package":"p","Output":"    bench_test.go:192: journal: 6000 lifecycles\n"}
{"Action":"output","Package":"p","Output":"BenchmarkLifecycle/desk-2 \t 1524\t 2132260 ns/op\t 469.0 lifecycles/s\t 0.6411 of-floor\n"}
not json: a build error
{"Action":"pass","Package":"p"}
`

func TestParseTestJSON(t *testing.T) {
	got, text, err := parseTestJSON(strings.NewReader(goTestJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := []Bench{
		{Name: "BenchmarkReplay/read", N: 51, Metrics: map[string]float64{"ns/op": 21934201, "inputs/s": 4219028, "s/1M": 0.2370, "B/op": 1051560, "allocs/op": 13}},
		{Name: "BenchmarkLifecycle/desk", N: 1524, Metrics: map[string]float64{"ns/op": 2132260, "lifecycles/s": 469, "of-floor": 0.6411}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("benchmarks (-want +got):\n%s", d)
	}
	if !strings.Contains(text, "not json: a build error") {
		t.Error("plain-text lines (build errors) must be kept in the text")
	}
}

func TestTargetRows(t *testing.T) {
	for _, tc := range []struct {
		row       Row
		met       bool
		ratio     float64
		targetStr string
	}{
		{atLeast("g", "m", 1500, "/s", 1000), true, 1.5, "≥ 1000"},
		{atLeast("g", "m", 500, "/s", 1000), false, 0.5, "≥ 1000"},
		{atMost("g", "m", 5, "ms", 10), true, 2, "< 10.0"},
		{atMost("g", "m", 20, "ms", 10), false, 0.5, "< 10.0"},
	} {
		if *tc.row.Met != tc.met || *tc.row.Ratio != tc.ratio || tc.row.Target != tc.targetStr {
			t.Errorf("%+v: met %v ratio %v target %q, want %v %v %q", tc.row, *tc.row.Met, *tc.row.Ratio, tc.row.Target, tc.met, tc.ratio, tc.targetStr)
		}
	}
}

func TestSimLine(t *testing.T) {
	m := simLine.FindStringSubmatch("sim seed=1 …\nseed 1: 3h30m0s simulated in 1m2.5s wall (203× real time; busy 3h0m0s in 1m1s: 177×), ok\n")
	if m == nil || m[1] != "1m2.5s" || m[2] != "203" || m[3] != "3h0m0s" || m[4] != "1m1s" || m[5] != "177" {
		t.Fatalf("simLine: %q", m)
	}
}

// TestFloorDriftRows: with the floor measured before and after the desks, the table shows
// the second floor, the host's drift between them, and the ratio to their mean.
func TestFloorDriftRows(t *testing.T) {
	s := &suite{opts: options{skip: "wire,stream,journal,node,sim,memory"}, res: &Results{Benchmarks: map[string][]Bench{"inproc": {
		{Name: "BenchmarkLifecycle/signatures-only", Metrics: map[string]float64{"ns/op": 200_000}},
		{Name: "BenchmarkLifecycle/desk", Metrics: map[string]float64{"ns/op": 500_000, "lifecycles/s": 2000, "of-floor": 0.4}},
		{Name: "BenchmarkLifecycle/signatures-only-after", Metrics: map[string]float64{"ns/op": 400_000}},
	}}}}
	var again, mean *Row
	rows := s.rows()
	for i := range rows {
		switch {
		case strings.HasPrefix(rows[i].Metric, "signature floor again"):
			again = &rows[i]
		case strings.HasPrefix(rows[i].Metric, "lifecycle rate / mean of the two floors"):
			mean = &rows[i]
		}
	}
	if again == nil || mean == nil {
		t.Fatalf("rows %+v lack the second floor or the mean ratio", rows)
	}
	// 5,000 then 2,500 floor rounds/s: the host halved; the mean floor is 300 µs.
	if again.Value != 2500 || !strings.Contains(again.Note, "-50%") || mean.Value != 0.6 {
		t.Errorf("second floor %+v, mean ratio %+v", *again, *mean)
	}
}

// TestWireCeilingRows: the ceilings divide the cores by the CPU time of the transport
// floor's five calls plus the signatures (or plus the in-process lifecycle).
func TestWireCeilingRows(t *testing.T) {
	s := &suite{res: &Results{Machine: Machine{CPUs: 2}, Benchmarks: map[string][]Bench{"inproc": {
		{Name: "BenchmarkLifecycle/signatures-only", Metrics: map[string]float64{"cpu-ns/op": 500_000}},
		{Name: "BenchmarkLifecycle/desk", Metrics: map[string]float64{"cpu-ns/op": 1_000_000}},
	}}}}
	l := &LoadgenResults{
		Max:   LoadPhase{CPU: &CPUUse{PerUnitMS: 5, DeskPerUnitMS: 3}},
		Floor: &FloorRun{CPU: &CPUUse{PerUnitMS: 1}},
	}
	got := map[string]Row{}
	for _, r := range s.wireCeiling("g", l) {
		got[r.Metric[:strings.IndexAny(r.Metric, ":(")]] = r
	}
	for _, tc := range []struct {
		prefix string
		value  float64
		note   string
	}{
		{"CPU per settled trade at max ", 5, "desk 3.00 ms, load generator 2.00 ms"},
		{"transport floor CPU per five-call sequence ", 1, ""},
		{"ceiling", 2000 / 1.5, "signatures 0.50 ms CPU; 1,000/s leaves 0.50 ms of CPU per trade for all the rest"},
	} {
		r, ok := got[tc.prefix]
		if !ok || r.Value != tc.value || r.Note != tc.note {
			t.Errorf("%q: %+v (present %v), want value %v note %q", tc.prefix, r, ok, tc.value, tc.note)
		}
	}
	var withDesk *Row
	for _, r := range s.wireCeiling("g", l) {
		if strings.HasPrefix(r.Metric, "ceiling with the in-process desk") {
			withDesk = &r
		}
	}
	if withDesk == nil || withDesk.Value != 1000 {
		t.Errorf("ceiling with the in-process desk: %+v, want 1000", withDesk)
	}
	// Three invited: 9 calls and 8 signature pairs, 9/5 × 1 + 8/4 × 0.5 = 2.8 ms.
	l.Invite = 3
	var invited *Row
	for _, r := range s.wireCeiling("g", l) {
		if strings.HasPrefix(r.Metric, "ceiling for 3 invited: cores ÷ (9 calls + 8 sign + 8 verify)") {
			invited = &r
		}
	}
	if invited == nil || invited.Value != 2000/2.8 {
		t.Errorf("ceiling for 3 invited: %+v, want %v", invited, 2000/2.8)
	}
	if rows := s.wireCeiling("g", &LoadgenResults{}); len(rows) != 0 {
		t.Errorf("without CPU numbers: %+v", rows)
	}
}

// TestSnapshotStallRow: the journal group shows the longest append beside a snapshot
// write, with its p99 and the quiet phase's longest in the note.
func TestSnapshotStallRow(t *testing.T) {
	s := &suite{opts: options{skip: "inproc,wire,stream,node,sim,memory"}, res: &Results{Benchmarks: map[string][]Bench{"journal": {
		{Name: "BenchmarkAppendDuringSnapshot/256MiB", Metrics: map[string]float64{"max-ms": 21.5, "p99-ms": 3.25, "quiet-max-ms": 0.75}},
	}}}}
	for _, r := range s.rows() {
		if strings.HasPrefix(r.Metric, "longest append (fsync'd) beside a 256 MiB snapshot write") {
			if r.Value != 21.5 || r.Note != "p99 3.25 ms; with no snapshot: longest 0.75 ms" {
				t.Errorf("row %+v", r)
			}
			return
		}
	}
	t.Fatal("no snapshot-stall row")
}

// TestMetricMedian: a benchmark repeated with -count reads as the median of its runs.
func TestMetricMedian(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		want   float64
	}{
		{[]float64{0.61}, 0.61},
		{[]float64{0.62, 0.48, 0.60}, 0.60},
		{[]float64{0.5, 0.7, 0.6, 0.4}, 0.55},
	} {
		var bs []Bench
		for _, v := range tc.values {
			bs = append(bs, Bench{Name: "BenchmarkLifecycle/desk", Metrics: map[string]float64{"of-floor": v}},
				Bench{Name: "BenchmarkLifecycle/other", Metrics: map[string]float64{"of-floor": 9}})
		}
		s := &suite{res: &Results{Benchmarks: map[string][]Bench{"inproc": bs}}}
		if got, ok := s.metric("inproc", "BenchmarkLifecycle/desk", "of-floor"); !ok || got != tc.want {
			t.Errorf("%v: metric = %v, %v; want %v", tc.values, got, ok, tc.want)
		}
	}
	s := &suite{res: &Results{Benchmarks: map[string][]Bench{}}}
	if _, ok := s.metric("inproc", "BenchmarkLifecycle/desk", "of-floor"); ok {
		t.Error("a benchmark that did not run was found")
	}
}

// simTop is a trimmed `go tool pprof -top -cum -unit=s` listing of a simulation run.
const simTop = `File: sim
Type: cpu
Duration: 190.96s, Total samples = 190.76s (99.89%)
Showing nodes accounting for 151.32s, 79.32% of 190.76s total
      flat  flat%   sum%        cum   cum%
     0.43s  0.23%  0.23%    184.05s 96.48%  github.com/deskco/rfqdesk/sim.(*Sim).Run
     0.15s 0.079%  0.39%     57.88s 30.34%  github.com/deskco/rfqdesk/ledgeradapter.(*Adapter).Do
         0     0%  0.67%     31.80s 16.67%  crypto/ed25519.Verify (inline)
         0     0% 16.68%     14.51s  7.61%  github.com/deskco/rfqdesk/machine.Apply (inline)
         0     0% 24.22%     13.45s  7.05%  crypto/ed25519.Sign (inline)
         0     0% 24.23%     13.44s  7.05%  crypto/ed25519.sign
`

// TestParseSimCost reads the total and the four functions' cumulative seconds, and
// refuses a listing that lacks one of them.
func TestParseSimCost(t *testing.T) {
	c, err := parseSimCost(simTop)
	if err != nil {
		t.Fatal(err)
	}
	want := SimCost{TotalS: 190.76, SignS: 13.45, VerifyS: 31.80, LedgerS: 57.88, DeskS: 14.51}
	if *c != want {
		t.Fatalf("got %+v, want %+v", *c, want)
	}
	for _, tc := range []struct{ name, listing string }{
		{"no total", strings.Replace(simTop, "Total samples = 190.76s", "", 1)},
		{"no Apply", strings.Replace(simTop, "machine.Apply", "machine.apply", 1)},
		{"bad number", strings.Replace(simTop, "13.45s", "13.4.5s", 1)},
		{"zero total", strings.Replace(simTop, "Total samples = 190.76s", "Total samples = 0s", 1)},
	} {
		if _, err := parseSimCost(tc.listing); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestSimCeilingRows: the ceilings divide the busy rate by the shares of the run.
func TestSimCeilingRows(t *testing.T) {
	c := &SimCost{TotalS: 200, SignS: 10, VerifyS: 30, LedgerS: 70, DeskS: 30}
	rows := simCeiling(500, c)
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Metric] = r
	}
	for _, tc := range []struct {
		metric string
		value  float64
		note   string
	}{
		{"share of the run's CPU in Ed25519 (actors sign, the ledger verifies)", 20, "sign 10.0 s, verify 30.0 s of 200.0 s profiled"},
		{"ceiling: the busy rate if nothing but the signatures cost", 2500, ""},
		{"share in the desk's core, the ledger (its verify included) and the signing", 55, "machine.Apply 30.0 s, ledger calls 70.0 s, sign 10.0 s"},
		{"ceiling: the busy rate if nothing but those cost", 500 / 0.55, "below 1,000×: the code under test and the signatures alone take longer than the target allows"},
		{"busy rate ÷ that ceiling", 0.55, "the simulation's target is met by this row or by the 1,000× above; why: 45% of the run is the simulator's own work (actors, model, invariants, reads, journals, snapshots, the scheduler)"},
	} {
		r, ok := got[tc.metric]
		if !ok || math.Abs(r.Value-tc.value) > 1e-9*tc.value || r.Note != tc.note {
			t.Errorf("%q: %+v (present %v), want %v %q", tc.metric, r, ok, tc.value, tc.note)
		}
	}
	c.LedgerS = 20 // core 60 s of 200: 500 / 0.3 = 1666.7×, 1,000× leaves 40%
	for _, r := range simCeiling(500, c) {
		if r.Metric == "ceiling: the busy rate if nothing but those cost" && r.Note != "1,000× leaves 40% of the run for the actors, invariants, reads, journals, snapshots and the scheduler" {
			t.Errorf("room note: %q", r.Note)
		}
	}
	if simCeiling(500, nil) != nil {
		t.Error("rows without a profile")
	}
}
