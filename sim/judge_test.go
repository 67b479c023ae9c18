package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// countingJudge is a test judge: it counts the inputs it was handed and objects at a
// chosen point, in terms of its own count, so a replay that rebuilt it wrongly (a lost
// snapshot, an input missed or handed twice after a crash) objects with another message.
type countingJudge struct {
	inputs   uint64
	settles  uint64
	failRead uint64 // object to the first successful read after this many inputs (0: never)
	failSett uint64 // object to the settle after this many settles (0: never)
}

func (j *countingJudge) Apply(env machine.Envelope, out machine.Outputs) error {
	j.inputs++
	for _, c := range out.Calls {
		if c.Command != nil && c.Command.Settle != nil {
			j.settles++
			if j.failSett != 0 && j.settles == j.failSett {
				return fmt.Errorf("settle %d (%s) after %d inputs is the one this judge refuses", j.settles, c.CommandID, j.inputs)
			}
		}
	}
	return nil
}

func (j *countingJudge) Read(at time.Time, keyHash string, q machine.Query, rep machine.Reply) error {
	if j.failRead == 0 || j.inputs < j.failRead || rep.Status != 200 {
		return nil
	}
	passed := ""
	if in, ok := q.(machine.QIncoming); ok {
		passed = fmt.Sprintf(" with %d transfers passed in", len(in.Transfers))
	}
	return fmt.Errorf("a %s read by %.8s at %s after %d inputs%s is the one this judge refuses",
		queryKind(q), keyHash, at.Format(time.RFC3339Nano), j.inputs, passed)
}

func (j *countingJudge) MarshalBinary() ([]byte, error) {
	return binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(nil,
		j.inputs), j.settles), j.failRead), j.failSett), nil
}

func restoreCountingJudge(b []byte) (*countingJudge, error) {
	var v [4]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("a counting judge's snapshot is cut short")
		}
		v[i], b = x, b[n:]
	}
	return &countingJudge{inputs: v[0], settles: v[1], failRead: v[2], failSett: v[3]}, nil
}

// countingJudges makes counting judges that object at the given points.
func countingJudges(failRead, failSettle uint64) Judges {
	return JudgesOf(func(machine.Config) (*countingJudge, error) {
		return &countingJudge{failRead: failRead, failSett: failSettle}, nil
	}, restoreCountingJudge)
}

// lastSettle runs k with a judge that objects to nothing and returns how many settle calls
// the run made: a judge objecting to that one fails the run as late as a settle can. Which
// settle comes after enough snapshots and crashes moves whenever the actors' draws do; the
// last one does not need recounting.
func lastSettle(t *testing.T, k Knobs) uint64 {
	t.Helper()
	var last *countingJudge
	j := JudgesOf(func(machine.Config) (*countingJudge, error) {
		last = &countingJudge{}
		return last, nil
	}, func(b []byte) (*countingJudge, error) {
		c, err := restoreCountingJudge(b)
		last = c
		return c, err
	})
	s, err := NewJudged(k, j)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Run(); r.Failure != nil {
		t.Fatalf("the run without an objection failed: %v", r.Failure)
	}
	if last == nil || last.settles == 0 {
		t.Fatal("the run settled nothing")
	}
	return last.settles
}

// failAndReplay runs k with the judges until it fails, writes the trace into a directory
// that does not exist yet, and replays it with the same judges.
func failAndReplay(t *testing.T, k Knobs, j Judges) (*Result, *Recheck) {
	t.Helper()
	r := mustFail(t, k, j)
	return r, writeAndReplay(t, r, j)
}

// mustFail runs k with the judges and fails the test unless the run fails.
func mustFail(t *testing.T, k Knobs, j Judges) *Result {
	t.Helper()
	s, err := NewJudged(k, j)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Run()
	if r.Failure == nil {
		t.Fatalf("seed %d: the run did not fail", k.Seed)
	}
	return r
}

