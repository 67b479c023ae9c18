package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// TestReplayMatchesEveryCheckpoint records lifecycles with a checkpoint due every 5 inputs
// (digests of the state the live desk built with machine.Apply) and replays the journal
// (machine.ApplyQuiet, digests hashed on the digester): every checkpoint must verify, with
// and without a step callback, and both replays must end in the same state.
func TestReplayMatchesEveryCheckpoint(t *testing.T) {
	dir := t.TempDir()
	n, s, d := openSettling(t, options(dir, nil))
	pair := d.Pairs(1, n.Loop)[0]
	m, tk := pair[0], pair[1]
	// How many checkpoints the desk takes depends on how fast its follower answers each
	// mark (the loop takes no new mark while one is outstanding): lifecycles go on until it
	// took a few, at least four lifecycles and at most forty.
	for i := 0; i < 4 || (n.Loop.Stats().Checkpoints.Load() < 5 && i < 40); i++ {
		dir := machine.Sell
		if i%2 == 1 {
			dir = machine.Buy
		}
		if err := lifecycle(n, s, m, tk, dir); err != nil {
			t.Fatal(fmt.Errorf("lifecycle %d: %w", i, err))
		}
	}
	closeWithin(t, n, 30*time.Second)
	log := deskJournal(t, dir)
	defer log.Close()
	// Every checkpoint must verify, and there must be a few.
	var digests [2][32]byte
	seen := 0
	for i, each := range []func(node.Step) bool{nil, func(st node.Step) bool {
		if st.Checkpoint {
			seen++
			if !st.Verified {
				t.Errorf("checkpoint at %d did not verify", st.Seq)
			}
		}
		return true
	}} {
		desk, rec, err := node.ReplayDesk(log, false, each)
		if err != nil {
			t.Fatal(err)
		}
		if rec.DigestMismatch != 0 || rec.Checkpoints < 4 {
			t.Fatalf("replay %d: %+v, want at least 4 checkpoints and no mismatch", i, rec)
		}
		if i == 1 && seen != rec.Checkpoints {
			t.Fatalf("the step callback saw %d checkpoints, the replay counted %d", seen, rec.Checkpoints)
		}
		if digests[i], err = desk.Digest(); err != nil {
			t.Fatal(err)
		}
	}
	if digests[0] != digests[1] {
		t.Fatal("the two replays ended in different states")
	}
}
