// Package wire holds the project's binary encoding primitives: the one place where
// integers, strings, byte slices, lists, times and binary-marshalled values are turned into
// bytes and back. The desk's snapshots and journal records, the ledger simulator's snapshots
// and records, and its canonical hash encodings are all written with an Encoder and read
// with a Decoder.
//
// Variable-length values (Uvarint, Varint, Int, Str, Bytes, Len, Time) are the compact
// forms of the persistent encodings; fixed-width big-endian integers (U8, U32, U64) serve
// the hash encodings, whose layout is a signing contract. The encoding of a value is a
// function of its content only, so every encoding is fit for a digest.
//
// The package is a leaf: it imports nothing from the project.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"
)

// Errors a Decoder reports (wrapped with the byte offset where decoding failed).
var (
	// ErrTruncated is the error of input that ends before the value it announces.
	ErrTruncated = errors.New("truncated binary data")
	// ErrMalformed is the error of bytes that encode no value of the expected kind.
	ErrMalformed = errors.New("malformed binary data")
)

// Encoder appends binary values to B; the first error is kept in Err. With a writer set
// (NewStreamEncoder), FlushSome hands the buffer to it whenever it grows past FlushAt.
type Encoder struct {
	// B is the encoding so far.
	B   []byte
	err error
	w   io.Writer
}

// FlushAt is the buffer size above which FlushSome hands the buffer to the writer.
const FlushAt = 64 << 10

// NewStreamEncoder returns an Encoder that FlushSome and Flush empty into w.
func NewStreamEncoder(w io.Writer, buf []byte) *Encoder { return &Encoder{B: buf[:0], w: w} }

// Err returns the first error met while encoding (a failed marshaller or write).
func (e *Encoder) Err() error { return e.err }

// Fail records err as the encoder's error unless one is already kept.
func (e *Encoder) Fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// FlushSome writes the buffer out when there is a writer and the buffer is large.
func (e *Encoder) FlushSome() {
	if e.w != nil && len(e.B) >= FlushAt {
		e.Flush()
	}
}

// Flush writes the whole buffer to the writer, if any, and empties it.
func (e *Encoder) Flush() {
	if e.w == nil || len(e.B) == 0 {
		return
	}
	if _, err := e.w.Write(e.B); err != nil {
		e.Fail(fmt.Errorf("write encoding: %w", err))
	}
	e.B = e.B[:0]
}

// Uvarint appends an unsigned varint.
func (e *Encoder) Uvarint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// Varint appends a zig-zag signed varint.
func (e *Encoder) Varint(v int64) { e.B = binary.AppendVarint(e.B, v) }

// Int appends an int as a signed varint.
func (e *Encoder) Int(v int) { e.B = binary.AppendVarint(e.B, int64(v)) }

// U8 appends one byte.
func (e *Encoder) U8(v byte) { e.B = append(e.B, v) }

// U32 appends a big-endian uint32.
func (e *Encoder) U32(v uint32) { e.B = binary.BigEndian.AppendUint32(e.B, v) }

// U64 appends a big-endian uint64.
func (e *Encoder) U64(v uint64) { e.B = binary.BigEndian.AppendUint64(e.B, v) }

// Raw appends bytes as they are, with no length.
func (e *Encoder) Raw(p []byte) { e.B = append(e.B, p...) }

// RawStr appends a string's bytes as they are, with no length.
func (e *Encoder) RawStr(s string) { e.B = append(e.B, s...) }

// Bool appends 1 for true, 0 for false.
func (e *Encoder) Bool(v bool) {
	if v {
		e.B = append(e.B, 1)
	} else {
		e.B = append(e.B, 0)
	}
}

// Str appends a uvarint length and the string's bytes.
func (e *Encoder) Str(s string) {
	e.B = binary.AppendUvarint(e.B, uint64(len(s)))
	e.B = append(e.B, s...)
}

// Bytes appends a byte slice, keeping nil apart from empty (length+1, 0 for nil).
func (e *Encoder) Bytes(p []byte) {
	if p == nil {
		e.B = append(e.B, 0)
		return
	}
	e.B = binary.AppendUvarint(e.B, uint64(len(p))+1)
	e.B = append(e.B, p...)
}

