package client

import (
	"encoding/json"
	"strconv"
)

// Stream resume (docs/stream.md, "Resume"). Every event the desk emits to a party carries
// Event.Seq, the party's sequence number. A Stream remembers the last one it delivered and,
// unless StreamOptions.NoResume is set, reconnects with ?since= that number: the desk then
// sends the missed events again and EventStreamResumed, and no snapshot; or, when it no
// longer retains them all, EventStreamGap, then the snapshot and EventSnapshotEnd. A
// consumer keeps its state across an EventConnected whose Connected.Resume is true unless an
// EventStreamGap follows (then it resyncs from the snapshot, as after any other connect).

// Stream event types that frame a connect; none carries a Seq.
const (
	// EventSnapshotEnd ends the connect-time snapshot; its payload is SnapshotEnd.
	EventSnapshotEnd = "snapshot.end"
	// EventStreamResumed ends the replay of a resume; its payload is StreamResumed.
	EventStreamResumed = "stream.resumed"
	// EventStreamGap says a resume could not be served; the snapshot follows. Its payload
	// is StreamGap.
	EventStreamGap = "stream.gap"
)

// SnapshotEnd is the payload of snapshot.end: the party's latest sequence number when the
// snapshot was taken (0 when none yet).
type SnapshotEnd struct {
	Seq uint64 `json:"seq"`
}

// StreamResumed is the payload of stream.resumed: the sequence numbers sent again,
// From..To (To = From-1 when none was missed).
type StreamResumed struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// StreamGap is the payload of stream.gap: the since asked for and the oldest sequence
// number the desk still retains (its next one when none).
type StreamGap struct {
	Since  uint64 `json:"since"`
	Oldest uint64 `json:"oldest"`
}

// resumePoint is what a Stream knows of the party's numbering: the last sequence number
// delivered, once a snapshot.end or stream.resumed told it where the numbering stands
// (before that, and with a desk that numbers nothing, it never asks to resume). Only the
// run goroutine and the socket's read loop use it, one after the other.
type resumePoint struct {
	known bool
	last  uint64
}

// since returns the query value of the next connect, or "" for none.
func (r *resumePoint) since() string {
	if !r.known {
		return ""
	}
	return strconv.FormatUint(r.last, 10)
}

// track updates the point with a frame about to be delivered; it reports false for a frame
// to drop: a numbered event at or below the last one delivered (already seen).
func (r *resumePoint) track(ev Event) bool {
	switch ev.Type {
	case EventSnapshotEnd:
		var p SnapshotEnd
		if json.Unmarshal(ev.Payload, &p) == nil {
			r.known, r.last = true, p.Seq
		}
		return true
	case EventStreamResumed:
		var p StreamResumed
		if json.Unmarshal(ev.Payload, &p) == nil {
			r.known, r.last = true, p.To
		}
		return true
	case EventStreamGap:
		r.known = false // the snapshot and its snapshot.end follow
		return true
	}
	if ev.Seq == 0 {
		return true
	}
	if r.known && ev.Seq <= r.last {
		return false
	}
	r.last = ev.Seq
	return true
}
