package ledgersim

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// liveSnapshot is a snapshot the state-machine test took of the live ledger, with how
// many inputs had been recorded when it was taken.
type liveSnapshot struct {
	data   []byte
	inputs int
}

// TestSnapshotRestoreProperty: snapshots of a live ledger taken at random points of a
// random run, restored and fed the inputs recorded after them, reach the live ledger's
// digest, query answers and invariants; and byte for byte the state of a ledger that
// replayed every input from genesis.
func TestSnapshotRestoreProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine(t)
		var snaps []liveSnapshot
		actions := m.actions()
		actions["snapshot"] = func(t *rapid.T) {
			var data []byte
			var n uint64
			data, n, err := m.l.SnapshotWith(func() uint64 { return uint64(len(m.inputs)) })
			if err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, liveSnapshot{data: data, inputs: int(n)})
		}
		t.Repeat(actions)
		if len(snaps) == 0 {
			data := snapshotOf(t, m.l)
			snaps = append(snaps, liveSnapshot{data: data, inputs: len(m.inputs)})
		}
		s := snaps[rapid.IntRange(0, len(snaps)-1).Draw(t, "snapshot")]

		cfg := m.cfg
		cfg.Recorder, cfg.FaultPlan = nil, nil
		restored, err := Restore(cfg, s.data)
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		again := snapshotOf(t, restored)
		if !bytes.Equal(again, s.data) {
			t.Fatal("the restored ledger's snapshot differs from the snapshot it was restored from")
		}
		full := m.fresh(t)
		for i, in := range m.inputs {
			if i >= s.inputs {
				if err := restored.Replay(in); err != nil {
					t.Fatalf("restored ledger: replay input %d (%s): %v", i, in.Kind, err)
				}
			}
			if err := full.Replay(in); err != nil {
				t.Fatalf("fresh ledger: replay input %d (%s): %v", i, in.Kind, err)
			}
		}
		m.sameAnswers(t, m.l, restored)
		if err := restored.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		// The ledger's time is the latest any call stamped: a call that failed with no
		// effect stamps it, and may apply lapses of locks (which only the spendable
		// index sees), without recording an input. Replay applies the same lapses at the
		// next input's time, before anything could see the difference. Brought to the
		// same time, the two ledgers are the same byte for byte.
		tick := Input{Kind: InputTick, At: restored.now}
		if err := restored.Replay(tick); err != nil {
			t.Fatal(err)
		}
		if err := full.Replay(tick); err != nil {
			t.Fatal(err)
		}
		a := snapshotOf(t, restored)
		b := snapshotOf(t, full)
		if !bytes.Equal(a, b) {
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			t.Fatalf("restored + replayed and replayed from genesis give different snapshots (%d and %d bytes, first difference at %d: %q vs %q)",
				len(a), len(b), i, a[max(0, i-40):min(len(a), i+40)], b[max(0, i-40):min(len(b), i+40)])
		}
	})
}

