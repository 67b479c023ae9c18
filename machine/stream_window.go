package machine

import (
	"encoding/json"
	"strings"
	"time"
)

// eventWindow holds a party's retained stream events (up to stream_retention_events, 5,000
// by default, for ?since= resume), oldest first, in a form the garbage collector does not
// have to scan: one slice of fixed-size slots without pointers and one byte slice with every
// event's payload as its JSON. Kept as RetainedEvent values (a time with its location
// pointer, a type string and a boxed payload each), a loadgen run's windows were the
// largest part of the desk's heap, every event some objects that every collection marked.
//
// slots[head:] are the retained events, their payloads one after the other in
// data[headOff:] (slot i's at headOff plus the lengths of those before it). Dropping the
// oldest events only moves head and headOff; the dead prefix is copied away in place once
// it is a quarter as long as the rest (so retaining and dropping in the steady state
// allocates nothing, and the memory held is about 1.25 times the retained events').
type eventWindow struct {
	slots   []eventSlot
	head    int
	data    []byte
	headOff int
	// present mirrors the nil-ness of the slice this replaced (a window emptied by the
	// bounds is nil; an empty one read from a snapshot is not), which the snapshot keeps.
	present bool
	// types are the event types of the slots (eventSlot.typ indexes it): the desk emits a
	// fixed set of them; a snapshot adds at most one a retained event. It is cleared with
	// the window.
	types []string
	// enc encodes a payload straight into data (made at the first one).
	enc *json.Encoder
}

// eventSlot is the fixed part of a retained event (32 bytes).
type eventSlot struct {
	seq  uint64
	sec  int64 // when it was emitted: Unix seconds and nanoseconds (UTC)
	nsec int32
	n    uint32 // the payload's length
	typ  uint32 // index in types
	// bad marks a payload that did not encode (none is kept): a snapshot then fails, as it
	// did when the value was kept and encoded at the snapshot.
	bad bool
}

// Compaction thresholds of eventWindow.
const (
	// windowMinDead is how many dropped slots wait before the dead prefix is copied away,
	// and windowDeadShare the share of the retained ones (1/windowDeadShare) it reaches
	// first: each payload is copied about windowDeadShare times while retained (a memmove
	// of some hundred bytes, against its encoding's microsecond), and the window holds at
	// most 1+1/windowDeadShare times its retained events' bytes plus the arrays' growth.
	windowMinDead   = 64
	windowDeadShare = 4
	// windowSlack bounds a backing array against its live part after a compaction: one
	// larger than windowSlack times the live part plus windowSlackBytes is reallocated.
	windowSlack      = 3
	windowSlackBytes = 4096
)

// windowSink appends what the window's encoder writes to the window's payloads.
type windowSink struct{ w *eventWindow }

func (s windowSink) Write(p []byte) (int, error) {
	s.w.data = append(s.w.data, p...)
	return len(p), nil
}

// len is the number of retained events.
func (w *eventWindow) len() int { return len(w.slots) - w.head }

// slot returns the i-th retained event's slot (0: the oldest).
func (w *eventWindow) slot(i int) *eventSlot { return &w.slots[w.head+i] }

// offset returns where the i-th retained event's payload starts in data.
func (w *eventWindow) offset(i int) int {
	off := w.headOff
	for _, s := range w.slots[w.head : w.head+i] {
		off += int(s.n)
	}
	return off
}

// time returns when the i-th retained event was emitted.
func (w *eventWindow) time(i int) time.Time {
	s := w.slot(i)
	return slotTime(s.sec, s.nsec)
}

// before reports whether the i-th retained event was emitted before t.
func (w *eventWindow) before(i int, t time.Time) bool {
	s := w.slot(i)
	sec := t.Unix()
	return s.sec < sec || s.sec == sec && int64(s.nsec) < int64(t.Nanosecond())
}

