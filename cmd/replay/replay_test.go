package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/sim"
)

// recorded is a data directory written by a real desk, and what that desk said about
// itself before it closed.
type recorded struct {
	dir string
	// deskDigest is the live desk's digest after its last input: with CheckpointEvery 1 and
	// a clock that does not move, the live loop's last records are a checkpoint mark and
	// the digest its follower computed of the state before it.
	deskDigest, ledgerDigest string
	deskLast, ledgerLast     uint64
}

var (
	fixtureOnce sync.Once
	fixture     recorded
	fixtureErr  error
)

// desk returns a data directory (shared by the tests: copy it before changing it) where
// two parties registered and funded themselves, traded once to settlement, accepted a
// second quote whose taker signatures are still missing, and left an RFQ open.
func desk(t *testing.T) recorded {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureErr = errors.New("the fixture desk failed (see the first test)")
		fixture, fixtureErr = record(t)
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixture
}

func record(t *testing.T) (recorded, error) {
	dir, err := os.MkdirTemp("", "replay-fixture-")
	if err != nil {
		return recorded{}, err
	}
	// The fixture outlives the first test; remove it when the package's tests end.
	fixtureDirs = append(fixtureDirs, dir)
	cat := drive.Catalog("1", "100000")
	cfg := drive.Config(7, cat, 25)
	clock := ledgersim.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	events := drive.NewEvents()
	n, err := node.Open(node.Options{
		Dir: dir, Desk: cfg, Ledger: node.LedgerSpec{Network: machine.Testnet, Seed: 7, Catalog: cat},
		Clock: clock, Sink: events, CheckpointEvery: 1, Sync: journal.SyncNone,
	})
	if err != nil {
		return recorded{}, err
	}
	d := drive.Driver{T: t, Desk: n.Loop}
	maker, taker := d.Register("Maker"), d.Register("Taker")
	if err := n.Loop.OpenSocket(context.Background(), 1, maker.KeyHash(), false); err != nil {
		return recorded{}, err
	}
	clock.Advance(time.Second)
	d.Fund(maker, 2)
	d.Fund(taker, 2)
	clock.Advance(time.Second)
	first := d.Trade(events, maker, taker)
	d.Sign(taker, first.Actions)
	events.WaitFor(t, taker.ID, machine.EvTradeSettled, nil)
	clock.Advance(time.Second)
	d.Trade(events, maker, taker) // accepted, the taker has not signed
	clock.Advance(time.Second)
	d.Must(d.Do(machine.CreateRFQ{Req: taker.Req(), Direction: machine.Buy, Qty: money.MustParse("0.1"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{maker.Hint}, TTLSeconds: 600}), 200)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		return recorded{}, err
	}
	// Read once the node is closed: a ledger call the desk still had in flight (the
	// accepted trade's) may land, and be journaled, until its workers have stopped.
	ledgerSum := n.Ledger.L.Digest()
	r := recorded{dir: dir, ledgerDigest: hex.EncodeToString(ledgerSum[:])}
	// Read the live desk's last checkpoint.
	recs := readAll(t, filepath.Join(dir, "desk"))
	r.deskLast = uint64(len(recs))
	env, err := machine.DecodeEnvelope(recs[len(recs)-1])
	if err != nil {
		return recorded{}, err
	}
	cp, ok := env.Input.(machine.CheckpointDigest)
	if !ok {
		return recorded{}, fmt.Errorf("the last desk record is a %s, not a checkpoint digest", env.Input.Kind())
	}
	r.deskDigest = cp.Digest
	r.ledgerLast = uint64(len(readAll(t, filepath.Join(dir, "ledger"))))
	return r, nil
}

var fixtureDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range fixtureDirs {
		_ = os.RemoveAll(d)
	}
	os.Exit(code)
}

