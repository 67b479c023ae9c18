package machine

import (
	"bytes"
	"encoding/json"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/wire"
	"pgregory.net/rapid"
)

// windowModel is a party's stream state in the form the compact window replaced: a slice
// of RetainedEvent, each payload the value emitted or its JSON, trimmed and read by the
// code that form had.
type windowModel struct {
	seq      uint64
	retained []RetainedEvent
}

func (m *windowModel) sequence(d *Desk, typ string, payload any) {
	m.seq++
	if d.Cfg.StreamRetentionEvents <= 0 {
		m.retained = nil
		return
	}
	var kept any = payload
	if b, err := json.Marshal(payload); err == nil {
		kept = json.RawMessage(b)
	}
	m.retained = append(m.retained, RetainedEvent{Seq: m.seq, At: d.Now, Type: typ, Payload: kept})
	drop := max(0, len(m.retained)-d.Cfg.StreamRetentionEvents)
	cutoff := d.Now.Add(-d.Cfg.StreamRetention)
	for drop < len(m.retained) && m.retained[drop].At.Before(cutoff) {
		drop++
	}
	if m.retained = m.retained[drop:]; len(m.retained) == 0 {
		m.retained = nil
	}
}

func (m *windowModel) live(d *Desk) (int, uint64) {
	cutoff := d.Now.Add(-d.Cfg.StreamRetention)
	i := max(0, len(m.retained)-max(d.Cfg.StreamRetentionEvents, 0))
	for i < len(m.retained) && m.retained[i].At.Before(cutoff) {
		i++
	}
	if i == len(m.retained) {
		return i, m.seq + 1
	}
	return i, m.retained[i].Seq
}

// snapshot is the stream section of a desk holding the model's state for party, as it was
// written before the window was compact (every payload encoded at the snapshot).
func (m *windowModel) snapshot(party string) ([]byte, error) {
	var failed error
	e := &encoder{}
	e.Uvarint(1)
	e.Str(party)
	e.Bool(true)
	e.Uvarint(m.seq)
	writeSlice(e, m.retained, func(e *encoder, r *RetainedEvent) {
		e.Uvarint(r.Seq)
		e.Time(r.At)
		e.Str(r.Type)
		raw, err := json.Marshal(r.Payload)
		if err != nil && failed == nil {
			failed = err
		}
		e.Bytes(raw)
	})
	return e.B, failed
}

// windowPayload draws an event payload: a DTO, a map, a string with characters JSON
// escapes, or (rarely) a value that does not encode.
func windowPayload(t *rapid.T) any {
	switch rapid.IntRange(0, 9).Draw(t, "payload kind") {
	case 0:
		return RfqIDPayload{RfqID: rapid.String().Draw(t, "rfq id")}
	case 1:
		return map[string]any{"a": rapid.Int().Draw(t, "a"), "b": []string{"<&>", rapid.String().Draw(t, "b")}}
	case 2:
		return math.Inf(1) // json: unsupported value
	case 3:
		return nil
	}
	return StreamGapPayload{Since: rapid.Uint64().Draw(t, "since"), Oldest: rapid.Uint64().Draw(t, "oldest")}
}

// TestStreamWindowProperty: a party's compact window behaves as the slice of
// RetainedEvent it replaced, through any sequence of events (in Apply and ApplyQuiet),
// time passing, bounds raised and lowered, and restarts from the snapshot: the same
// retained events (number, time, type, payload bytes), the same live range and oldest
// number for a resume, the same replayed frames, the same snapshot bytes (and the same
// failure when a payload does not encode), and the same JSON; and no payload's bytes
// handed out (to the transport, in a replay) change afterwards.
func TestStreamWindowProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const party = "party::1"
		cfg := testConfig()
		cfg.StreamRetentionEvents = rapid.IntRange(0, 200).Draw(t, "retention events")
		cfg.StreamRetention = time.Duration(rapid.IntRange(0, 300).Draw(t, "retention seconds")) * time.Second
		d := &Desk{Cfg: cfg, Now: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
		m := &windowModel{}
		steps := rapid.IntRange(1, 600).Draw(t, "steps")
		// Every payload handed out (to the transport, in a replay) as a view of the
		// window's bytes, with the bytes it had: none may change afterwards.
		type handed struct{ view, bytes []byte }
		var out []handed
		types := []string{EvRfqCreated, EvQuoteStatus, EvTradeStep, "x.other"}
		// Enough events past the bound that the window copies its dropped prefix away
		// (windowMinDead) several times.
		for range steps {
			switch rapid.IntRange(0, 19).Draw(t, "op") {
			case 0:
				d.Now = d.Now.Add(time.Duration(rapid.Int64Range(0, 90e9).Draw(t, "advance ns")))
			case 1:
				d.Cfg.StreamRetentionEvents = rapid.IntRange(0, 200).Draw(t, "retention events")
				d.Cfg.StreamRetention = time.Duration(rapid.IntRange(0, 300).Draw(t, "retention seconds")) * time.Second
			case 2:
				if _, err := m.snapshot(party); err != nil {
					continue // the old desk could not snapshot it either (checked below)
				}
				d.Streams = restoreStreams(t, d.Streams)
			default:
				typ := rapid.SampledFrom(types).Draw(t, "type")
				payload := windowPayload(t)
				quiet := rapid.Bool().Draw(t, "quiet")
				a := &applier{d: d, out: &Outputs{}, quiet: quiet}
				seq, raw := a.sequence(party, typ, payload)
				m.sequence(d, typ, payload)
				if seq != m.seq {
					t.Fatalf("numbered %d, want %d", seq, m.seq)
				}
				want, err := json.Marshal(payload)
				if quiet || err != nil {
					want = nil
				}
				if !bytes.Equal(raw, want) {
					t.Fatalf("the transport gets %q, want %q", raw, want)
				}
				out = append(out, handed{raw, bytes.Clone(raw)})
				for _, r := range d.Streams[party].Retained() {
					if p, ok := r.Payload.(json.RawMessage); ok {
						out = append(out, handed{p, bytes.Clone(p)})
					}
				}
			}
			checkWindow(t, d, m, party)
		}
		for i, h := range out {
			if !bytes.Equal(h.view, h.bytes) {
				t.Fatalf("payload %d handed out as %q became %q", i, h.bytes, h.view)
			}
		}
	})
}

