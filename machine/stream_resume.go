package machine

import (
	"encoding/json"
	"fmt"
	"time"
)

// Stream sequence numbers and resume (issue 20).
//
// Every event the desk emits to a party (a.emit: every socket of the party) takes the
// party's next sequence number, starting at 1, and is retained in the party's window: the
// newest Cfg.StreamRetentionEvents events within Cfg.StreamRetention of the desk's time.
// The counter and the window are state (Desk.Streams, in the snapshot since version 3),
// derived from the journaled inputs alone, so a replay or a restart numbers every event as
// the live desk did and can still replay the retained ones.
//
// What is not numbered: the connect-time snapshot frames, the replayed frames of a resume
// (they keep the number they were emitted with), and the frames that frame a connect
// (snapshot.end, stream.resumed, stream.gap), which are addressed to one socket.
//
// A socket opened with Resume (?since=N on the upgrade) gets, when every event numbered
// above N is still retained (N at most the party's latest), exactly those events in order
// then stream.resumed {from: N+1, to: latest}; otherwise stream.gap {since: N, oldest} and
// the ordinary snapshot and snapshot.end. The replay is built from the state at the
// socket.opened input, in the same Apply as the socket's binding, so the first live event
// after it is the next input's: nothing is lost or repeated in between.

// Event types of the resumable stream.
const (
	// EvSnapshotEnd ends the connect-time snapshot with the party's latest sequence number.
	EvSnapshotEnd = "snapshot.end"
	// EvStreamResumed ends the replay of a resume.
	EvStreamResumed = "stream.resumed"
	// EvStreamGap tells a resuming socket that the events it asked for are not all retained.
	EvStreamGap = "stream.gap"
)

// Defaults and bounds of the retained window.
const (
	// DefaultStreamRetentionEvents is the default of stream_retention_events.
	DefaultStreamRetentionEvents = 5000
	// DefaultStreamRetention is the default of stream_retention.
	DefaultStreamRetention = 10 * time.Minute
	// MaxStreamRetentionEvents bounds stream_retention_events (the window is per party).
	MaxStreamRetentionEvents = 100000
	// MaxStreamRetention bounds stream_retention.
	MaxStreamRetention = 24 * time.Hour
)

// SnapshotEndPayload is the payload of snapshot.end: the party's latest sequence number
// when the snapshot was taken (0 when none yet).
type SnapshotEndPayload struct {
	Seq uint64 `json:"seq"`
}

// StreamResumedPayload is the payload of stream.resumed: the sequence numbers replayed,
// From..To (To = From-1 when there was nothing to replay).
type StreamResumedPayload struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// StreamGapPayload is the payload of stream.gap: the since the socket asked for and the
// oldest sequence number still retained (the party's next one, latest+1, when none is).
type StreamGapPayload struct {
	Since  uint64 `json:"since"`
	Oldest uint64 `json:"oldest"`
}

// PartyStream is a party's stream counter and retained window. It encodes to JSON as
// {"seq": Seq, "retained": Retained()} (the latter omitted when empty).
type PartyStream struct {
	// Seq is the sequence number of the last event emitted to the party (0: none yet).
	Seq uint64
	// win are the newest events, oldest first, numbered Seq-len+1..Seq, each payload as
	// its JSON, in a form the collector does not scan (stream_window.go).
	win eventWindow
}

// Len is the number of events retained in the party's window.
func (s *PartyStream) Len() int { return s.win.len() }

// Retained returns the retained events, oldest first (nil when the window is), each
// payload a json.RawMessage: a view of bytes the window never changes.
func (s *PartyStream) Retained() []RetainedEvent {
	if !s.win.present {
		return nil
	}
	out := make([]RetainedEvent, s.win.len())
	for i := range out {
		r := s.win.slot(i)
		out[i] = RetainedEvent{Seq: r.seq, At: slotTime(r.sec, r.nsec), Type: s.win.types[r.typ]}
		if p := s.win.payload(r); p != nil {
			out[i].Payload = json.RawMessage(p)
		}
	}
	return out
}

// MarshalJSON encodes the stream state as the struct of exported fields it replaced did
// (cmd/replay -dump, the tests' comparisons).
func (s *PartyStream) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Seq      uint64          `json:"seq"`
		Retained []RetainedEvent `json:"retained,omitempty"`
	}{s.Seq, s.Retained()})
}