// readAll reads every record of a closed journal directory.
func readAll(t testing.TB, dir string) [][]byte {
	t.Helper()
	l, err := journal.OpenDir(dir, journal.Options{Sync: journal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out [][]byte
	if err := l.ReadFrom(1, func(_ uint64, rec []byte) error {
		out = append(out, append([]byte(nil), rec...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// rewrite writes a data directory at dst holding src's ledger journal and src's desk
// records as edit returns them (nil drops a record; extra records may be added by
// returning more). Snapshots are not copied: the new desk journal replays from genesis.
func rewrite(t *testing.T, src string, edit func(seq uint64, rec []byte) [][]byte) string {
	t.Helper()
	dst := t.TempDir()
	for _, sub := range []string{"ledger", "desk"} {
		recs := readAll(t, filepath.Join(src, sub))
		l, err := journal.OpenDir(filepath.Join(dst, sub), journal.Options{Sync: journal.SyncNone})
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range recs {
			out := [][]byte{rec}
			if sub == "desk" {
				out = edit(uint64(i+1), rec)
			}
			if len(out) == 0 {
				continue
			}
			if _, err := l.Append(context.Background(), out...); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// field returns the value after a "name  " line prefix.
func field(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q line in:\n%s", name, out)
	}
	return m[1]
}

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestReplayDataDir(t *testing.T) {
	r := desk(t)
	code, out, errOut := runCmd(t, "-data", r.dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if got := field(t, out, "desk digest"); got != r.deskDigest {
		t.Errorf("desk digest %s, the live desk had %s", got, r.deskDigest)
	}
	if got := field(t, out, "ledger digest"); got != r.ledgerDigest {
		t.Errorf("ledger digest %s, the live ledger had %s", got, r.ledgerDigest)
	}
	mustContain(t, out,
		"desk: from genesis (record 1)",
		fmt.Sprintf("desk: replayed %d inputs, seq 2..%d;", r.deskLast-1, r.deskLast),
		"mismatched 0",
		fmt.Sprintf("ledger: replayed %d inputs from genesis, through record %d\n", r.ledgerLast-1, r.ledgerLast),
		"parties          2 (registered 2, house 0)",
		"registrations    0 pending",
		"rfqs             2 open; closed and retained: 1 filled, 0 cancelled, 0 expired",
		"quotes           1 live/pending (funding 0, live 0, settling 1); 1 closed and retained",
		"trades           1 settled, 0 failed, 1 in flight",
		"actions          2 pending (2 awaiting a signature, 0 executing)",
		"held replies     0",
		"ledger           6 parties, 10 holdings, 3 live allocations, 0 pending transfers",
		"result: ok",
	)
	// The live desk journaled a checkpoint after every input: all were verified.
	if !regexp.MustCompile(`checkpoints verified [1-9]\d*, mismatched 0`).MatchString(out) {
		t.Errorf("no checkpoint verified:\n%s", out)
	}
	// The desk's own files were not touched: no new segment, the lock file free.
	code, _, errOut = runCmd(t, "-data", r.dir)
	if code != exitOK {
		t.Fatalf("second run: exit %d: %s", code, errOut)
	}
}

// TestReplayWhileOpen: a desk that still holds its journal's lock is replayed from a copy.
func TestReplayWhileOpen(t *testing.T) {
	r := desk(t)
	dir := rewrite(t, r.dir, func(_ uint64, rec []byte) [][]byte { return [][]byte{rec} })
	held, err := journal.OpenDir(filepath.Join(dir, "desk"), journal.Options{Sync: journal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	code, out, errOut := runCmd(t, "-data", dir)
	if code != exitOK || field(t, out, "desk digest") != r.deskDigest {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestUntil(t *testing.T) {
	r := desk(t)
	recs := readAll(t, filepath.Join(r.dir, "desk"))
	// Find a checkpoint digest in the second half: it holds the digest of the state before
	// its mark, that is after the input just before the mark.
	var until uint64
	var want string
	for i := len(recs) / 2; i < len(recs); i++ {
		env, _ := machine.DecodeEnvelope(recs[i])
		if cp, ok := env.Input.(machine.CheckpointDigest); ok {
			before, _ := machine.DecodeEnvelope(recs[cp.Mark-2]) // record n is recs[n-1]
			if !machine.IsCheckpoint(before.Input) {
				until, want = cp.Mark-1, cp.Digest
				break
			}
		}
	}
	if until == 0 {
		t.Fatal("no input followed by its checkpoint")
	}
	code, out, errOut := runCmd(t, "-data", r.dir, "-until", fmt.Sprint(until))
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if got := field(t, out, "desk digest"); got != want {
		t.Errorf("-until %d: digest %s, the checkpoint after it says %s", until, got, want)
	}
	mustContain(t, out, fmt.Sprintf("stopped after input %d (-until)", until), fmt.Sprintf("seq 2..%d;", until),
		fmt.Sprintf("(the ledger as of desk input %d", until))
	if field(t, out, "ledger digest") == r.ledgerDigest {
		t.Error("the ledger as of the middle of the run equals the final ledger")
	}
	// Past the end: everything, and a note.
	code, out, _ = runCmd(t, "-data", r.dir, "-until", fmt.Sprint(r.deskLast+10))
	if code != exitOK || field(t, out, "desk digest") != r.deskDigest {
		t.Fatalf("-until past the end: exit %d\n%s", code, out)
	}
	mustContain(t, out, "the journal ends before it")
}

func TestDump(t *testing.T) {
	r := desk(t)
	code, out, errOut := runCmd(t, "-data", r.dir, "-dump")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	// stdout: every desk record after genesis as a JSON line, then the final state.
	recs := readAll(t, filepath.Join(r.dir, "desk"))
	dec := json.NewDecoder(strings.NewReader(out))
	for i, rec := range recs[1:] {
		var got struct {
			Seq   uint64          `json:"seq"`
			At    time.Time       `json:"at"`
			Kind  string          `json:"kind"`
			Input json.RawMessage `json:"input"`
		}
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("record line %d: %v", i+2, err)
		}
		env, err := machine.DecodeEnvelope(rec)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(env.Input)
		if got.Seq != env.Seq || !got.At.Equal(env.At) || got.Kind != env.Input.Kind() || string(got.Input) != string(want) {
			t.Fatalf("record line %d: %+v, want %+v", i+2, got, env)
		}
	}
	var state json.RawMessage
	if err := dec.Decode(&state); err != nil {
		t.Fatalf("no desk state after the records: %v", err)
	}
	mem := journal.NewMemLog(true)
	if _, err := mem.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	d, _, err := node.ReplayDesk(mem, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(d)
	var compact bytes.Buffer
	if err := json.Compact(&compact, state); err != nil || compact.String() != string(want) {
		t.Errorf("the dumped state is not the replayed desk's (%v)", err)
	}
	if dec.More() {
		t.Error("output after the desk state")
	}
	mustContain(t, errOut, "result: ok") // the report goes to stderr with -dump
}

func TestCheckpointMismatch(t *testing.T) {
	r := desk(t)
	var bad, badMark uint64
	dir := rewrite(t, r.dir, func(seq uint64, rec []byte) [][]byte {
		env, err := machine.DecodeEnvelope(rec)
		if err != nil || seq < r.deskLast/2 || bad != 0 {
			return [][]byte{rec}
		}
		cp, ok := env.Input.(machine.CheckpointDigest)
		if !ok {
			return [][]byte{rec}
		}
		bad, badMark = seq, cp.Mark
		env.Input = machine.CheckpointDigest{Mark: cp.Mark, Digest: strings.Repeat("0", 64)}
		out, err := machine.EncodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{out}
	})
	code, out, _ := runCmd(t, "-data", dir)
	if code != exitMismatch {
		t.Fatalf("exit %d, want %d\n%s", code, exitMismatch, out)
	}
	mustContain(t, out, fmt.Sprintf("FIRST MISMATCH at checkpoint seq %d", badMark), "mismatched 1", "result: MISMATCH")
	// The state itself is the same: the checkpoint only carries a wrong digest.
	if got := field(t, out, "desk digest"); got != r.deskDigest {
		t.Errorf("digest %s, want %s", got, r.deskDigest)
	}

	// -diff against the original: the records differ at that checkpoint, the states not.
	code, out, _ = runCmd(t, "-data", dir, "-diff", r.dir)
	if code != exitMismatch {
		t.Fatalf("-diff: exit %d\n%s", code, out)
	}
	mustContain(t, out, fmt.Sprintf("first difference at desk input %d: the records differ", bad),
		"checkpoint.digest, seq", "the states after it are equal",
		"  outputs of this:\n", "  outputs of other:\n") // as transcripts print them
}

func TestDiff(t *testing.T) {
	r := desk(t)
	same := rewrite(t, r.dir, func(_ uint64, rec []byte) [][]byte { return [][]byte{rec} })
	code, out, errOut := runCmd(t, "-data", r.dir, "-diff", same)
	if code != exitOK {
		t.Fatalf("identical: exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, fmt.Sprintf("identical through input %d", r.deskLast), "states after every input",
		"ledger journals identical", "result: identical")

	// One extra input at the end.
	extra := rewrite(t, r.dir, func(seq uint64, rec []byte) [][]byte {
		if seq != r.deskLast {
			return [][]byte{rec}
		}
		env, _ := machine.DecodeEnvelope(rec)
		tick, err := machine.EncodeEnvelope(machine.Envelope{Seq: seq + 1, At: env.At.Add(time.Minute), Input: machine.Tick{}})
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{rec, tick}
	})
	code, out, _ = runCmd(t, "-data", r.dir, "-diff", extra)
	if code != exitMismatch {
		t.Fatalf("extra input: exit %d\n%s", code, out)
	}
	mustContain(t, out, fmt.Sprintf("first difference at desk input %d: only other has it (tick,", r.deskLast+1),
		fmt.Sprintf("result: DIVERGED at desk input %d (record)", r.deskLast+1))
	// The other way round, and with -until before the difference: identical.
	code, out, _ = runCmd(t, "-data", extra, "-diff", r.dir)
	if code != exitMismatch || !strings.Contains(out, "only this has it") {
		t.Fatalf("reversed: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd(t, "-data", extra, "-diff", r.dir, "-until", fmt.Sprint(r.deskLast), "-every", "0")
	if code != exitOK {
		t.Fatalf("-until before the difference: exit %d\n%s", code, out)
	}
	mustContain(t, out, "states every 0 inputs and at the end")
}

// writeTrace writes a trace of a data directory's journals: the ledger record of each
// ledger input before the desk records stamped later (interleaved by time).
func writeTrace(t *testing.T, dir string, end *traceLine) string {
	t.Helper()
	desk, ledger := readAll(t, filepath.Join(dir, "desk")), readAll(t, filepath.Join(dir, "ledger"))
	path := filepath.Join(t.TempDir(), "run.trace")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	seed := uint64(7)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(enc.Encode(traceLine{Kind: "header", Format: TraceFormat, Seed: &seed, Knobs: json.RawMessage(`{"makers":1}`)}))
	for i, rec := range ledger {
		must(enc.Encode(traceLine{Kind: "ledger", Seq: uint64(i + 1), Rec: rec}))
	}
	for i, rec := range desk {
		must(enc.Encode(traceLine{Kind: "desk", Seq: uint64(i + 1), Rec: rec}))
	}
	if end != nil {
		must(enc.Encode(end))
	}
	must(os.WriteFile(path, b.Bytes(), 0o600))
	return path
}

func TestTrace(t *testing.T) {
	r := desk(t)
	good := &traceLine{Kind: "end", Desk: &traceFinal{Seq: r.deskLast, Digest: r.deskDigest},
		Ledger: &traceFinal{Seq: r.ledgerLast, Digest: r.ledgerDigest}}
	path := writeTrace(t, r.dir, good)
	code, out, errOut := runCmd(t, "-trace", path)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, `trace: seed 7, knobs {"makers":1}`, "desk: the trace's final digest matches",
		"ledger: the trace's final digest matches", "result: ok")
	if field(t, out, "desk digest") != r.deskDigest || field(t, out, "ledger digest") != r.ledgerDigest {
		t.Fatalf("trace digests differ from the data directory's\n%s", out)
	}
	// The same journals as a trace and as a data directory are identical.
	code, out, _ = runCmd(t, "-trace", path, "-diff", r.dir)
	if code != exitOK {
		t.Fatalf("-diff trace vs dir: exit %d\n%s", code, out)
	}
	// A trace whose end disagrees.
	wrong := *good
	wrong.Desk = &traceFinal{Seq: r.deskLast, Digest: strings.Repeat("ab", 32)}
	code, out, _ = runCmd(t, "-trace", writeTrace(t, r.dir, &wrong))
	if code != exitMismatch {
		t.Fatalf("wrong end: exit %d\n%s", code, out)
	}
	mustContain(t, out, "desk: MISMATCH with the trace's end", "ledger: the trace's final digest matches")
	// Without an end line: nothing to compare, still ok. -until cuts the ledger by position:
	// every ledger record precedes the desk records in this trace.
	code, out, _ = runCmd(t, "-trace", writeTrace(t, r.dir, nil), "-until", "5")
	if code != exitOK {
		t.Fatalf("no end: exit %d\n%s", code, out)
	}
	mustContain(t, out, fmt.Sprintf("through record %d (the ledger as of desk input 5: the ledger records written before", r.ledgerLast))
}

func TestBadInput(t *testing.T) {
	r := desk(t)
	bad := filepath.Join(t.TempDir(), "bad.trace")
	if err := os.WriteFile(bad, []byte(`{"kind":"header","format":"rfqdesk-trace/1"}`+"\n"+`{"kind":"desk","seq":2,"rec":""}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no source", nil, "exactly one of"},
		{"both sources", []string{"-data", r.dir, "-trace", bad}, "exactly one of"},
		{"not a data dir", []string{"-data", t.TempDir()}, "is not a desk data directory"},
		{"out of order trace", []string{"-trace", bad}, "desk record seq 2, want 1"},
		{"missing trace", []string{"-trace", filepath.Join(t.TempDir(), "none")}, "open trace"},
		{"missing diff", []string{"-data", r.dir, "-diff", filepath.Join(t.TempDir(), "none")}, "-diff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tc.args...)
			if code != exitError || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want %d with %q\n%s%s", code, exitError, tc.want, out, errOut)
			}
		})
	}
}

// TestFromSnapshot: a desk journal pruned behind its snapshots replays from the newest one.
func TestFromSnapshot(t *testing.T) {
	r := desk(t)
	dir := rewrite(t, r.dir, func(_ uint64, rec []byte) [][]byte { return [][]byte{rec} })
	deskDir := filepath.Join(dir, "desk")
	recs := readAll(t, deskDir)
	if err := os.RemoveAll(deskDir); err != nil {
		t.Fatal(err)
	}
	// Small segments, so that pruning drops whole segments with record 1.
	l, err := journal.OpenDir(deskDir, journal.Options{Sync: journal.SyncNone, SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	snap := func(seq uint64) {
		d, _, err := node.ReplayDesk(l, false, func(s node.Step) bool { return s.Seq < seq })
		if err != nil {
			t.Fatal(err)
		}
		state, err := d.EncodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SaveSnapshot(seq, state); err != nil {
			t.Fatal(err)
		}
	}
	last := uint64(len(recs))
	snap(last / 2)
	snap(last - 10)
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	if l.FirstSeq() == 1 {
		t.Fatal("the journal still holds record 1")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "-data", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mustContain(t, out, fmt.Sprintf("desk: from the snapshot at seq %d (the journal no longer holds record 1)", last-10),
		fmt.Sprintf("desk: replayed 10 inputs, seq %d..%d;", last-9, last))
	if got := field(t, out, "desk digest"); got != r.deskDigest {
		t.Errorf("digest %s, want %s", got, r.deskDigest)
	}
	// -until before the snapshot cannot be answered.
	code, _, errOut = runCmd(t, "-data", dir, "-until", "3")
	if code != exitError || !strings.Contains(errOut, "covered by the snapshot") {
		t.Fatalf("-until 3: exit %d: %s", code, errOut)
	}
}

// writeSimTrace writes the fixture in the simulator's trace format (sim/trace.go): desk
// records as the journal holds them (base64 in "data"), ledger records as JSON, desk before
// ledger; with from > 1 the desk records start there after a desk-snapshot line holding the
// state as of from-1.
func writeSimTrace(t *testing.T, r recorded, from uint64) string {
	t.Helper()
	desk, ledger := readAll(t, filepath.Join(r.dir, "desk")), readAll(t, filepath.Join(r.dir, "ledger"))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	put := func(v any) {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	put(map[string]any{"type": "header", "version": sim.TraceVersion, "header": map[string]any{"seed": 11, "knobs": map[string]int{"makers": 2},
		"command": "go run ./cmd/sim -seed 11", "firstDeskSeq": from}})
	if from > 1 {
		mem := journal.NewMemLog(true)
		if _, err := mem.Append(context.Background(), desk...); err != nil {
			t.Fatal(err)
		}
		d, _, err := node.ReplayDesk(mem, false, func(s node.Step) bool { return s.Seq < from-1 })
		if err != nil {
			t.Fatal(err)
		}
		state, err := d.EncodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		put(map[string]any{"type": "desk-snapshot", "seq": from - 1, "data": state})
	}
	// A data directory does not record where the ledger stood at each desk record (the
	// simulator's trace does), so the fixture's desk lines say nothing of it.
	for i, rec := range desk[from-1:] {
		put(map[string]any{"type": "desk", "seq": from + uint64(i), "data": rec})
	}
	for i, rec := range ledger {
		js, err := node.LedgerRecordJSON(rec) // binary input records show as JSON, as sim/trace.go writes them
		if err != nil {
			t.Fatal(err)
		}
		put(map[string]any{"type": "ledger", "seq": i + 1, "record": js})
	}
	put(map[string]any{"type": "end", "end": map[string]any{"steps": 99, "deskDigest": r.deskDigest, "ledgerDigest": r.ledgerDigest,
		"deskLastSeq": r.deskLast, "ledgerLastSeq": r.ledgerLast}})
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSimTrace(t *testing.T) {
	r := desk(t)
	for _, from := range []uint64{1, r.deskLast - 20} {
		t.Run(fmt.Sprint(from), func(t *testing.T) {
			path := writeSimTrace(t, r, from)
			code, out, errOut := runCmd(t, "-trace", path)
			if code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			mustContain(t, out, "source: simulator trace", "trace: seed 11", "reproduce with go run ./cmd/sim -seed 11",
				"desk: the trace's final digest matches", "ledger: the trace's final digest matches", "result: ok")
			if from > 1 {
				mustContain(t, out, fmt.Sprintf("desk: from the snapshot at seq %d", from-1))
			} else {
				mustContain(t, out, "desk: from genesis (record 1)")
				code, diffOut, _ := runCmd(t, "-trace", path, "-diff", r.dir)
				if code != exitOK {
					t.Fatalf("-diff: exit %d\n%s", code, diffOut)
				}
			}
			if field(t, out, "desk digest") != r.deskDigest || field(t, out, "ledger digest") != r.ledgerDigest {
				t.Fatalf("digests differ from the data directory's\n%s", out)
			}
		})
	}
}
