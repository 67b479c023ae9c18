package main

import (
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
