package node_test

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// TestReplayCheckpointMarks: a replay digests its state at each CheckpointMark and compares
// it when the mark's CheckpointDigest comes, a few records later; a mark whose digest never
// came (the desk stopped first) verifies nothing, nor does a digest whose mark lies before
// the snapshot the replay started from. With a callback or without, from genesis or from a
// snapshot, the counts and the verdicts on the steps agree.
func TestReplayCheckpointMarks(t *testing.T) {
	cfg := journalTestConfig()
	const key = houseKey
	shadow, err := machine.NewDesk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	genesis, err := node.EncodeDeskGenesis(cfg)
	if err != nil {
		t.Fatal(err)
	}
	recs := [][]byte{genesis}
	snapshots := map[uint64][]byte{} // the shadow's state after each input
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	add := func(in machine.Input) uint64 {
		at = at.Add(700 * time.Millisecond)
		env := machine.Envelope{Seq: uint64(len(recs) + 1), At: at, Input: in}
		rec, err := machine.EncodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		machine.Apply(shadow, env)
		if snapshots[env.Seq], err = shadow.EncodeSnapshot(); err != nil {
			t.Fatal(err)
		}
		return env.Seq
	}
	digest := func() string {
		sum, err := shadow.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(sum[:])
	}
	var n int
	input := func() {
		n++
		switch n % 4 {
		case 0:
			add(machine.SocketOpened{Socket: uint64(n), KeyHash: key})
		case 1:
			add(machine.FaucetDraw{Req: machine.Req{KeyHash: key}})
		case 2:
			add(machine.CreateRFQ{Req: machine.Req{KeyHash: key}, Direction: machine.Buy, Qty: money.MustParse("0.5"),
				Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{"nobody"}, TTLSeconds: 30})
		default:
			add(machine.Tick{})
		}
	}
	// mark journals a mark and, after the given number of inputs, its digest (a wrong one
	// if bad); a negative delay journals no digest, as when the desk stopped first.
	mark := func(delay int, bad bool) (markSeq, digestSeq uint64) {
		want := digest()
		if bad {
			want = strings.Repeat("0", 64)
		}
		markSeq = add(machine.CheckpointMark{})
		if delay < 0 {
			return markSeq, 0
		}
		for range delay {
			input()
		}
		return markSeq, add(machine.CheckpointDigest{Mark: markSeq, Digest: want})
	}
	input()
	input()
	m1, d1 := mark(2, false)
	input()
	m2, d2 := mark(0, true)
	input()
	mark(-1, false) // never answered
	input()
	_, d4 := mark(3, false) // the next mark collects the unanswered one's digest first
	input()
	log := journal.NewMemLog(true)
	if _, err := log.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	want := digest()

	for _, tc := range []struct {
		name       string
		snapshot   uint64 // 0: from genesis
		verified   []uint64
		mismatched []uint64
	}{
		{"from genesis", 0, []uint64{d1, d4}, []uint64{d2}},
		{"from a snapshot between a mark and its digest", m1, []uint64{d4}, []uint64{d2}},
		{"from the snapshot just before a mark", m2 - 1, []uint64{d4}, []uint64{d2}},
	} {
		for _, withSteps := range []bool{true, false} {
			log := log
			if tc.snapshot > 0 {
				log = journal.NewMemLog(true)
				if _, err := log.Append(context.Background(), recs...); err != nil {
					t.Fatal(err)
				}
				if err := log.SaveSnapshot(tc.snapshot, snapshots[tc.snapshot]); err != nil {
					t.Fatal(err)
				}
			}
			var verified, mismatched []uint64
			var each func(node.Step) bool
			if withSteps {
				each = func(s node.Step) bool {
					if s.Checkpoint && s.Verified {
						verified = append(verified, s.Seq)
					} else if s.Checkpoint {
						mismatched = append(mismatched, s.Seq)
					}
					return true
				}
			}
			desk, rec, err := node.ReplayDesk(log, tc.snapshot > 0, each)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := desk.Digest(); hex.EncodeToString(got[:]) != want {
				t.Errorf("%s: the replayed desk differs from the journaled one", tc.name)
			}
			if rec.Checkpoints != len(tc.verified) || rec.DigestMismatch != len(tc.mismatched) || rec.SnapshotSeq != tc.snapshot {
				t.Errorf("%s (steps %v): %+v, want %d verified and %d mismatched", tc.name, withSteps, rec, len(tc.verified), len(tc.mismatched))
			}
			if withSteps && (!slices.Equal(verified, tc.verified) || !slices.Equal(mismatched, tc.mismatched)) {
				t.Errorf("%s: steps verified %v and mismatched %v, want %v and %v", tc.name, verified, mismatched, tc.verified, tc.mismatched)
			}
		}
	}
}
