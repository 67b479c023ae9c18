package machine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// The primitives of the desk's binary encodings (snapshots and version-2 journal records).
// Integers are varints, strings and byte slices are length-prefixed, slices keep the
// difference between nil and empty (length+1, 0 for nil), times are UTC seconds since
// year 1 and nanoseconds, and decimals use money's canonical binary form. The encoding of a
// value is a function of its content only, so it is fit for a digest.

// encoder appends binary values to a buffer; the first error is kept. With w set, the
// buffer is handed to w and emptied whenever flushSome finds it larger than flushAt.
type encoder struct {
	b   []byte
	err error
	w   io.Writer
}

// flushAt is the buffer size above which flushSome hands the buffer to the writer.
const flushAt = 64 << 10

// flushSome writes the buffer out when there is a writer and the buffer is large.
func (e *encoder) flushSome() {
	if e.w != nil && len(e.b) >= flushAt {
		if _, err := e.w.Write(e.b); err != nil && e.err == nil {
			e.err = err
		}
		e.b = e.b[:0]
	}
}

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) int(v int)        { e.b = binary.AppendVarint(e.b, int64(v)) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

// bytes writes a byte slice, keeping nil apart from empty.
func (e *encoder) bytes(p []byte) {
	if p == nil {
		e.b = append(e.b, 0)
		return
	}
	e.b = binary.AppendUvarint(e.b, uint64(len(p))+1)
	e.b = append(e.b, p...)
}

// length writes a slice's length, keeping nil apart from empty.
func (e *encoder) length(n int, isNil bool) {
	if isNil {
		e.b = append(e.b, 0)
		return
	}
	e.b = binary.AppendUvarint(e.b, uint64(n)+1)
}

func (e *encoder) strs(s []string) {
	e.length(len(s), s == nil)
	for _, x := range s {
		e.str(x)
	}
}

func (e *encoder) byteSlices(s [][]byte) {
	e.length(len(s), s == nil)
	for _, x := range s {
		e.bytes(x)
	}
}

// zeroUnix is time.Time{}.Unix(): times are written as seconds since then, so the zero
// time is a single byte.
const zeroUnix = -62135596800

func (e *encoder) time(t time.Time) {
	e.varint(t.Unix() - zeroUnix)
	e.uvarint(uint64(t.Nanosecond()))
}

func (e *encoder) dec(d money.Decimal) {
	var err error
	if e.b, err = d.AppendBinary(e.b); err != nil && e.err == nil {
		e.err = err
	}
}

// present writes whether an optional value follows.
func (e *encoder) present(ok bool) { e.bool(ok) }

// errTruncated and friends describe malformed binary input.
var (
	errTruncated = errors.New("truncated binary data")
	errMalformed = errors.New("malformed binary data")
)

// decoder reads binary values; the first error is kept, and every read after it returns a
// zero value. Lengths are checked against the bytes left, so a hostile length never
// becomes a large allocation.
type decoder struct {
	b   []byte
	off int
	err error
	// text, when set, is a string copy of b: strings are cut from it instead of allocated.
	text string
	// arena hands out byte slices for decoded []byte fields in bulk (with text set).
	arena []byte
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("%w at byte %d", err, d.off)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(errTruncated)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail(errTruncated)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) int() int {
	v := d.varint()
	if int64(int(v)) != v {
		d.fail(errMalformed)
		return 0
	}
	return int(v)
}

func (d *decoder) bool() bool {
	if d.err != nil {
		return false
	}
	if d.off >= len(d.b) {
		d.fail(errTruncated)
		return false
	}
	c := d.b[d.off]
	d.off++
	if c > 1 {
		d.fail(errMalformed)
		return false
	}
	return c == 1
}

// span reads a length and returns the bounds of that many following bytes.
func (d *decoder) span(n uint64) (int, int, bool) {
	if d.err != nil {
		return 0, 0, false
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail(errTruncated)
		return 0, 0, false
	}
	start := d.off
	d.off += int(n)
	return start, d.off, true
}

func (d *decoder) str() string {
	start, end, ok := d.span(d.uvarint())
	if !ok || start == end {
		return ""
	}
	if d.text != "" {
		return d.text[start:end]
	}
	return string(d.b[start:end])
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n == 0 {
		return nil
	}
	start, end, ok := d.span(n - 1)
	if !ok {
		return nil
	}
	size := end - start
	if size == 0 {
		return []byte{}
	}
	if size > 256 || d.text == "" { // only a snapshot's many small slices share an arena
		return append([]byte{}, d.b[start:end]...)
	}
	if len(d.arena) < size {
		d.arena = make([]byte, 16<<10)
	}
	out := d.arena[:size:size]
	d.arena = d.arena[size:]
	copy(out, d.b[start:end])
	return out
}

// length reads a slice length written by encoder.length; each element takes at least one
// byte, which bounds it by the bytes left.
func (d *decoder) length() (n int, isNil bool) {
	v := d.uvarint()
	if v == 0 {
		return 0, true
	}
	if v-1 > uint64(len(d.b)-d.off) {
		d.fail(errTruncated)
		return 0, true
	}
	return int(v - 1), false
}

func (d *decoder) strs() []string {
	n, isNil := d.length()
	if isNil {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *decoder) byteSlices() [][]byte {
	n, isNil := d.length()
	if isNil {
		return nil
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = d.bytes()
	}
	return out
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if d.err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 || sec < 0 || sec > 1<<40 {
		d.fail(errMalformed)
		return time.Time{}
	}
	if sec == 0 && nsec == 0 {
		return time.Time{}
	}
	return time.Unix(sec+zeroUnix, int64(nsec)).UTC()
}

func (d *decoder) dec() money.Decimal {
	if d.err != nil {
		return money.Decimal{}
	}
	v, n, err := money.DecodeBinary(d.b[d.off:])
	if err != nil {
		d.fail(err)
		return money.Decimal{}
	}
	d.off += n
	return v
}

func (d *decoder) present() bool { return d.bool() }

// count reads a map or slice size that must fit in the bytes left (one byte per element).
func (d *decoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)-d.off) {
		d.fail(errTruncated)
		return 0
	}
	return int(v)
}