// slotTime is the instant of a slot's seconds and nanoseconds, in UTC (the zero time as
// time.Time{}), as the snapshot decoder returns it.
func slotTime(sec int64, nsec int32) time.Time {
	if sec == zeroTimeUnix && nsec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// zeroTimeUnix is time.Time{}.Unix().
const zeroTimeUnix = -62135596800

// typeIndex returns typ's index in the window's types, adding it.
func (w *eventWindow) typeIndex(typ string) uint32 {
	for i, t := range w.types {
		if t == typ {
			return uint32(i)
		}
	}
	w.types = append(w.types, strings.Clone(typ)) // not a part of a snapshot's text, which it would keep
	return uint32(len(w.types) - 1)
}

// push retains an event whose payload is the bytes data[start:] (appended by the caller).
func (w *eventWindow) push(seq uint64, at time.Time, typ string, start int, bad bool) {
	w.present = true
	w.slots = append(w.slots, eventSlot{
		seq: seq, sec: at.Unix(), nsec: int32(at.Nanosecond()), typ: w.typeIndex(typ),
		n: uint32(len(w.data) - start), bad: bad,
	})
}

// pushEncoded retains an event with its payload encoded into the window; it returns the
// payload's JSON (a view of the window's bytes) and whether it encoded.
func (w *eventWindow) pushEncoded(seq uint64, at time.Time, typ string, payload any) ([]byte, bool) {
	if w.enc == nil {
		w.enc = json.NewEncoder(windowSink{w})
	}
	start := len(w.data)
	err := w.enc.Encode(payload) // the bytes of json.Marshal and a newline
	if err != nil {
		w.data = w.data[:start]
	} else {
		w.data = w.data[:len(w.data)-1]
	}
	w.push(seq, at, typ, start, err != nil)
	if err != nil {
		return nil, false
	}
	return w.data[start:len(w.data):len(w.data)], true
}

// pushRaw retains an event with a copy of raw as its payload.
func (w *eventWindow) pushRaw(seq uint64, at time.Time, typ string, raw []byte) {
	start := len(w.data)
	w.data = append(w.data, raw...)
	w.push(seq, at, typ, start, false)
}

// reset empties the window and lets its memory go (the nil window).
func (w *eventWindow) reset() {
	*w = eventWindow{enc: w.enc} // the encoder writes to w still
}

// dropOldest forgets the k oldest retained events (k < len: dropping all is reset).
func (w *eventWindow) dropOldest(k int) {
	w.headOff = w.offset(k)
	w.head += k
	if w.head < windowMinDead || windowDeadShare*w.head < w.len() {
		return
	}
	live := w.slots[w.head:]
	if cap(w.slots) > windowSlack*len(live)+windowMinDead {
		w.slots = append(make([]eventSlot, 0, 2*len(live)), live...)
	} else {
		w.slots = w.slots[:copy(w.slots, live)]
	}
	w.head = 0
	rest := w.data[w.headOff:]
	if cap(w.data) > windowSlack*len(rest)+windowSlackBytes {
		w.data = append(make([]byte, 0, 2*len(rest)), rest...)
	} else {
		w.data = w.data[:copy(w.data, rest)]
	}
	w.headOff = 0
}

// events returns retained events i.. as RetainedEvent values, each payload a
// json.RawMessage of one copy of their bytes (nil for one that did not encode), so that
// they outlive any later change of the window.
func (w *eventWindow) events(i int) []RetainedEvent {
	n := w.len() - i
	if n <= 0 {
		return nil
	}
	buf := append([]byte(nil), w.data[w.offset(i):]...)
	out := make([]RetainedEvent, n)
	off := 0
	for j := range out {
		s := w.slot(i + j)
		out[j] = RetainedEvent{Seq: s.seq, At: slotTime(s.sec, s.nsec), Type: w.types[s.typ]}
		if !s.bad {
			out[j].Payload = json.RawMessage(buf[off : off+int(s.n) : off+int(s.n)])
		}
		off += int(s.n)
	}
	return out
}
