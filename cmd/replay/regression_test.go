package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/sim"
)

// tracesDir holds the regression traces (testdata/README.md at the repository's top).
const tracesDir = "../../testdata/traces"

// maxTraceSize bounds a committed regression trace.
const maxTraceSize = 1 << 20

// regenEnv names the environment variable that makes TestRegenerateTraces rewrite the
// traces of regressionTraces.
const regenEnv = "RFQDESK_REGEN_TRACES"

// regressionTrace is one committed trace: the knobs of the simulator run that wrote it,
// and what its replay must show besides the recorded digests.
type regressionTrace struct {
	name  string // file name in tracesDir
	knobs func() sim.Knobs
	// ledgerSnapshot: the ledger journal was pruned, the replay starts at its snapshot.
	ledgerSnapshot bool
	// marks: the desk checkpointed with marks and digests (the live loop's follower form)
	// as well as with a checkpoint carrying its digest, and the replay verified them.
	marks bool
}

// regressionTraces are the traces TestRegenerateTraces writes. TestRegressionTraces
// replays every trace in tracesDir, listed here or not.
var regressionTraces = []regressionTrace{
	{name: "mild-plain.jsonl", marks: true, knobs: func() sim.Knobs {
		k := simKnobs(2, 80*time.Second, 3, 2, 0.3, "mild", 0, 0)
		k.CheckpointEvery = 60
		return k
	}},
	{name: "harsh-crashes-pruned.jsonl", ledgerSnapshot: true, knobs: func() sim.Knobs {
		k := simKnobs(6, 90*time.Second, 3, 2, 0.3, "harsh", 0.003, 200)
		k.StateBytesPerInput = 0 // exact intervals: the journal is pruned behind a snapshot
		return k
	}},
	{name: "seed1-mild-standard-trimmed.jsonl", knobs: func() sim.Knobs {
		return simKnobs(1, 12*time.Second, 8, 3, 1, "mild", 0, 0)
	}},
}

// simKnobs are the simulator's default knobs with these changed (snapshotEvery 0 keeps the
// default).
func simKnobs(seed uint64, d time.Duration, makers, takers int, rate float64, faults string, crash float64, snapshotEvery int) sim.Knobs {
	k := sim.DefaultKnobs()
	k.Seed, k.Duration, k.Makers, k.Takers, k.RFQRate, k.Faults, k.CrashRate = seed, d, makers, takers, rate, faults, crash
	// The runs (and the committed traces) these tests were tuned on have no hostile actors;
	// hostile calls change a seed's run and are not what replay is tested on.
	k.Adversaries = 0
	if snapshotEvery > 0 {
		k.SnapshotEvery = snapshotEvery
	}
	return k
}

// traceEnd reads the digests a simulator trace's end line recorded.
func traceEnd(t *testing.T, path string) (desk, ledger string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	var last []byte
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			last = append(last[:0], sc.Bytes()...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var l simLine
	if err := json.Unmarshal(last, &l); err != nil || l.Type != "end" || l.End == nil {
		t.Fatalf("%s: the last line is not an end line (%v)", path, err)
	}
	return l.End.DeskDigest, l.End.LedgerDigest
}

// TestRegressionTraces replays every trace in testdata/traces exactly as `replay -trace
// FILE` does: each must replay with exit status 0 and reach the desk and ledger digests
// its end line recorded. A trace whose digest changes because of an intended behaviour
// change is regenerated (TestRegenerateTraces) in the same commit, saying why.
func TestRegressionTraces(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(tracesDir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no traces in %s", tracesDir)
	}
	known := map[string]regressionTrace{}
	for _, rt := range regressionTraces {
		known[rt.name] = rt
	}
	for _, path := range paths {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".jsonl"), func(t *testing.T) {
			if st, err := os.Stat(path); err != nil || st.Size() > maxTraceSize {
				t.Fatalf("%s: %v, or larger than %d bytes", path, err, maxTraceSize)
			}
			wantDesk, wantLedger := traceEnd(t, path)
			code, out, errOut := runCmd(t, "-trace", path)
			if code != exitOK {
				t.Fatalf("replay -trace %s: exit %d, want 0\n%s%s", path, code, out, errOut)
			}
			mustContain(t, out, "desk: the trace's final digest matches", "ledger: the trace's final digest matches", "result: ok")
			if got := field(t, out, "desk digest"); got != wantDesk {
				t.Errorf("desk digest %s, the trace recorded %s", got, wantDesk)
			}
			if got := field(t, out, "ledger digest"); got != wantLedger {
				t.Errorf("ledger digest %s, the trace recorded %s", got, wantLedger)
			}
			if rt, ok := known[name]; ok && rt.ledgerSnapshot {
				mustContain(t, out, "from the snapshot at record")
			}
			if rt, ok := known[name]; ok && rt.marks {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var verified, mismatched int
				m := regexp.MustCompile(`desk: checkpoints verified (\d+), mismatched (\d+)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no checkpoint count in:\n%s", out)
				}
				verified, _ = strconv.Atoi(m[1])
				mismatched, _ = strconv.Atoi(m[2])
				kinds := traceDeskKinds(t, b)
				for _, kind := range []string{"checkpoint", "checkpoint.mark", "checkpoint.digest"} {
					if !kinds[kind] {
						t.Errorf("the trace holds no %s record", kind)
					}
				}
				if verified < 3 || mismatched != 0 {
					t.Errorf("%d checkpoints verified and %d mismatched, want 3 or more verified", verified, mismatched)
				}
			}
		})
	}
}

// TestRegenerateTraces rewrites the traces of regressionTraces from their simulator runs;
// it runs only when RFQDESK_REGEN_TRACES is set:
//
//	RFQDESK_REGEN_TRACES=1 go test ./cmd/replay -run TestRegenerateTraces
func TestRegenerateTraces(t *testing.T) {
	if os.Getenv(regenEnv) == "" {
		t.Skipf("set %s=1 to rewrite %s", regenEnv, tracesDir)
	}
	if err := os.MkdirAll(tracesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rt := range regressionTraces {
		k := rt.knobs()
		s, err := sim.New(k)
		if err != nil {
			t.Fatal(err)
		}
		r := s.Run()
		if r.Failure != nil {
			t.Fatalf("%s: the run failed: %v\nreproduce: %s", rt.name, r.Failure, k.Command())
		}
		tmp, err := r.WriteTrace(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > maxTraceSize {
			t.Fatalf("%s: %d bytes, more than %d: choose smaller knobs", rt.name, len(data), maxTraceSize)
		}
		if err := os.WriteFile(filepath.Join(tracesDir, rt.name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, %s", rt.name, len(data), k.Command())
	}
}

// traceDeskKinds returns the input kinds of the desk records a simulator trace carries.
func traceDeskKinds(t *testing.T, trace []byte) map[string]bool {
	t.Helper()
	kinds := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(trace))
	sc.Buffer(nil, maxTraceSize)
	for sc.Scan() {
		var l struct {
			Type string `json:"type"`
			Seq  uint64 `json:"seq"`
			Data []byte `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Type != "desk" || l.Seq == 1 {
			continue
		}
		env, err := machine.DecodeEnvelope(l.Data)
		if err != nil {
			t.Fatalf("desk record %d: %v", l.Seq, err)
		}
		kinds[env.Input.Kind()] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return kinds
}