// fresh builds a ledger at genesis from the machine's configuration, for replay.
func (m *machine) fresh(t *rapid.T) *Ledger {
	cfg := m.cfg
	cfg.Recorder, cfg.FaultPlan = nil, nil
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// sameAnswers compares every query answer the machine can name on two ledgers.
func (m *machine) sameAnswers(t *rapid.T, want, got *Ledger) {
	if want.Digest() != got.Digest() {
		t.Fatal("digests differ")
	}
	opt := cmp.Comparer(func(a, b money.Decimal) bool { return a.Equal(b) && a.String() == b.String() })
	same := func(what string, a, b any) {
		if diff := cmp.Diff(a, b, opt); diff != "" {
			t.Fatalf("%s differ(s) (-live +restored):\n%s", what, diff)
		}
	}
	same("offset", want.Offset(), got.Offset())
	same("instruments", want.Instruments(), got.Instruments())
	fees, _ := want.InternalParty("fees")
	for _, p := range append(append([]string(nil), m.parties...), m.op, m.res, fees) {
		same("holdings of "+p, want.Holdings(p), got.Holdings(p))
		same("balances of "+p, want.Balances(p), got.Balances(p))
		same("allocations of "+p, want.Allocations(p), got.Allocations(p))
		same("inbox of "+p, want.PendingTransfers(p), got.PendingTransfers(p))
		same("outbox of "+p, want.OutgoingTransfers(p), got.OutgoingTransfers(p))
		same("preapproval of "+p, want.HasPreapproval(p), got.HasPreapproval(p))
		wp, werr := want.Party(p)
		gp, gerr := got.Party(p)
		same("party "+p, wp, gp)
		same("party error "+p, fmt.Sprint(werr), fmt.Sprint(gerr))
	}
	for _, id := range m.cmdIDs {
		wu, wok := want.CommandResult(m.actAs[id], id)
		gu, gok := got.CommandResult(m.actAs[id], id)
		same("result of "+id, []any{wu, wok}, []any{gu, gok})
		if wok {
			gu, err := got.Update(wu.UpdateID)
			same("update "+wu.UpdateID, wu, gu)
			same("update error", nil, err)
		}
	}
	for _, p := range m.prepared {
		wp, werr := want.PreparedTransaction(p.ID)
		gp, gerr := got.PreparedTransaction(p.ID)
		same("prepared "+p.ID, wp, gp)
		same("prepared error "+p.ID, fmt.Sprint(werr), fmt.Sprint(gerr))
	}
}

// snapshotOf is l's snapshot; an error fails the test (a testing.TB or a *rapid.T).
func snapshotOf(tb interface {
	Helper()
	Fatal(args ...any)
}, l *Ledger) []byte {
	tb.Helper()
	snap, err := l.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

// snapshotScenario builds a small ledger touching every kind of state: external and
// internal parties, a pending onboarding, a delisted instrument, free, locked and
// lapsed holdings, an instruction, allocations, a preapproval, a live prepared
// transaction, an expired one (a tombstone) and retained updates.
func snapshotScenario(t testing.TB) *env {
	e := newEnv(t, ProfileTestnet)
	e.l.cfg.Limits.MaxPrepared = 4 // so that tombstones get trimmed too
	alice, bob := e.external("alice"), e.external("bob")
	e.fund(alice, "USDCx", "1000")
	e.fund(bob, "CBTC", "1.5")
	ref := SettlementRef{Executor: e.op, ID: "s1"}
	e.must(alice, Allocate{Settlement: ref, LegID: "a", Side: SideSend, Instrument: "USDCx", Amount: d("100.25"), SettleBefore: e.clk.Now().Add(time.Minute)})
	e.must(bob, Allocate{Settlement: ref, LegID: "b", Side: SideReceive, Instrument: "USDCx", Amount: d("100.25"), SettleBefore: e.clk.Now().Add(time.Hour)})
	e.must(e.res, Transfer{Receiver: bob, Instrument: "Amulet", Amount: d("3"), ExecuteBefore: e.clk.Now().Add(time.Hour), Reason: "faucet"})
	for i := 0; i < 6; i++ { // prepared and never executed: they expire into tombstones
		if _, err := e.prepare(alice, Transfer{Receiver: bob, Instrument: "USDCx", Amount: d("1")}, fmt.Sprintf("never-%d", i)); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(3 * time.Minute)
	}
	if _, err := e.prepare(bob, WithdrawTransfer{Instruction: "00ff"}, "bad"); err == nil {
		t.Fatal("want an error")
	}
	if _, err := e.prepare(alice, Settle{Settlement: SettlementRef{Executor: alice, ID: "x"}, Legs: []Leg{{Sender: alice, Receiver: bob, Instrument: "USDCx", Amount: d("1")}}, Allocations: []string{"00aa"}}, "settle-x"); err == nil {
		t.Fatal("want an error")
	}
	p, err := e.prepare(bob, Allocate{Settlement: ref, LegID: "c", Side: SideSend, Instrument: "CBTC", Amount: d("0.5"), SettleBefore: e.clk.Now().Add(time.Hour)}, "live-prep")
	if err != nil {
		t.Fatal(err)
	}
	e.livePrep, e.liveBlob = p.ID, p.Blob
	if _, err := e.l.OnboardExternal("carol", testKey("carol").Public().(ed25519.PublicKey)); err != nil {
		t.Fatal(err)
	}
	if err := e.l.Delist("CBTC"); err != nil {
		t.Fatal(err)
	}
	e.check()
	return e
}

// TestSnapshotDeterministic: the same state gives the same bytes — twice from one
// ledger, from two ledgers built alike (with their own map orders), and after a round
// trip through Restore; the bytes of the scenario are pinned by their SHA-256
// (testdata/snapshot.sha256, rewritten with -update).
func TestSnapshotDeterministic(t *testing.T) {
	a, b := snapshotScenario(t), snapshotScenario(t)
	sa := snapshotOf(t, a.l)
	for i := 0; i < 3; i++ {
		again, _ := a.l.Snapshot()
		if !bytes.Equal(again, sa) {
			t.Fatal("two snapshots of one state differ")
		}
	}
	if sb, _ := b.l.Snapshot(); !bytes.Equal(sa, sb) {
		t.Fatal("snapshots of two ledgers in the same state differ")
	}
	cfg := a.l.Config()
	cfg.Recorder = nil
	r, err := Restore(cfg, sa)
	if err != nil {
		t.Fatal(err)
	}
	if sr, _ := r.Snapshot(); !bytes.Equal(sa, sr) {
		t.Fatal("the snapshot of a restored ledger differs")
	}
	if r.Digest() != a.l.Digest() {
		t.Fatal("restored digest differs")
	}
	if err := r.CheckInvariants(); err != nil {
		t.Fatal(err)
	}

	sum := sha256.Sum256(sa)
	got := hex.EncodeToString(sum[:]) + "\n"
	path := filepath.Join("testdata", "snapshot.sha256")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got != string(want) {
		t.Fatalf("the snapshot encoding changed (bump SnapshotVersion, document it in ENCODING.md and rerun with -update): sha256 %s, pinned %s", got, want)
	}
}

// TestSnapshotContinues: a restored ledger keeps working live: the prepared
// transaction taken before the snapshot executes, expiries fire, and it records what
// the original records for the same calls.
func TestSnapshotContinues(t *testing.T) {
	e := snapshotScenario(t)
	snap := snapshotOf(t, e.l)
	var recorded []Input
	cfg := e.l.Config()
	cfg.Recorder = func(in Input) { recorded = append(recorded, in) }
	r, err := Restore(cfg, snap)
	if err != nil {
		t.Fatal(err)
	}
	before := len(e.inputs)
	prep, err := e.l.PreparedTransaction(e.livePrep)
	if err != nil {
		t.Fatal(err)
	}
	sig := ed25519.Sign(e.keys[prep.ActAs], prep.Hash[:])
	for _, l := range []*Ledger{e.l, r} {
		if _, err := l.Execute(e.liveBlob, sig); err != nil {
			t.Fatal(err)
		}
	}
	e.clk.Advance(2 * time.Hour) // the allocation's lock and the instruction lapse
	for _, l := range []*Ledger{e.l, r} {
		if _, err := l.Submit(e.house, CreatePreapproval{}, "after"); err != nil {
			t.Fatal(err)
		}
		if err := l.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(e.inputs[before:], recorded); diff != "" {
		t.Fatalf("recorded inputs differ (-original +restored):\n%s", diff)
	}
	if e.l.Digest() != r.Digest() {
		t.Fatal("digests differ")
	}
	a, _ := e.l.Snapshot()
	b, _ := r.Snapshot()
	if !bytes.Equal(a, b) {
		t.Fatal("snapshots differ")
	}
}

// TestRestoreRefuses: another genesis, another version, damage and truncation are
// refused with ErrSnapshot, and never panic.
func TestRestoreRefuses(t *testing.T) {
	e := snapshotScenario(t)
	snap := snapshotOf(t, e.l)
	base := e.l.Config()
	base.Recorder = nil
	tests := []struct {
		name   string
		change func(c *Config, s []byte) []byte
		want   string
	}{
		{"seed", func(c *Config, s []byte) []byte { c.Seed++; return s }, "seed differ"},
		{"profile", func(c *Config, s []byte) []byte { c.Profile = ProfileMainnet; return s }, "profile differ"},
		{"ledger id", func(c *Config, s []byte) []byte { c.LedgerID = "other"; return s }, "ledger id differ"},
		{"instrument", func(c *Config, s []byte) []byte {
			c.Instruments = append([]InstrumentSpec(nil), c.Instruments...)
			c.Instruments[1].Decimals++
			return s
		}, "instruments differ"},
		{"funding", func(c *Config, s []byte) []byte {
			c.Parties = append([]GenesisParty(nil), c.Parties...)
			c.Parties[3].Funding = append([]Funding(nil), c.Parties[3].Funding...)
			c.Parties[3].Funding[0].Amount = d("50000.5")
			return s
		}, "parties differ"},
		{"lifetimes", func(c *Config, s []byte) []byte {
			c.PreparedLifetime, c.DedupWindow = time.Hour, 0 // a window the longer lifetime allows
			return s
		}, "prepared lifetime differ"},
		{"version", func(c *Config, s []byte) []byte {
			s = bytes.Clone(s)
			s[len(snapshotMagic)]++
			return s
		}, fmt.Sprintf("snapshot version %d, this build reads only version %d", SnapshotVersion+1, SnapshotVersion)},
		{"not a snapshot", func(c *Config, s []byte) []byte { return []byte("{}") }, "not a ledger snapshot"},
		{"trailing bytes", func(c *Config, s []byte) []byte { return append(bytes.Clone(s), 0) }, "after the end"},
		{"digest", func(c *Config, s []byte) []byte {
			s = bytes.Clone(s)
			was, _ := d("100.25").AppendBinary(nil)
			now, _ := d("100.27").AppendBinary(nil)
			i := bytes.Index(s, was)
			return append(append(append([]byte(nil), s[:i]...), now...), s[i+len(was):]...) // an allocation of 100.27
		}, "digest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			s := tc.change(&cfg, snap)
			_, err := Restore(cfg, s)
			if !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrSnapshot mentioning %q", err, tc.want)
			}
		})
	}
	t.Run("every truncation", func(t *testing.T) {
		for n := 0; n < len(snap); n++ {
			if _, err := Restore(base, snap[:n]); !errors.Is(err, ErrSnapshot) {
				t.Fatalf("truncated to %d of %d bytes: %v", n, len(snap), err)
			}
		}
	})
	t.Run("flipped bytes", func(t *testing.T) {
		for i := 0; i < len(snap); i++ {
			s := bytes.Clone(snap)
			s[i] ^= 0x5a
			// A flip may pass where the byte is outside the digest (the ledger's time, a
			// heap entry, a tombstone): the journal's checksums guard those.
			if l, err := Restore(base, s); err == nil {
				_ = l.CheckInvariants()
			} else if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("flip at %d: %v", i, err)
			}
		}
	})
}

