package node

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
)

// TestStandbyVerifiesCheckpoints: a standby digests its desk at a checkpoint mark and
// compares it with the leader's digest when that comes, and checks an inline checkpoint
// at once; a mark whose digest names another mark, or a digest of a mark it never met,
// is not judged; a differing digest counts as a mismatch and the standby goes on.
func TestStandbyVerifiesCheckpoints(t *testing.T) {
	s := &Standby{desk: newTestDesk(t, testDeskConfig())}
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	defer s.endCheckpoint()
	digest := func() string {
		d, err := s.desk.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(d[:])
	}
	apply := func(seq uint64, in machine.Input) {
		t.Helper()
		if err := s.verifyCheckpoint(seq, in); err != nil {
			t.Fatal(err)
		}
		// Each input a second later: the desk's clock is part of its state.
		machine.ApplyQuiet(s.desk, machine.Envelope{Seq: seq, At: start.Add(time.Duration(seq) * time.Second), Input: in})
	}
	want := func(verified, mismatched int) {
		t.Helper()
		if v, m := s.Checkpoints(); v != verified || m != mismatched {
			t.Fatalf("checkpoints verified %d, mismatched %d; want %d, %d", v, m, verified, mismatched)
		}
	}

	// A mark, inputs after it, then the leader's digest of the state before the mark.
	before := digest()
	apply(2, machine.CheckpointMark{})
	apply(3, machine.Tick{})
	apply(4, machine.CheckpointDigest{Mark: 2, Digest: before})
	want(1, 0)

	// A digest naming a mark this standby never met (before the state it started from).
	apply(5, machine.CheckpointDigest{Mark: 1, Digest: "00"})
	want(1, 0)

	// The leader's digest differs: a mismatch, and the standby applies on.
	apply(6, machine.CheckpointMark{})
	apply(7, machine.CheckpointDigest{Mark: 6, Digest: before})
	want(1, 1)

	// An inline checkpoint carries its digest.
	apply(8, machine.Checkpoint{Digest: digest()})
	want(2, 1)
	apply(9, machine.Checkpoint{Digest: "ff"})
	want(2, 2)
}

// TestStandbyRebuildKeepsVerdicts: a rebuild of the desk from the newest snapshot (after
// the leader pruned what the standby needed next) keeps the checkpoint verdicts met
// before it, so a mismatch is not forgotten by the take over.
func TestStandbyRebuildKeepsVerdicts(t *testing.T) {
	cfg := testDeskConfig()
	rec, err := json.Marshal(genesisRecord{Kind: "desk-genesis", Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	m := journal.NewMemLog(true)
	if _, err := m.Append(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	s := &Standby{deskLog: m.Handle(), deskRec: Recovery{Checkpoints: 3, DigestMismatch: 1}}
	defer s.endCheckpoint()
	if err := s.buildDesk(); err != nil {
		t.Fatal(err)
	}
	if v, mm := s.Checkpoints(); v != 3 || mm != 1 {
		t.Fatalf("after a rebuild: %d verified, %d mismatched; want 3, 1", v, mm)
	}
}

// TestStandbyWarmDeskAfterAPrune: a take over whose standby had not read records the
// leader pruned since (it wrote on until the take over fenced it) recovers the desk from
// the journals instead of failing the start.
func TestStandbyWarmDeskAfterAPrune(t *testing.T) {
	m := journal.NewMemLog(true)
	for i := range 6 {
		if _, err := m.Append(context.Background(), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := uint64(2); seq <= 5; seq++ {
		if err := m.SaveSnapshot(seq, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Prune(); err != nil {
		t.Fatal(err)
	}
	if m.FirstSeq() <= 2 {
		t.Fatalf("the log still starts at %d: nothing pruned", m.FirstSeq())
	}
	s := &Standby{deskLog: m.Handle(), desk: newTestDesk(t, testDeskConfig()), deskSeq: 1}
	desk, _, err := s.warmDesk()
	if err != nil || desk != nil {
		t.Fatalf("warmDesk after a prune: desk %v, err %v; want no desk and no error (recover from the journals)", desk != nil, err)
	}
}
