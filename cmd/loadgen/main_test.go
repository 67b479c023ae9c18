package main

import (
	"os"
	"testing"
	"time"
)

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true},
		{"http://127.0.0.2:8080", true},
		{"http://[::1]:8080", true},
		{"http://localhost:8080", true},
		{"http://10.0.0.1:8080", false},
		{"http://example.com", false},
		{"https://127.0.0.1:8080", false},
		{"http://0.0.0.0:8080", false},
	} {
		if err := checkLoopback(tc.url); (err == nil) != tc.ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
}

func TestParseFlagsRefusesRemoteURL(t *testing.T) {
	if _, err := parseFlags([]string{"-url", "http://192.168.1.10:8080"}, discard{}); err == nil {
		t.Fatal("a non-loopback -url was accepted")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestSummarize(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	got := summarize(s)
	if got.N != 100 || got.P50 != 50 || got.P99 != 99 || got.Max != 100 || got.Mean != 50.5 {
		t.Fatalf("summarize = %+v", got)
	}
	if (summarize(nil) != Summary{}) {
		t.Fatal("empty samples must give a zero summary")
	}
}

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat string
		want time.Duration
		ok   bool
	}{
		{"plain", "4242 (desk) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 1000 1 1", 3250 * time.Millisecond, true},
		{"name with spaces and parens", "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1", 30 * time.Millisecond, true},
		{"truncated", "7 (desk) S 1 7 7 0 -1 0 0 0 0 0 1", 0, false},
		{"no name", "7 desk S 1", 0, false},
		{"not a number", "7 (desk) S 1 7 7 0 -1 0 0 0 0 0 x 2 0", 0, false},
	} {
		got, ok := parseStatCPU([]byte(tc.stat))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: parseStatCPU = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCPUUse(t *testing.T) {
	from := cpuSample{self: time.Second, desk: 2 * time.Second, deskOK: true}
	to := cpuSample{self: 3 * time.Second, desk: 8 * time.Second, deskOK: true}
	u := cpuUse(from, to, 1000)
	if u.LoadgenS != 2 || u.DeskS != 6 || u.PerUnitMS != 8 || u.DeskPerUnitMS != 6 {
		t.Fatalf("cpuUse = %+v", *u)
	}
	if u := cpuUse(cpuSample{self: time.Second}, cpuSample{self: 2 * time.Second}, 0); u.DeskS != 0 || u.PerUnitMS != 0 {
		t.Fatalf("without a desk or units: %+v", *u)
	}
}

func TestCPUMeterReadsThisProcess(t *testing.T) {
	m := cpuMeter{deskPID: os.Getpid()}
	a := m.sample()
	for x, i := 0, 0; i < 50_000_000; i++ { // burn some CPU so both readings move
		x += i
		_ = x
	}
	b := m.sample()
	if !a.deskOK || !b.deskOK {
		t.Fatal("/proc/self's stat was not read")
	}
	if b.self <= a.self {
		t.Fatalf("rusage did not move: %v → %v", a.self, b.self)
	}
}