// Len appends a slice's length, keeping nil apart from empty (length+1, 0 for nil).
func (e *Encoder) Len(n int, isNil bool) {
	if isNil {
		e.B = append(e.B, 0)
		return
	}
	e.B = binary.AppendUvarint(e.B, uint64(n)+1)
}

// Strs appends a string slice, keeping nil apart from empty.
func (e *Encoder) Strs(s []string) {
	e.Len(len(s), s == nil)
	for _, x := range s {
		e.Str(x)
	}
}

// ByteSlices appends a slice of byte slices, keeping nil apart from empty at both levels.
func (e *Encoder) ByteSlices(s [][]byte) {
	e.Len(len(s), s == nil)
	for _, x := range s {
		e.Bytes(x)
	}
}

// zeroUnix is time.Time{}.Unix(): times are written as seconds since then, so the zero
// time is two bytes and every time.Time instant is exact.
const zeroUnix = -62135596800

// MaxSeconds bounds an encoded time: seconds since year 1 up to about year 34,800.
const MaxSeconds = 1 << 40

// Time appends an instant as seconds since year 1 (varint) and nanoseconds (uvarint); the
// location is not kept (times decode as UTC). A time before year 1 or past MaxSeconds is
// an error.
func (e *Encoder) Time(t time.Time) {
	sec := t.Unix() - zeroUnix
	if sec < 0 || sec > MaxSeconds {
		e.Fail(fmt.Errorf("time %s out of range", t))
	}
	e.Varint(sec)
	e.Uvarint(uint64(t.Nanosecond()))
}

// Appended takes the result of appending a value's own binary form to B, as in
// e.Appended(v.AppendBinary(e.B)): the buffer is kept, and an error is recorded. (A
// direct call, unlike one through an interface, does not move v to the heap.)
func (e *Encoder) Appended(b []byte, err error) {
	e.B = b
	if err != nil {
		e.Fail(fmt.Errorf("encode: %w", err))
	}
}

// Decoder reads what an Encoder wrote; the first error is kept, and every read after it
// returns a zero value. Lengths are checked against the bytes left, so a hostile length
// never becomes a large allocation.
type Decoder struct {
	b   []byte
	off int
	err error
	// text, when set, is a string copy of b: strings are cut from it instead of allocated.
	text string
	// arena hands out byte slices for decoded Bytes in bulk (with text set).
	arena []byte
}

// NewDecoder returns a Decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// NewBulkDecoder returns a Decoder over b for input holding many small strings and byte
// slices (a snapshot): it copies b once into a string and cuts every decoded string from it,
// and hands out small byte slices from shared blocks, instead of one allocation each.
func NewBulkDecoder(b []byte) *Decoder { return &Decoder{b: b, text: string(b)} }

// Reset points the decoder at b, keeping no state of earlier input.
func (d *Decoder) Reset(b []byte) { *d = Decoder{b: b} }

// Err returns the first error met, wrapped with its byte offset.
func (d *Decoder) Err() error { return d.err }

// Offset returns the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

// Left returns the number of bytes not yet read.
func (d *Decoder) Left() int { return len(d.b) - d.off }

// Fail records err (wrapped with the current offset) unless an error is already kept, and
// ends decoding: every later read returns a zero value.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("%w at byte %d", err, d.off)
	}
}

// Failf records a formatted ErrMalformed error, as Fail does.
func (d *Decoder) Failf(format string, args ...any) {
	d.Fail(fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...)))
}

// uvarintLen is the length of v's minimal uvarint encoding.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// Uvarint reads an unsigned varint; an overlong one (not the minimal encoding) is
// malformed, so that every accepted encoding re-encodes to the same bytes.
func (d *Decoder) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n == 0 {
		d.Fail(ErrTruncated)
		return 0
	}
	if n < 0 || n != uvarintLen(v) {
		d.Fail(ErrMalformed)
		return 0
	}
	d.off += n
	return v
}

