package node_test

import (
	"testing"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// TestRestartsStillSnapshot restarts a desk many times with fewer inputs each time than
// the checkpoint interval (issue 18, F3: a crash-looping desk). The checkpoint schedule
// counts from the snapshot on disk, not from each start, so the desk still snapshots and
// the records a start replays stay bounded by about one interval, however many restarts.
func TestRestartsStillSnapshot(t *testing.T) {
	const rounds, perRound = 30, 3 // each start adds a Boot too
	dir := t.TempDir()
	var longest uint64
	var snapshotted bool
	for i := range rounds {
		opts := options(dir, drive.NewEvents())
		n, err := node.Open(opts)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if i > 0 {
			longest = max(longest, n.Recovered.DeskInputs)
			snapshotted = snapshotted || n.Recovered.SnapshotSeq > 0
		}
		d := drive.Driver{T: t, Desk: n.Loop}
		for range perRound {
			// A refused command is an input all the same: journaled, then applied.
			if rep := d.Do(machine.FaucetDraw{Req: machine.Req{KeyHash: drive.HashKey("mk_nobody")}}); rep.Status != 401 {
				t.Fatalf("round %d: status %d, want 401", i, rep.Status)
			}
		}
		closeNode(t, n)
	}
	interval := uint64(options(dir, nil).CheckpointEvery)
	// A checkpoint is due after interval inputs; the start that finds it due takes it at
	// once, so the journal holds at most about an interval and a round's inputs after the
	// snapshot (a checkpoint record included).
	if bound := interval + perRound + 3; longest > bound {
		t.Errorf("a start replayed %d records, want at most %d (checkpoint every %d, %d restarts)", longest, bound, interval, rounds)
	}
	if !snapshotted {
		t.Error("no start found a snapshot")
	}
}
