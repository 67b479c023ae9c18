package transport

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// TestStreamSinceReachesDesk: ?since=N opens the socket through ResumeSocket with N; no
// since opens it through OpenSocket, as before.
func TestStreamSinceReachesDesk(t *testing.T) {
	for _, tc := range []struct {
		query  string
		resume bool
		since  uint64
	}{{"", false, 0}, {"?since=0", true, 0}, {"?since=42&cancelOnDisconnect=true", true, 42}, {"?since=18446744073709551615", true, 1<<64 - 1}} {
		got := openedWithQuery(t, tc.query)
		if got.resume != tc.resume || got.since != tc.since {
			t.Errorf("%q: the desk got resume %v since %d, want %v %d", tc.query, got.resume, got.since, tc.resume, tc.since)
		}
	}
}

// TestStreamSinceBadValue: a since that is not one plain non-negative decimal integer
// within uint64 is 400 at the upgrade, with an error naming the parameter; no socket opens
// and the desk hears nothing.
func TestStreamSinceBadValue(t *testing.T) {
	refusesStreamQueries(t, "since", []string{"since=", "since", "since=-1", "since=%2B1", "since=01", "since=00", "since=1.0", "since=1e3",
		"since=%201", "since=abc", "since=0x10", "since=18446744073709551616", "since=99999999999999999999",
		"since=123456789012345678901", "since=1&since=1", "since=%EF%BC%91"})
}

// TestStreamFrameCarriesSeq: a numbered event's frame is {type, payload, seq}; a frame
// without a number (the snapshot's) has no seq field.
func TestStreamFrameCarriesSeq(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, nil)
	c, _ := connect(t, ts, opened, "alice", nil)
	srv.Hub().Deliver(machine.Outputs{Events: []machine.Event{
		{Party: "alice", Type: machine.EvRfqExpired, Payload: machine.RfqIDPayload{RfqID: "r1"}, Seq: 7},
		{Party: "alice", Type: machine.EvRfqExpired, Payload: json.RawMessage(`{"rfqId":"r2"}`), Seq: 8},
	}})
	for _, want := range []string{`{"type":"rfq.expired","payload":{"rfqId":"r1"},"seq":7}`, `{"type":"rfq.expired","payload":{"rfqId":"r2"},"seq":8}`} {
		select {
		case f := <-c.frames:
			if string(f) != want {
				t.Fatalf("frame %s, want %s", f, want)
			}
		case <-time.After(wait):
			t.Fatal("no frame")
		}
	}
}

// TestStreamBatchFrames: the frames addressed to one socket (a connect's answer) are
// written coalesced, as hand-built WebSocket frames; every length form of the frame header
// (7-bit, 16-bit, 64-bit) and a batch larger than one write arrive whole and in order, and
// a batch far larger than the socket's send queue is one entry of it (no slow-consumer
// close).
func TestStreamBatchFrames(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, func(o *Options) { o.SendQueue = 4 })
	c, id := connect(t, ts, opened, "alice", nil)
	var events []machine.Event
	var want []string
	for i, n := range []int{0, 100, 125, 126, 1000, 65535, 65536, 200000} {
		payload := json.RawMessage(`{"x":"` + strings.Repeat("a", n) + `"}`)
		events = append(events, machine.Event{Party: "alice", Socket: id, Type: machine.EvRfqCreated, Payload: payload, Seq: uint64(i + 1)})
		want = append(want, fmt.Sprintf(`{"type":"rfq.created","payload":%s,"seq":%d}`, payload, i+1))
	}
	for i := range 300 { // many small frames: several writes, one queue entry
		payload := json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
		events = append(events, machine.Event{Party: "alice", Socket: id, Type: machine.EvRfqClosed, Payload: payload, Seq: uint64(100 + i)})
		want = append(want, fmt.Sprintf(`{"type":"rfq.closed","payload":%s,"seq":%d}`, payload, 100+i))
	}
	srv.Hub().Deliver(machine.Outputs{Events: events})
	wantFrames(t, c, want)
}