// RetainedEvent is one event of a party's window as PartyStream.Retained and a resume
// read it: its number, when it was emitted, its type and its payload's JSON
// (json.RawMessage; nil for a payload that did not encode). Since the window keeps every
// payload as its JSON, ApplyQuiet encodes each event too (node BenchmarkReplay).
type RetainedEvent struct {
	Seq     uint64    `json:"seq"`
	At      time.Time `json:"at"`
	Type    string    `json:"type"`
	Payload any       `json:"payload"`
}

// streamOf returns the party's stream state, creating it.
func (d *Desk) streamOf(party string) *PartyStream { return entryOf(&d.Streams, party) }

// latestSeq is the party's last sequence number (0: none yet).
func (d *Desk) latestSeq(party string) uint64 {
	if s := d.Streams[party]; s != nil {
		return s.Seq
	}
	return 0
}

// sequence numbers an event to a party and retains it; it returns its number and, when
// not quiet, the payload's JSON. It runs in Apply and ApplyQuiet alike (the counter and
// the window are state). The payload is encoded here, once, into the window, and Apply
// hands its JSON to the transport (which encoded every event before): bytes the window
// never changes.
func (a *applier) sequence(party, typ string, payload any) (uint64, json.RawMessage) {
	s := a.d.streamOf(party)
	s.Seq++
	if a.d.Cfg.StreamRetentionEvents <= 0 {
		s.win.reset()
		if a.quiet {
			return s.Seq, nil
		}
		raw, err := json.Marshal(payload)
		if err != nil {
			return s.Seq, nil
		}
		return s.Seq, raw
	}
	b, ok := s.win.pushEncoded(s.Seq, a.d.Now, typ, payload)
	var raw json.RawMessage
	if ok && !a.quiet {
		raw = b
	}
	a.d.trimStream(s)
	return s.Seq, raw
}

// trimStream drops the events beyond the count bound and those older than the time bound.
func (d *Desk) trimStream(s *PartyStream) {
	n := s.win.len()
	drop := 0
	if over := n - d.Cfg.StreamRetentionEvents; over > 0 {
		drop = over
	}
	cutoff := d.Now.Add(-d.Cfg.StreamRetention)
	for drop < n && s.win.before(drop, cutoff) {
		drop++
	}
	switch {
	case drop == 0:
	case drop == n:
		s.win.reset()
	default:
		s.win.dropOldest(drop)
	}
}

// live returns the index in s's window of the oldest retained event still within both
// bounds in force at the desk's time (the window is trimmed only when an event is
// emitted, so older ones, or more than a lowered StreamRetentionEvents, may linger until
// then) and its sequence number, or the window's length and the party's next number when
// none is. It only reads the state.
func (d *Desk) live(s *PartyStream) (int, uint64) {
	cutoff := d.Now.Add(-d.Cfg.StreamRetention)
	n := s.win.len()
	i := max(0, n-max(d.Cfg.StreamRetentionEvents, 0))
	for i < n && s.win.before(i, cutoff) {
		i++
	}
	if i == n {
		return n, s.Seq + 1
	}
	return i, s.win.slot(i).seq
}

// resumeOrSnapshot sends a newly bound socket either the replay of a resume or the
// connect-time snapshot, then the frame that ends it. It is output only: it changes no
// state (ApplyQuiet skips it).
func (a *applier) resumeOrSnapshot(p *Party, in SocketOpened) {
	latest := a.d.latestSeq(p.ID)
	if in.Resume {
		s := a.d.Streams[p.ID]
		first, oldest := 0, latest+1
		if s != nil {
			first, oldest = a.d.live(s)
		}
		if in.Since <= latest && in.Since+1 >= oldest {
			if s != nil {
				// The payloads as retained, their JSON (RetainedPayload decodes it for a
				// consumer that wants the value): views of bytes the window never changes.
				for i := first + int(in.Since+1-oldest); i < s.win.len(); i++ {
					r := s.win.slot(i)
					ev := Event{Party: p.ID, Socket: in.Socket, Type: s.win.types[r.typ], Seq: r.seq}
					if raw := s.win.payload(r); raw != nil {
						ev.Payload, ev.Raw = json.RawMessage(raw), raw
					}
					a.out.Events = append(a.out.Events, ev)
				}
			}
			a.out.Events = append(a.out.Events, Event{Party: p.ID, Socket: in.Socket, Type: EvStreamResumed,
				Payload: StreamResumedPayload{From: in.Since + 1, To: latest}})
			return
		}
		a.out.Events = append(a.out.Events, Event{Party: p.ID, Socket: in.Socket, Type: EvStreamGap,
			Payload: StreamGapPayload{Since: in.Since, Oldest: oldest}})
	}
	a.snapshot(p, in.Socket)
	a.out.Events = append(a.out.Events, Event{Party: p.ID, Socket: in.Socket, Type: EvSnapshotEnd, Payload: SnapshotEndPayload{Seq: latest}})
}

