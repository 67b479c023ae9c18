package loop_test

import (
	"context"
	"testing"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
)

// TestCheckpointIntervalStretchesWithState: with CheckpointBytesPerInput the interval
// between checkpoints is at least the state's size over it; without, it is exactly
// CheckpointEvery.
func TestCheckpointIntervalStretchesWithState(t *testing.T) {
	const inputs = 40
	// run returns the checkpoints taken and the other inputs applied meanwhile (ticks
	// and late ledger results may come on top of the socket changes, and one of them may
	// be mid-way, its checkpoint counted and not yet applied, when the counters are read:
	// hence the tolerance of one).
	run := func(bytesPerInput func(stateBytes int) int) (checkpoints, others uint64) {
		var stateBytes int
		d := startDeskWith(t, catalog("1", "1000"), 10, drive.NewEvents(), func(c *loop.Config) {
			st, err := c.Desk.EncodeSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			stateBytes = len(st)
			c.CheckpointEvery, c.CheckpointBytesPerInput = 1, bytesPerInput(stateBytes)
		})
		p := d.Register("maker")
		// A read is answered by the loop's goroutine after everything before it, the
		// checkpoint that may follow an input included.
		settle := func() (uint64, uint64) {
			if _, err := d.loop.Read(context.Background(), p.KeyHash(), machine.QConfig{}); err != nil {
				t.Fatal(err)
			}
			st := d.loop.Stats()
			return st.Checkpoints.Load(), st.Inputs.Load()
		}
		cp0, in0 := settle()
		for i := range inputs / 2 {
			if err := d.loop.OpenSocket(context.Background(), uint64(i+1), p.KeyHash()); err != nil {
				t.Fatal(err)
			}
			if err := d.loop.CloseSocket(context.Background(), uint64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		cp1, in1 := settle()
		return cp1 - cp0, (in1 - in0) - (cp1 - cp0)
	}
	if cp, others := run(func(int) int { return 0 }); others < inputs || cp < others || cp > others+1 {
		t.Errorf("fixed interval 1: %d checkpoints over %d inputs, want one after each", cp, others)
	}
	// The state only grows, so every interval is at least 8 inputs.
	if cp, others := run(func(size int) int { return size / 8 }); others < inputs || cp < 2 || cp > others/8+2 {
		t.Errorf("stretched to 8 inputs or more: %d checkpoints over %d inputs, want 2 to %d", cp, others, others/8+2)
	}
}
