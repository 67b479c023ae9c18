package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/sim"
)

// prunedSimTrace runs a short crash-heavy simulation that snapshots often, so that both
// journals are pruned, and writes its trace with the simulator's own writer. Which seed
// crashes and snapshots enough moves whenever the actors change, so it takes the first
// of a few that does.
func prunedSimTrace(t *testing.T) (string, *sim.Result) {
	t.Helper()
	var r *sim.Result
	for seed := uint64(3); seed < 33; seed++ {
		k := simKnobs(seed, time.Minute, 3, 2, 0.3, "harsh", 0.004, 120)
		k.StateBytesPerInput = 0 // exactly every 120 inputs, however the state grows
		s, err := sim.New(k)
		if err != nil {
			t.Fatal(err)
		}
		r = s.Run()
		if r.Failure != nil {
			t.Fatalf("the run failed: %v\nreproduce: %s", r.Failure, k.Command())
		}
		if r.Stats.LedgerSnapshots >= 3 && r.Stats.Crashes > 0 {
			path, err := r.WriteTrace(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return path, r
		}
	}
	t.Fatalf("no seed in 3..32 makes a crash-heavy run with pruned journals; the last: %d ledger snapshots and %d crashes",
		r.Stats.LedgerSnapshots, r.Stats.Crashes)
	return "", nil
}

// dropLines is an edit for editTrace that leaves out every line containing marker.
func dropLines(marker string) func(line []byte) []byte {
	return func(l []byte) []byte {
		if bytes.Contains(l, []byte(marker)) {
			return nil
		}
		return l
	}
}

// editTrace writes a copy of a trace with each line passed through edit (nil drops it).
func editTrace(t *testing.T, path string, edit func(line []byte) []byte) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if l := edit(line); l != nil {
			out.Write(l)
		}
	}
	dst := filepath.Join(t.TempDir(), "edited.jsonl")
	if err := os.WriteFile(dst, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSimTraceLedgerSnapshot: a simulator trace whose ledger journal was pruned carries
// a ledger-snapshot line; replay restores the ledger from it (node.RecoverLedger), replays
// the ledger records after it and reaches the run's final digests.
func TestSimTraceLedgerSnapshot(t *testing.T) {
	path, r := prunedSimTrace(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"type":"ledger-snapshot"`)) || bytes.Contains(data, []byte(`"firstLedgerSeq":1,`)) {
		t.Fatal("the trace does not start its ledger after a snapshot")
	}
	code, out, errOut := runCmd(t, "-trace", path)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, "desk: from the snapshot at seq", "ledger: replayed", "from the snapshot at record",
		"desk: the trace's final digest matches", "ledger: the trace's final digest matches", "result: ok")
	if field(t, out, "desk digest") != r.DeskDigest || field(t, out, "ledger digest") != r.LedgerDigest {
		t.Fatalf("digests differ from the run's (%s, %s)\n%s", r.DeskDigest, r.LedgerDigest, out)
	}

	t.Run("diff with itself", func(t *testing.T) {
		code, out, errOut := runCmd(t, "-trace", path, "-diff", path)
		if code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		mustContain(t, out, "diff: ledger journals identical", "result: identical")
	})
	t.Run("until before the ledger snapshot", func(t *testing.T) {
		// The first desk input the trace holds: the ledger as of it may predate the ledger
		// snapshot; either the desk or the ledger refuses, never a wrong state.
		code, out, errOut := runCmd(t, "-trace", path, "-until", "1")
		if code != exitError || !strings.Contains(errOut, "covered by the") {
			t.Fatalf("exit %d, want %d with 'covered by the'\n%s%s", code, exitError, out, errOut)
		}
	})
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"no ledger snapshot", dropLines(`"type":"ledger-snapshot"`), "has no ledger snapshot"},
		{"second ledger snapshot", func(l []byte) []byte {
			if bytes.Contains(l, []byte(`"type":"ledger-snapshot"`)) {
				return append(append([]byte(nil), l...), l...)
			}
			return l
		}, "a second ledger-snapshot line"},
		{"ledger records cut", dropLines(`"type":"ledger"`), "past the last ledger record"},
		{"snapshot before the records", func(l []byte) []byte {
			return regexp.MustCompile(`^\{"type":"ledger-snapshot","seq":\d+`).ReplaceAll(l, []byte(`{"type":"ledger-snapshot","seq":2`))
		}, "leaves records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, "-trace", editTrace(t, path, tc.edit))
			if code != exitError || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want %d with %q\n%s%s", code, exitError, tc.want, out, errOut)
			}
		})
	}
}