// RetainedPayload decodes the payload of a replayed event (a json.RawMessage) into the
// type its event type is emitted with, so that a consumer of the outputs in process (the
// simulator's actors) sees the same value as the live one. Any other payload, a type
// without an entry here, or bytes that do not decode, are returned as they are.
func RetainedPayload(typ string, payload any) any {
	raw, ok := payload.(json.RawMessage)
	if !ok {
		return payload
	}
	switch typ {
	case EvRfqCreated:
		return decodedOr[RfqDTO](raw)
	case EvRfqClosed, EvRfqExpired:
		return decodedOr[RfqIDPayload](raw)
	case EvQuoteCreated:
		return decodedOr[QuoteDTO](raw)
	case EvQuoteStatus:
		return decodedOr[QuoteStatusPayload](raw)
	case EvQuoteDeclined:
		return decodedOr[QuoteDeclinedPayload](raw)
	case EvQuoteAnchored:
		return decodedOr[QuoteAnchoredPayload](raw)
	case EvTradeStep:
		return decodedOr[TradeStepPayload](raw)
	case EvTradeSettled:
		return decodedOr[TradeDTO](raw)
	case EvTradeFailed:
		return decodedOr[TradeFailedPayload](raw)
	case EvSignRequested:
		return decodedOr[SignActionDTO](raw)
	case EvSignCompleted:
		return decodedOr[ActionIDPayload](raw)
	case EvHistoryRecorded:
		return decodedOr[RfqHistoryDTO](raw)
	case EvMakerProtection:
		return decodedOr[MakerProtectionPayload](raw)
	}
	return raw
}

// decodedOr decodes raw as a T, or returns raw itself when it does not decode.
func decodedOr[T any](raw json.RawMessage) any {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	return v
}

// validateStreamRetention checks the retention bounds of a configuration.
func (c *Config) validateStreamRetention() error {
	if c.StreamRetentionEvents < 0 || c.StreamRetentionEvents > MaxStreamRetentionEvents {
		return fmt.Errorf("stream_retention_events must be between 0 and %d", MaxStreamRetentionEvents)
	}
	if c.StreamRetention < 0 || c.StreamRetention > MaxStreamRetention {
		return fmt.Errorf("stream_retention must be between 0 and %s", MaxStreamRetention)
	}
	return nil
}

// writeStreamsSection writes every party's stream state (snapshot version 3), each
// retained payload as its JSON.
func writeStreamsSection(e *encoder, streams map[string]*PartyStream) error {
	var failed error
	writePtrMap(e, streams, func(e *encoder, s *PartyStream) {
		e.Uvarint(s.Seq)
		w := &s.win
		e.Len(w.len(), !w.present)
		for i := range w.len() {
			r := w.slot(i)
			e.Uvarint(r.seq)
			e.Time(slotTime(r.sec, r.nsec))
			e.Str(w.types[r.typ])
			if r.bad {
				if failed == nil {
					failed = fmt.Errorf("retained %s event %d: its payload did not encode", w.types[r.typ], r.seq)
				}
				e.Bytes(nil)
				continue
			}
			e.Bytes(w.payload(r))
		}
		e.FlushSome()
	})
	return failed
}

// readStreamsSection reads what writeStreamsSection wrote.
func readStreamsSection(dec *decoder) map[string]*PartyStream {
	return readMap(dec, (*decoder).Str, func(dec *decoder) *PartyStream {
		s := &PartyStream{Seq: dec.Uvarint()}
		n, isNil := dec.Len()
		if isNil {
			return s
		}
		w := &s.win
		w.present = true
		w.slots = make([]eventSlot, 0, n)
		for range n {
			seq, at, typ, raw := dec.Uvarint(), dec.Time(), dec.Str(), dec.Bytes()
			if dec.Err() != nil {
				break
			}
			if raw == nil {
				raw = []byte("null") // what the JSON of a nil json.RawMessage was
			}
			w.pushRaw(seq, at, typ, raw)
		}
		return s
	})
}
