package model

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Stream sequence numbers and resume (docs/stream.md, "Resume"; docs/api.md's choices):
//   - every frame addressed to a party as a whole (Event.Socket zero) carries the party's
//     next number, 1 for its first, across restarts; frames addressed to one socket (the
//     snapshot, snapshot.end, stream.resumed, stream.gap) carry none, except the replayed
//     frames of a resume, which carry the number they were first sent with;
//   - the model keeps per party the frames it saw, the newest StreamRetentionEvents within
//     StreamRetention of now (as their type, number, time and payload bytes);
//   - a socket opened without since gets the snapshot and then snapshot.end {latest};
//   - one opened with since N gets, when N ≤ latest and every frame numbered above N is
//     still in the window, exactly those frames again (same type, number and payload
//     bytes) and stream.resumed {N+1, latest}, nothing else; otherwise stream.gap {N, the
//     oldest number in the window or latest+1}, the snapshot, and snapshot.end {latest}.

// Stream is a party's numbering as the model saw it.
type Stream struct {
	Seq    uint64     `json:"seq"`
	Window []Retained `json:"window,omitempty"`
}

// Retained is one frame of a party's window.
type Retained struct {
	Seq     uint64          `json:"seq"`
	At      time.Time       `json:"at"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// stream returns the party's numbering, creating it.
func (m *Model) stream(party string) *Stream {
	if m.st.Streams == nil {
		m.st.Streams = map[string]*Stream{}
	}
	st := m.st.Streams[party]
	if st == nil {
		st = &Stream{}
		m.st.Streams[party] = st
	}
	return st
}

// numbered checks the number of a frame addressed to a party as a whole and files it in
// the party's window.
func (s *step) numbered(e machine.Event, to *Party) {
	st := s.m.stream(to.ID)
	if e.Seq != st.Seq+1 {
		s.failf("%s to %s numbered %d; the party's last frame was numbered %d, so this one must be %d", e.Type, to.Hint, e.Seq, st.Seq, st.Seq+1)
		return
	}
	st.Seq = e.Seq
	limit := s.m.st.Cfg.StreamRetentionEvents
	if limit <= 0 {
		st.Window = nil
		return
	}
	raw, err := json.Marshal(e.Payload)
	if err != nil {
		s.failf("%s to %s: a payload that does not encode: %v", e.Type, to.Hint, err)
		return
	}
	st.Window = append(st.Window, Retained{Seq: e.Seq, At: s.at, Type: e.Type, Payload: raw})
	drop := max(len(st.Window)-limit, 0)
	cutoff := s.at.Add(-s.m.st.Cfg.StreamRetention)
	for drop < len(st.Window) && st.Window[drop].At.Before(cutoff) {
		drop++
	}
	if drop > 0 {
		st.Window = st.Window[drop:]
		if cap(st.Window) > 2*len(st.Window)+64 {
			st.Window = slices.Clone(st.Window)
		}
	}
}

// window returns the frames of the party's window within the time bound now, and the
// oldest number among them (latest+1 when none).
func (s *step) window(party string) ([]Retained, uint64, uint64) {
	st := s.m.st.Streams[party]
	if st == nil {
		return nil, 1, 0
	}
	cutoff := s.at.Add(-s.m.st.Cfg.StreamRetention)
	w := st.Window
	for len(w) > 0 && w[0].At.Before(cutoff) {
		w = w[1:]
	}
	if len(w) == 0 {
		return nil, st.Seq + 1, st.Seq
	}
	return w, w[0].Seq, st.Seq
}

// connectFrames judges what a newly bound socket was sent besides the snapshot frames
// themselves: it returns the frames of the snapshot to judge (nil and false after a
// resume, which sends none).
func (s *step) connectFrames(in machine.SocketOpened, p *Party) (snapshot bool) {
	var frames []machine.Event
	for _, e := range s.out.Events {
		if e.Socket == in.Socket {
			frames = append(frames, e)
		}
	}
	w, oldest, latest := s.window(p.ID)
	if in.Resume && in.Since <= latest && in.Since+1 >= oldest {
		want := w[in.Since+1-oldest:]
		if len(frames) != len(want)+1 {
			s.failf("a resume of %s from %d (window %d..%d) sent %d frames; it must send the %d retained ones and stream.resumed", p.Hint, in.Since, oldest, latest, len(frames), len(want))
			return false
		}
		for i, r := range want {
			f := frames[i]
			raw, err := json.Marshal(f.Payload)
			if f.Type != r.Type || f.Seq != r.Seq || err != nil || !bytes.Equal(raw, r.Payload) {
				s.failf("a resume of %s from %d sent %s numbered %d (%s); the frame numbered %d was %s %s", p.Hint, in.Since, f.Type, f.Seq, raw, r.Seq, r.Type, r.Payload)
				return false
			}
		}
		end := frames[len(frames)-1]
		if end.Type != machine.EvStreamResumed || end.Seq != 0 || end.Payload != (machine.StreamResumedPayload{From: in.Since + 1, To: latest}) {
			s.failf("a resume of %s from %d ends with %s %+v (numbered %d), not stream.resumed {%d, %d}", p.Hint, in.Since, end.Type, end.Payload, end.Seq, in.Since+1, latest)
		}
		return false
	}
	rest := frames
	if in.Resume {
		if len(rest) == 0 || rest[0].Type != machine.EvStreamGap || rest[0].Seq != 0 || rest[0].Payload != (machine.StreamGapPayload{Since: in.Since, Oldest: oldest}) {
			s.failf("a resume of %s from %d (window %d..%d) must start with stream.gap {%d, %d}; it sent %s", p.Hint, in.Since, oldest, latest, in.Since, oldest, typesOf(rest))
			return false
		}
		rest = rest[1:]
	}
	if len(rest) == 0 {
		s.failf("the connect snapshot of %s has no snapshot.end", p.Hint)
		return false
	}
	for _, f := range rest[:len(rest)-1] {
		if f.Seq != 0 || (f.Type != machine.EvRfqCreated && f.Type != machine.EvQuoteCreated && f.Type != machine.EvQuoteStatus) {
			s.failf("the connect snapshot of %s holds %s numbered %d", p.Hint, f.Type, f.Seq)
			return false
		}
	}
	if end := rest[len(rest)-1]; end.Type != machine.EvSnapshotEnd || end.Seq != 0 || end.Payload != (machine.SnapshotEndPayload{Seq: latest}) {
		s.failf("the connect snapshot of %s ends with %s %+v, not snapshot.end {%d}", p.Hint, end.Type, end.Payload, latest)
		return false
	}
	return true
}

func typesOf(es []machine.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Type
	}
	return out
}

// cloneStreams copies every party's numbering.
func cloneStreams(src map[string]*Stream) map[string]*Stream {
	if src == nil {
		return nil
	}
	return cloneMap(src, func(st *Stream) *Stream {
		c := *st
		c.Window = slices.Clone(st.Window)
		return &c
	})
}
