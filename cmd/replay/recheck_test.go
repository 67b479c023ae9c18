package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSimTraceRecheckStatuses: a passing run's trace replays with the simulator's checks
// to no violation (status 0); the same trace claiming a safety failure the replay does not
// meet has diverged (status 1), and one claiming a coverage failure, which only the whole
// run can show, is not a divergence (status 0, said so).
func TestSimTraceRecheckStatuses(t *testing.T) {
	path, _ := prunedSimTrace(t)
	withFailure := func(failure string) string {
		return editTrace(t, path, func(line []byte) []byte {
			if bytes.HasPrefix(line, []byte(`{"type":"header"`)) {
				return bytes.Replace(line, []byte(`"firstDeskSeq"`), []byte(`"failure":`+failure+`,"firstDeskSeq"`), 1)
			}
			return line
		})
	}
	for _, tc := range []struct {
		name, path string
		status     int
		want       string
	}{
		{"clean", path, exitOK, "checks: no violation\n"},
		{"claims-safety", withFailure(`{"class":2,"message":"trade t_1 settled twice","at":"2026-11-21T12:00:30Z","step":9}`),
			exitMismatch, "diverged: no check fails on replay, but the trace was written for: trade t_1 settled twice\n"},
		{"claims-coverage", withFailure(`{"class":5,"message":"never reached: [x]","at":"2026-11-21T12:00:30Z","step":9}`),
			exitOK, "checks: no violation; the trace's coverage failure needs what only the running simulator knew"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := run([]string{"-trace", tc.path}, &out, &errb); got != tc.status {
				t.Fatalf("status %d, want %d\n%s%s", got, tc.status, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tc.want) || !strings.Contains(out.String(), "checks: re-ran the simulator's checks") {
				t.Fatalf("report lacks %q:\n%s", tc.want, out.String())
			}
		})
	}
}
