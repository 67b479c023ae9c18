package main

import (
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
