package loop_test

import (
	"context"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
)

// TestCheckpointIntervalStretchesWithState: with CheckpointBytesPerInput the interval
// between checkpoints is at least the state's size over it; without, it is exactly
// CheckpointEvery. After the first, checkpoints are a mark and its follower's digest,
// which comes back asynchronously: the test waits for each before the next input.
func TestCheckpointIntervalStretchesWithState(t *testing.T) {
	const inputs = 40
	// run returns the checkpoints taken and the other inputs applied meanwhile.
	run := func(bytesPerInput func(stateBytes int) int) (checkpoints, others uint64) {
		var stateBytes int
		d := startDeskWith(t, drive.Catalog("1", "1000"), 10, drive.NewEvents(), func(c *loop.Config) {
			st, err := c.Desk.EncodeSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			stateBytes = len(st)
			c.CheckpointEvery, c.CheckpointBytesPerInput = 1, bytesPerInput(stateBytes)
			// A clock that does not move: no deadline falls due, so no Tick (and no mark
			// after it) lands between the counters' reads.
			c.Clock = ledgersim.NewManualClock(time.Now())
		})
		p := d.Register("maker")
		st := d.loop.Stats()
		// settle reads, so that the loop has taken the mark that may follow the last input
		// (a read is answered by the loop's goroutine after everything before it), waits
		// for the mark's digest, and reads the counters. An input may still come of itself
		// (a late ledger result of the registration) and take a mark between those reads:
		// settle starts over until a read after the counters finds them unchanged.
		read := func() {
			if _, err := d.loop.Read(context.Background(), p.KeyHash(), machine.QConfig{}); err != nil {
				t.Fatal(err)
			}
		}
		settle := func() (uint64, uint64) {
			deadline := time.Now().Add(10 * time.Second)
			for {
				read()
				for st.MarkPending.Load() != 0 {
					if time.Now().After(deadline) {
						t.Fatal("the follower never answered the checkpoint mark")
					}
					time.Sleep(100 * time.Microsecond)
				}
				read()
				cp, in := st.Checkpoints.Load(), st.Inputs.Load()
				read()
				if st.MarkPending.Load() == 0 && st.Checkpoints.Load() == cp && st.Inputs.Load() == in {
					return cp, in
				}
			}
		}
		cp0, in0 := settle()
		for i := range inputs / 2 {
			if err := d.loop.OpenSocket(context.Background(), uint64(i+1), p.KeyHash(), false); err != nil {
				t.Fatal(err)
			}
			settle()
			if err := d.loop.CloseSocket(context.Background(), uint64(i+1)); err != nil {
				t.Fatal(err)
			}
			settle()
		}
		cp1, in1 := settle()
		if f := st.FollowerFailures.Load(); f != 0 {
			t.Fatalf("%d follower failures", f)
		}
		// Each checkpoint after the first journals two records (mark, digest).
		return cp1 - cp0, (in1 - in0) - 2*(cp1-cp0)
	}
	if cp, others := run(func(int) int { return 0 }); others < inputs || cp+1 < others || cp > others {
		t.Errorf("fixed interval 1: %d checkpoints over %d inputs, want one after each", cp, others)
	}
	// The state only grows, so every interval is at least 8 inputs.
	if cp, others := run(func(size int) int { return size / 8 }); others < inputs || cp < 2 || cp > others/8+2 {
		t.Errorf("stretched to 8 inputs or more: %d checkpoints over %d inputs, want 2 to %d", cp, others, others/8+2)
	}
}
