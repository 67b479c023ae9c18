package transport

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// TestStreamLiveFramesCoalesced: live frames queued together for one socket arrive whole
// and in order, every length form of the frame header and a run larger than one write
// included, and go out in far fewer writes than frames; a close queued behind them (a
// frame that cannot join a write) still comes after the last of them.
//
// Deliver enqueues all 200 frames under the hub's lock while the writer writes (a system
// call each), so the writer finds most of them queued: one write a frame (the writer
// before coalescing) gives 200 writes; the bound of 100 leaves room for the writer to
// take the first few alone.
func TestStreamLiveFramesCoalesced(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, nil)
	c, id := connect(t, ts, opened, "alice", nil)
	before := srv.Metrics()
	var events []machine.Event
	var want []string
	sizes := []int{0, 100, 125, 126, 1000, 65535, 65536, 70000}
	for i := range 200 {
		payload := json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
		if i < len(sizes) {
			payload = json.RawMessage(`{"x":"` + strings.Repeat("a", sizes[i]) + `"}`)
		}
		events = append(events, machine.Event{Party: "alice", Type: machine.EvRfqClosed, Payload: payload, Seq: uint64(i + 1)})
		want = append(want, fmt.Sprintf(`{"type":"rfq.closed","payload":%s,"seq":%d}`, payload, i+1))
	}
	srv.Hub().Deliver(machine.Outputs{Events: events, Closes: []machine.SocketClose{{Socket: id, Code: machine.CloseUnauthorized, Reason: "key rotated"}}})
	wantFrames(t, c, want)
	if ci := c.closeCode(t); ci.code != machine.CloseUnauthorized {
		t.Fatalf("close %d %q after the frames, want 4401", ci.code, ci.reason)
	}
	after := srv.Metrics()
	frames, writes := after.FramesSent-before.FramesSent, after.StreamWrites-before.StreamWrites
	if frames != 200 {
		t.Errorf("%d frames counted, want 200", frames)
	}
	if writes == 0 || writes > 100 {
		t.Errorf("200 queued frames took %d writes, want 1 to 100", writes)
	}
	t.Logf("200 frames in %d writes", writes)
}

// TestStreamSingleFrameUnchanged: a frame alone in its queue is written as before, one
// frame one write, and its bytes arrive as sent.
func TestStreamSingleFrameUnchanged(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, nil)
	c, _ := connect(t, ts, opened, "alice", nil)
	// The counters move just after a write returns, so possibly after the frame arrived.
	settled := func(done func(MetricsSnapshot) bool) MetricsSnapshot {
		t.Helper()
		deadline := time.Now().Add(wait)
		m := srv.Metrics()
		for !done(m) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			m = srv.Metrics()
		}
		return m
	}
	before := settled(func(m MetricsSnapshot) bool { return m.StreamWrites >= 1 }) // the snapshot's
	for i := range 5 {
		srv.Hub().Deliver(machine.Outputs{Events: []machine.Event{event("alice", machine.EvRfqExpired, fmt.Sprint("r", i))}})
		if f := c.next(t); f.Type != machine.EvRfqExpired {
			t.Fatalf("frame %+v", f)
		}
		after := settled(func(m MetricsSnapshot) bool {
			return m.FramesSent > before.FramesSent && m.StreamWrites > before.StreamWrites
		})
		if after.FramesSent-before.FramesSent != 1 || after.StreamWrites-before.StreamWrites != 1 {
			t.Fatalf("one frame: %d frames in %d writes, want 1 in 1", after.FramesSent-before.FramesSent, after.StreamWrites-before.StreamWrites)
		}
		before = after
	}
}

// wantFrames reads len(want) frames from c, failing the test at the first that differs
// from its want or does not arrive in time.
func wantFrames(t *testing.T, c *wsClient, want []string) {
	t.Helper()
	for i, w := range want {
		select {
		case f := <-c.frames:
			if string(f) != w {
				t.Fatalf("frame %d: %d bytes, want %d", i, len(f), len(w))
			}
		case <-time.After(wait):
			t.Fatalf("frame %d never arrived", i)
		}
	}
}