// Varint reads a zig-zag signed varint (minimal, as Uvarint).
func (d *Decoder) Varint() int64 {
	u := d.Uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// Int reads a signed varint that must fit an int.
func (d *Decoder) Int() int {
	v := d.Varint()
	if int64(int(v)) != v {
		d.Fail(ErrMalformed)
		return 0
	}
	return int(v)
}

// U8 reads one byte.
func (d *Decoder) U8() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.Fail(ErrTruncated)
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

// U32 reads a big-endian uint32.
func (d *Decoder) U32() uint32 {
	p := d.Raw(4)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

// U64 reads a big-endian uint64.
func (d *Decoder) U64() uint64 {
	p := d.Raw(8)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

// Raw returns the next n bytes (not copied: they alias the input), nil on error.
func (d *Decoder) Raw(n int) []byte {
	start, end, ok := d.span(uint64(n))
	if !ok {
		return nil
	}
	return d.b[start:end:end]
}

// Bool reads a byte that must be 0 or 1.
func (d *Decoder) Bool() bool {
	switch c := d.U8(); c {
	case 0:
		return false
	case 1:
		return true
	default:
		d.off--
		d.Fail(ErrMalformed)
		return false
	}
}

// span reads past n bytes and returns their bounds.
func (d *Decoder) span(n uint64) (int, int, bool) {
	if d.err != nil {
		return 0, 0, false
	}
	if n > uint64(len(d.b)-d.off) {
		d.Fail(ErrTruncated)
		return 0, 0, false
	}
	start := d.off
	d.off += int(n)
	return start, d.off, true
}

// Str reads a string written by Encoder.Str.
func (d *Decoder) Str() string {
	start, end, ok := d.span(d.Uvarint())
	if !ok || start == end {
		return ""
	}
	if d.text != "" {
		return d.text[start:end]
	}
	return string(d.b[start:end])
}

// Bytes reads a byte slice written by Encoder.Bytes (nil and empty kept apart); the result
// is a copy.
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
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
	if size > 256 || d.text == "" { // only a bulk decoder's many small slices share an arena
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

// Len reads a slice length written by Encoder.Len; each element takes at least one byte,
// which bounds it by the bytes left.
func (d *Decoder) Len() (n int, isNil bool) {
	v := d.Uvarint()
	if v == 0 {
		return 0, true
	}
	if v-1 > uint64(len(d.b)-d.off) {
		d.Fail(ErrTruncated)
		return 0, true
	}
	return int(v - 1), false
}

// Count reads a map or list size written as a plain Uvarint, which must fit in the bytes
// left (one byte per element at least).
func (d *Decoder) Count() int {
	v := d.Uvarint()
	if v > uint64(len(d.b)-d.off) {
		d.Fail(ErrTruncated)
		return 0
	}
	return int(v)
}

// Strs reads a string slice written by Encoder.Strs.
func (d *Decoder) Strs() []string {
	n, isNil := d.Len()
	if isNil {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.Str()
	}
	return out
}

// ByteSlices reads a slice written by Encoder.ByteSlices.
func (d *Decoder) ByteSlices() [][]byte {
	n, isNil := d.Len()
	if isNil {
		return nil
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = d.Bytes()
	}
	return out
}

// Time reads an instant written by Encoder.Time, in UTC (the zero time stays zero).
func (d *Decoder) Time() time.Time {
	sec := d.Varint()
	nsec := d.Uvarint()
	if d.err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 || sec < 0 || sec > MaxSeconds {
		d.Fail(ErrMalformed)
		return time.Time{}
	}
	if sec == 0 && nsec == 0 {
		return time.Time{}
	}
	return time.Unix(sec+zeroUnix, int64(nsec)).UTC()
}

// Rest returns the bytes not yet read (not copied), nil after an error: a value with its
// own binary form is read from them, and Skip passes over what it used.
func (d *Decoder) Rest() []byte {
	if d.err != nil {
		return nil
	}
	return d.b[d.off:]
}

// Skip passes over n bytes that the caller read from Rest.
func (d *Decoder) Skip(n int) {
	if n < 0 {
		d.Fail(ErrMalformed)
		return
	}
	d.span(uint64(n))
}
