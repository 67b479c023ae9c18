package client

import (
	"encoding/json"
	"testing"
)

// TestResumePoint: the point is unknown until snapshot.end or stream.resumed says where
// the numbering stands; numbered events move it; a gap forgets it; an event at or below
// the last one delivered is dropped once the point is known.
func TestResumePoint(t *testing.T) {
	var r resumePoint
	ev := func(typ string, seq uint64, payload any) Event {
		b, _ := json.Marshal(payload)
		return Event{Type: typ, Payload: b, Seq: seq}
	}
	steps := []struct {
		ev      Event
		deliver bool
		since   string
	}{
		{ev(EventRFQCreated, 0, RFQ{}), true, ""}, // a snapshot frame
		{ev(EventSnapshotEnd, 0, SnapshotEnd{Seq: 4}), true, "4"},
		{ev(EventRFQClosed, 5, RFQRef{}), true, "5"},
		{ev(EventRFQClosed, 5, RFQRef{}), false, "5"}, // already delivered
		{ev(EventRFQClosed, 3, RFQRef{}), false, "5"},
		{ev(EventRFQClosed, 6, RFQRef{}), true, "6"},
		{ev(EventStreamResumed, 0, StreamResumed{From: 7, To: 9}), true, "9"},
		{ev(EventStreamGap, 0, StreamGap{Since: 9, Oldest: 20}), true, ""},
		{ev(EventRFQCreated, 0, RFQ{}), true, ""},
		{ev(EventSnapshotEnd, 0, SnapshotEnd{Seq: 30}), true, "30"},
	}
	for i, s := range steps {
		if got := r.track(s.ev); got != s.deliver {
			t.Fatalf("step %d (%s %d): deliver %v, want %v", i, s.ev.Type, s.ev.Seq, got, s.deliver)
		}
		if got := r.since(); got != s.since {
			t.Fatalf("step %d: since %q, want %q", i, got, s.since)
		}
	}
}

// TestStreamURLWithSince: since is appended to a URL with or without a query.
func TestStreamURLWithSince(t *testing.T) {
	if got := withQuery("ws://h/maker/stream", "since=3"); got != "ws://h/maker/stream?since=3" {
		t.Fatal(got)
	}
	if got := withQuery("ws://h/maker/stream?cancelOnDisconnect=true", "since=3"); got != "ws://h/maker/stream?cancelOnDisconnect=true&since=3" {
		t.Fatal(got)
	}
}