// restoreStreams is the stream section of a snapshot of streams, read back.
func restoreStreams(t *rapid.T, streams map[string]*PartyStream) map[string]*PartyStream {
	e := &encoder{}
	if err := writeStreamsSection(e, streams); err != nil {
		t.Fatal(err)
	}
	dec := wire.NewDecoder(e.B)
	back := readStreamsSection(dec)
	if dec.Err() != nil || dec.Left() != 0 {
		t.Fatalf("stream section: %v, %d bytes left", dec.Err(), dec.Left())
	}
	return back
}

// checkWindow compares the desk's window of party with the model's.
func checkWindow(t *rapid.T, d *Desk, m *windowModel, party string) {
	s := d.Streams[party]
	if s == nil {
		if m.seq != 0 {
			t.Fatal("no stream state")
		}
		return
	}
	if s.Seq != m.seq || s.Len() != len(m.retained) {
		t.Fatalf("seq %d with %d retained, want %d with %d", s.Seq, s.Len(), m.seq, len(m.retained))
	}
	got := s.Retained()
	if (got == nil) != (m.retained == nil) {
		t.Fatalf("retained nil %v, want %v", got == nil, m.retained == nil)
	}
	for i, w := range m.retained {
		g := got[i]
		wp, _ := w.Payload.(json.RawMessage)
		gp, _ := g.Payload.(json.RawMessage)
		if g.Seq != w.Seq || !g.At.Equal(w.At) || g.Type != w.Type || !bytes.Equal(gp, wp) {
			t.Fatalf("event %d: %d %s %s %s, want %d %s %s %s", i, g.Seq, g.At, g.Type, gp, w.Seq, w.At, w.Type, wp)
		}
	}
	gi, go_ := d.live(s)
	wi, wo := m.live(d)
	if gi != wi || go_ != wo {
		t.Fatalf("live from %d (oldest %d), want %d (%d)", gi, go_, wi, wo)
	}
	wantSnap, wantErr := m.snapshot(party)
	e := &encoder{}
	err := writeStreamsSection(e, d.Streams)
	if (err != nil) != (wantErr != nil) || !bytes.Equal(e.B, wantSnap) {
		t.Fatalf("snapshot %x (%v), want %x (%v)", e.B, err, wantSnap, wantErr)
	}
	if wantErr == nil {
		gj, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		wj, err := json.Marshal(struct {
			Seq      uint64          `json:"seq"`
			Retained []RetainedEvent `json:"retained,omitempty"`
		}{m.seq, m.retained})
		if err != nil || !bytes.Equal(gj, wj) {
			t.Fatalf("JSON %s, want %s (%v)", gj, wj, err)
		}
	}
}

// TestStreamWindowCompact: a retained event costs its payload's bytes and a fixed slot,
// and no heap object of its own; retaining and dropping in the steady state allocates
// nothing but the transport's copy (none when quiet).
func TestStreamWindowCompact(t *testing.T) {
	cfg := testConfig()
	cfg.StreamRetentionEvents = 5000
	cfg.StreamRetention = time.Hour
	d := &Desk{Cfg: cfg, Now: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	var payload any = StreamGapPayload{Since: 123456, Oldest: 7890} // boxed once: the caller's allocation
	emit := func(n int) {
		a := &applier{d: d, out: &Outputs{}, quiet: true}
		for range n {
			d.Now = d.Now.Add(time.Millisecond)
			a.sequence("p", EvStreamGap, payload)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	emit(5000)
	runtime.GC()
	runtime.ReadMemStats(&after)
	objects := (float64(after.HeapObjects) - float64(before.HeapObjects)) / 5000
	if objects > 0.01 {
		t.Errorf("%.3f heap objects a retained event, want none", objects)
	}
	if s := d.Streams["p"]; s.Len() != 5000 {
		t.Fatalf("%d retained", s.Len())
	}
	emit(10000) // reach the steady state: the arrays at their final size
	if allocs := testing.AllocsPerRun(1000, func() { emit(1) }); allocs != 0 {
		t.Errorf("%.1f allocations a retained and dropped event, want 0", allocs)
	}
	// The dropped events' slots and chunks are let go: at most as many slots as the
	// retained, and one chunk beside those that hold retained payloads.
	w := &d.Streams["p"].win
	held := 0
	for _, c := range w.chunks[w.chunkHead:] {
		held += cap(c)
	}
	payloads := 0
	for i := range w.len() {
		payloads += int(w.slot(i).n) + 1 // and its newline
	}
	if w.head > max(w.len(), windowMinDead) || held > payloads+2*windowChunkMax {
		t.Errorf("%d dropped slots beside %d retained; %d bytes of chunks for %d of payloads", w.head, w.len(), held, payloads)
	}
}