// FuzzRestore: Restore never panics, whatever the bytes.
func FuzzRestore(f *testing.F) {
	e := snapshotScenario(f)
	snap := snapshotOf(f, e.l)
	cfg := e.l.Config()
	cfg.Recorder = nil
	f.Add(snap)
	f.Fuzz(func(t *testing.T, b []byte) {
		if l, err := Restore(cfg, b); err == nil {
			if _, err := l.Snapshot(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// bigLedger builds a ledger holding about holdings free holdings spread over 50
// internal parties (a faucet transfer and its acceptance each), with the default bound of
// retained updates full. It returns the ledger, its configuration and its inputs.
func bigLedger(b *testing.B, holdings int) (*Ledger, Config, []Input) {
	clk := NewManualClock(t0)
	cfg := testConfig(ProfileTestnet, clk)
	var inputs []Input
	cfg.Recorder = func(in Input) { inputs = append(inputs, in) }
	l, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	res, _ := l.InternalParty("reservoir")
	var parties []string
	for i := 0; i < 50; i++ {
		id, err := l.AllocateInternal(fmt.Sprintf("holder-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		parties = append(parties, id)
	}
	amounts := []string{"0.5", "1", "1.25", "2", "3.0000000001"}
	for i := 0; i < holdings; i++ {
		to := parties[i%len(parties)]
		tr := Transfer{Receiver: to, Instrument: "USDCx", Amount: d(amounts[i%len(amounts)])}
		if i%2 == 1 {
			tr.Instrument, tr.Amount = "CBTC", d("0.0001") // the native coin would need preapprovals
		}
		u, err := l.Submit(res, named(l, res, tr), fmt.Sprintf("t%d", i))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Submit(to, AcceptTransfer{Instruction: u.TransferInstruction}, fmt.Sprintf("a%d", i)); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 0 {
			clk.Advance(time.Second)
		}
	}
	cfg.Recorder = nil
	return l, cfg, inputs
}

// BenchmarkSnapshotRestore takes a snapshot of a ledger of about 100k holdings and 100k
// retained updates and restores it. The baseline, measured once in the same run, is what
// a snapshot saves: replaying from genesis the inputs that built the ledger;
// restore/replay is the ratio of the two.
func BenchmarkSnapshotRestore(b *testing.B) {
	l, cfg, inputs := bigLedger(b, 100_000)
	start := time.Now()
	full, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range inputs {
		if err := full.Replay(in); err != nil {
			b.Fatal(err)
		}
	}
	replay := time.Since(start)
	if full.Digest() != l.Digest() {
		b.Fatal("replay diverged")
	}
	nInputs := len(inputs)
	full, inputs = nil, nil // a restarting process holds neither
	runtime.GC()
	var size int
	var snapT, restoreT time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t1 := time.Now()
		snap := snapshotOf(b, l)
		t2 := time.Now()
		r, err := Restore(cfg, snap)
		if err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		snapT += t2.Sub(t1)
		restoreT += t3.Sub(t2)
		size = len(snap)
		if r.Digest() != l.Digest() {
			b.Fatal("restored digest differs")
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(size)/1e6, "MB")
	b.ReportMetric(float64(snapT.Milliseconds())/n, "snapshot-ms/op")
	b.ReportMetric(float64(restoreT.Milliseconds())/n, "restore-ms/op")
	b.ReportMetric(float64(replay.Milliseconds()), "replay-ms")
	b.ReportMetric((float64(snapT+restoreT)/n)/float64(replay), "restore/replay")
	b.ReportMetric(float64(nInputs), "inputs")
}
