package machine

import (
	"encoding/json"
	"strings"
	"time"
)

// eventWindow holds a party's retained stream events (up to stream_retention_events, 5,000
// by default, for ?since= resume), oldest first, in a form the garbage collector does not
// have to scan: one slice of fixed-size slots without pointers, and the payloads' JSON in
// a few byte chunks. Kept as RetainedEvent values (a time with its location pointer, a type
// string and a boxed payload each), a loadgen run's windows were the largest part of the
// desk's heap, every event some objects that every collection marked.
//
// slots[head:] are the retained events. A payload lies whole in one chunk, at off; chunks
// are only ever appended to, never written below their length, so a payload's bytes never
// change once written and a view of them (the transport's frame, a resume's replay) needs
// no copy. A chunk is let go when no retained event's payload lies in it; chunks grow from
// windowChunkMin to windowChunkMax bytes (a larger payload gets one of its own), so a
// window holds at most about one chunk more than its retained payloads. Retaining and
// dropping in the steady state allocates one chunk every windowChunkMax bytes of payload.
type eventWindow struct {
	slots []eventSlot
	head  int
	// chunks[chunkHead:] hold the retained payloads; eventSlot.chunk counts from chunkBase,
	// the number of chunks removed from the front of chunks (modulo 2^32).
	chunks    [][]byte
	chunkHead int
	chunkBase uint32
	// present mirrors the nil-ness of the slice this replaced (a window emptied by the
	// bounds is nil; an empty one read from a snapshot is not), which the snapshot keeps.
	present bool
	// types are the event types of the slots (eventSlot.typ indexes it): the desk emits a
	// fixed set of them; a snapshot adds at most one a retained event. It is cleared with
	// the window.
	types []string
	// enc encodes a payload straight into a chunk (made at the first one).
	enc *json.Encoder
	// last is where the last payload written went.
	lastChunk uint32
	lastOff   uint32
}

// eventSlot is the fixed part of a retained event (40 bytes).
type eventSlot struct {
	seq   uint64
	sec   int64 // when it was emitted: Unix seconds and nanoseconds (UTC)
	nsec  int32
	n     uint32 // the payload's length
	chunk uint32 // the payload's chunk, counted from chunkBase
	off   uint32 // the payload's start in its chunk
	typ   uint32 // index in types
	// bad marks a payload that did not encode (none is kept): a snapshot then fails, as it
	// did when the value was kept and encoded at the snapshot.
	bad bool
}

// Sizes and thresholds of eventWindow.
const (
	// windowChunkMin and windowChunkMax bound a chunk's size: a window's first is the
	// smaller, each next one twice its predecessor up to the larger.
	windowChunkMin = 512
	windowChunkMax = 64 << 10
	// windowMinDead is how many dropped slots (and dropped chunks) wait before the front of
	// their slice is copied away in place, once they are as many as the retained ones.
	windowMinDead = 64
)

// windowSink writes what the window's encoder encodes into the window's chunks.
type windowSink struct{ w *eventWindow }

func (s windowSink) Write(p []byte) (int, error) {
	s.w.place(p)
	return len(p), nil
}

// place appends p whole to the last chunk, or to a new one when it does not fit there,
// and records where in lastChunk and lastOff.
func (w *eventWindow) place(p []byte) {
	last := len(w.chunks) - 1
	if last < w.chunkHead || cap(w.chunks[last])-len(w.chunks[last]) < len(p) {
		size := windowChunkMin
		if last >= w.chunkHead {
			size = min(2*cap(w.chunks[last]), windowChunkMax)
		}
		w.chunks = append(w.chunks, make([]byte, 0, max(size, len(p))))
		last++
	}
	c := &w.chunks[last]
	w.lastChunk, w.lastOff = w.chunkBase+uint32(last), uint32(len(*c))
	*c = append(*c, p...)
}

// len is the number of retained events.
func (w *eventWindow) len() int { return len(w.slots) - w.head }

// slot returns the i-th retained event's slot (0: the oldest).
func (w *eventWindow) slot(i int) *eventSlot { return &w.slots[w.head+i] }

// payload returns a slot's JSON: a view of bytes that never change (nil for one that did
// not encode).
func (w *eventWindow) payload(s *eventSlot) []byte {
	if s.bad {
		return nil
	}
	c := w.chunks[s.chunk-w.chunkBase]
	return c[s.off : s.off+s.n : s.off+s.n]
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

// push retains an event whose payload, n bytes, was placed last (bad: none was).
func (w *eventWindow) push(seq uint64, at time.Time, typ string, n int, bad bool) {
	w.present = true
	s := eventSlot{seq: seq, sec: at.Unix(), nsec: int32(at.Nanosecond()), typ: w.typeIndex(typ), bad: bad}
	if !bad {
		s.chunk, s.off, s.n = w.lastChunk, w.lastOff, uint32(n)
	}
	w.slots = append(w.slots, s)
}

// pushEncoded retains an event with its payload encoded into the window; it returns the
// payload's JSON (a view of bytes that never change) and whether it encoded.
func (w *eventWindow) pushEncoded(seq uint64, at time.Time, typ string, payload any) ([]byte, bool) {
	if w.enc == nil {
		w.enc = json.NewEncoder(windowSink{w})
	}
	// The bytes of json.Marshal and a newline, written at once when the value encodes (the
	// newline stays in the chunk, outside the payload).
	if err := w.enc.Encode(payload); err != nil {
		w.push(seq, at, typ, 0, true)
		return nil, false
	}
	c := w.chunks[w.lastChunk-w.chunkBase]
	w.push(seq, at, typ, len(c)-int(w.lastOff)-1, false)
	return w.payload(&w.slots[len(w.slots)-1]), true
}

// pushRaw retains an event with a copy of raw as its payload.
func (w *eventWindow) pushRaw(seq uint64, at time.Time, typ string, raw []byte) {
	w.place(raw)
	w.push(seq, at, typ, len(raw), false)
}

// reset empties the window and lets its memory go (the nil window).
func (w *eventWindow) reset() {
	*w = eventWindow{enc: w.enc} // the encoder writes to w still
}

// dropOldest forgets the k oldest retained events (k < len: dropping all is reset) and
// the chunks that hold none of the rest's payloads.
func (w *eventWindow) dropOldest(k int) {
	w.head += k
	// The oldest retained payload's chunk: the first before it that holds one (a slot
	// without a payload names none).
	keep := len(w.chunks) - 1
	for i := w.head; i < len(w.slots); i++ {
		if s := &w.slots[i]; !s.bad {
			keep = int(s.chunk - w.chunkBase)
			break
		}
	}
	for ; w.chunkHead < keep; w.chunkHead++ {
		w.chunks[w.chunkHead] = nil
	}
	if w.chunkHead >= windowMinDead/8 && w.chunkHead >= len(w.chunks)-w.chunkHead {
		n := copy(w.chunks, w.chunks[w.chunkHead:])
		clear(w.chunks[n:])
		w.chunks = w.chunks[:n]
		w.chunkBase += uint32(w.chunkHead)
		w.chunkHead = 0
	}
	if w.head >= windowMinDead && w.head >= w.len() {
		live := w.slots[w.head:]
		if cap(w.slots) > 4*len(live)+windowMinDead { // a lowered bound: let the room go
			w.slots = append(make([]eventSlot, 0, 2*len(live)), live...)
		} else {
			w.slots = w.slots[:copy(w.slots, live)]
		}
		w.head = 0
	}
}
