package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestVerdict: a rehearsal passes only with no loss, no split-brain write, every zombie
// fenced and none of its requests acknowledged.
func TestVerdict(t *testing.T) {
	fenced := zombieReport{exited: true, code: 1, said: "lost the leader's lock", refused: true}
	for _, tc := range []struct {
		name string
		rr   roundResult
		ok   bool
	}{
		{"clean kill", roundResult{signal: "SIGKILL", takeover: time.Second}, true},
		{"clean pause", roundResult{signal: "SIGSTOP", zombie: fenced}, true},
		{"a loss", roundResult{signal: "SIGKILL", check: verdict{acked: 3, losses: []string{"x"}}}, false},
		{"split brain", roundResult{signal: "SIGKILL", split: 1}, false},
		{"zombie alive", roundResult{signal: "SIGSTOP", zombie: zombieReport{}}, false},
		{"zombie exited 0", roundResult{signal: "SIGSTOP", zombie: zombieReport{exited: true, said: "x"}}, false},
		{"zombie acknowledged", roundResult{signal: "SIGSTOP", zombie: zombieReport{exited: true, code: 1, said: "x", acked: true}}, false},
	} {
		var res results
		res.add(tc.rr)
		if res.ok() != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, res.ok(), tc.ok)
		}
		var out strings.Builder
		res.print(&out)
		if strings.Contains(out.String(), "PASS") != tc.ok {
			t.Errorf("%s: printed %q", tc.name, out.String())
		}
	}
}

// TestFlags refuses a rehearsal that cannot run.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-rounds", "0"}, {"-workers", "0"}, {"-min-run", "2s", "-max-run", "1s"}, {"-stop-share", "2"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	if _, err := parseFlags(nil, io.Discard); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}