// writeAndReplay writes a run's trace into a directory that does not exist yet and
// replays it with the judges.
func writeAndReplay(t *testing.T, r *Result, j Judges) *Recheck {
	t.Helper()
	path, err := r.WriteTrace(t.TempDir() + "/not/yet/there")
	if err != nil {
		t.Fatalf("write the trace: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ReplayTrace(f, j)
	if err != nil {
		t.Fatalf("replay %s: %v", path, err)
	}
	return c
}

// TestJudgeFailureReplays: a judge's objection to an input and to a read fails the run,
// and the trace replays to the same objection, with the judge rebuilt from its snapshot
// beside the desk snapshot and after crashes.
func TestJudgeFailureReplays(t *testing.T) {
	for _, tc := range []struct {
		name              string
		failRead, failSet uint64
		crash             float64
		snapshotEvery     int
		wantRead          bool
	}{
		{"input", 0, 6, 0, 0, false},
		// failSet 0 with an input case: the run's last settle (lastSettle), so that the run
		// has had all the snapshots and crashes it will have when the judge objects.
		{"input-crashes-pruned", 0, 0, 0.003, 300, false},
		{"read", 300, 0, 0, 0, true},
		{"read-crashes-pruned", 700, 0, 0.003, 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := knobs(3, "mild", tc.crash)
			k.Adversaries = 0 // the trigger points below were counted on a run without hostile actors
			if tc.snapshotEvery > 0 {
				k.SnapshotEvery = tc.snapshotEvery
			}
			failSet := tc.failSet
			if failSet == 0 && !tc.wantRead {
				failSet = lastSettle(t, k)
			}
			r, c := failAndReplay(t, k, countingJudges(tc.failRead, failSet))
			if !strings.HasPrefix(r.Failure.Message, "judge: ") {
				t.Fatalf("the run failed otherwise: %v", r.Failure)
			}
			if read := strings.Contains(r.Failure.Message, "read:"); read != tc.wantRead {
				t.Fatalf("failure %q: found by a read %v, want %v", r.Failure.Message, read, tc.wantRead)
			}
			if !c.Checked || !c.Judged || !c.Reproduced() {
				t.Fatalf("not reproduced: %+v\nviolation %v\nrecorded  %v", c, c.Violation, c.Recorded)
			}
			if tc.wantRead && c.Reads != 1 {
				t.Fatalf("the replay re-read %d reads, want the failing one", c.Reads)
			}
			if tc.snapshotEvery > 0 && (r.Stats.Snapshots < 2 || r.Stats.Crashes == 0) {
				t.Fatalf("%d snapshots, %d crashes: the pruned case is not exercised", r.Stats.Snapshots, r.Stats.Crashes)
			}
			t.Logf("%s: reproduced after %d inputs, %d ledger records: %s", tc.name, c.Inputs, c.LedgerRecords, c.Violation.Message)
		})
	}
}

// TestPassingTraceReplaysClean: a run that passed, with crashes and pruned journals, writes
// a trace that replays with every check and a judge to the state it ended with and no
// violation (the replay's checks raise no false alarm, and the journals' tails and the
// ledger positions are complete).
func TestPassingTraceReplaysClean(t *testing.T) {
	for _, tc := range []struct {
		name  string
		k     func(seed uint64) Knobs
		seeds []uint64
		judge Judges
	}{
		{"mild", func(seed uint64) Knobs { return knobs(seed, "mild", 0) }, []uint64{4}, countingJudges(0, 0)},
		// Several seeds: where a run's last snapshot falls decides whether any ledger
		// record is left to replay after it, and that moves whenever the actors' draws do;
		// every replay must be clean and at least one must replay ledger records.
		{"harsh-crashes-pruned", func(seed uint64) Knobs {
			k := knobs(seed, "harsh", 0.003)
			k.SnapshotEvery = 300
			return k
		}, []uint64{7, 8, 9, 10}, countingJudges(0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			records := 0
			for _, seed := range tc.seeds {
				s, err := NewJudged(tc.k(seed), tc.judge)
				if err != nil {
					t.Fatal(err)
				}
				r := s.Run()
				if r.Failure != nil {
					t.Fatalf("seed %d: %v", seed, r.Failure)
				}
				c := writeAndReplay(t, r, tc.judge)
				if !c.Checked || !c.Judged || c.Violation != nil || c.Diverged != "" || c.Reproduced() {
					t.Fatalf("seed %d: replay: %+v (violation %v)", seed, c, c.Violation)
				}
				if c.Inputs == 0 {
					t.Fatalf("seed %d: replayed no input", seed)
				}
				records += c.LedgerRecords
			}
			if records == 0 {
				t.Fatalf("seeds %v replayed no ledger record", tc.seeds)
			}
		})
	}
}

// TestReplayTraceBadInput: a trace cut short at any line, or with a line spoiled, gives a
// clear error or a replay, never a panic; a trace without a header is refused.
func TestReplayTraceBadInput(t *testing.T) {
	k := knobs(3, "mild", 0)
	k.Duration = 20 * time.Second
	r := mustFail(t, k, countingJudges(60, 0))
	path, err := r.WriteTrace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `{"type":"read"`) {
		t.Fatalf("the failure %q left no read line", r.Failure.Message)
	}
	lines := strings.SplitAfter(string(data), "\n")
	replay := func(text string) (c *Recheck, err error) {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("panic on %.300q: %v", text, p)
			}
		}()
		return ReplayTrace(strings.NewReader(text), countingJudges(60, 0))
	}
	if _, err := replay(strings.Join(lines[1:], "")); err == nil {
		t.Fatal("a trace without its header replayed")
	}
	for i := 1; i <= len(lines); i++ {
		_, _ = replay(strings.Join(lines[:i], ""))
	}
	spoil := []func(string) string{
		func(l string) string { return l[:len(l)/2] + "\n" },
		func(l string) string { return strings.Replace(l, `"seq":`, `"seq":9`, 1) },
		func(l string) string { return strings.Replace(l, `"kind":"`, `"kind":"x`, 1) },
		func(l string) string { return strings.Replace(l, `"check":"actor"`, `"check":"taker-view"`, 1) },
		func(l string) string { return strings.Replace(l, `"ledgerSeq":`, `"ledgerSeq":1`, 1) },
	}
	for i := range lines {
		for _, f := range spoil {
			edited := append(append(append([]string(nil), lines[:i]...), f(lines[i])), lines[i+1:]...)
			_, _ = replay(strings.Join(edited, ""))
		}
	}
}
