package wire

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// op is one value written and then read back by the round-trip property.
type op struct {
	kind int
	u    uint64
	i    int64
	s    string
	b    []byte
	ss   []string
	bb   [][]byte
	t    time.Time
}

func genBytes(t *rapid.T, label string) []byte {
	if rapid.Bool().Draw(t, label+"-nil") {
		return nil
	}
	return rapid.SliceOf(rapid.Byte()).Draw(t, label)
}

func genOp(t *rapid.T) op {
	o := op{kind: rapid.IntRange(0, 12).Draw(t, "kind")}
	o.u = rapid.Uint64().Draw(t, "u")
	o.i = rapid.Int64().Draw(t, "i")
	o.s = rapid.String().Draw(t, "s")
	o.b = genBytes(t, "b")
	if !rapid.Bool().Draw(t, "ss-nil") {
		o.ss = rapid.SliceOf(rapid.String()).Draw(t, "ss")
	}
	if !rapid.Bool().Draw(t, "bb-nil") {
		n := rapid.IntRange(0, 4).Draw(t, "bb-n")
		o.bb = make([][]byte, n)
		for k := range o.bb {
			o.bb[k] = genBytes(t, "bb")
		}
	}
	if !rapid.Bool().Draw(t, "t-zero") {
		sec := rapid.Int64Range(-62135596800, 1<<38).Draw(t, "sec")
		o.t = time.Unix(sec, rapid.Int64Range(0, 999999999).Draw(t, "nsec")).UTC()
	}
	return o
}

func (o op) write(e *Encoder) {
	switch o.kind {
	case 0:
		e.Uvarint(o.u)
	case 1:
		e.Varint(o.i)
	case 2:
		e.Int(int(o.i))
	case 3:
		e.U8(byte(o.u))
	case 4:
		e.U32(uint32(o.u))
	case 5:
		e.U64(o.u)
	case 6:
		e.Bool(o.u&1 == 1)
	case 7:
		e.Str(o.s)
	case 8:
		e.Bytes(o.b)
	case 9:
		e.Strs(o.ss)
	case 10:
		e.ByteSlices(o.bb)
	case 11:
		e.Time(o.t)
	case 12:
		e.Len(len(o.b), o.b == nil)
		e.Raw(o.b)
	}
}

// sameSlices fails the test unless got and want are both nil or both not, and equal element
// by element as same says.
func sameSlices[E any](t *rapid.T, what string, got, want []E, same func(a, b E) bool) {
	if (got == nil) != (want == nil) || len(got) != len(want) {
		t.Fatalf("%s: got %#v, want %#v", what, got, want)
	}
	for k := range got {
		if !same(got[k], want[k]) {
			t.Fatalf("%s[%d]: got %#v, want %#v", what, k, got[k], want[k])
		}
	}
}

func (o op) check(t *rapid.T, d *Decoder) {
	var got, want any
	switch o.kind {
	case 0:
		got, want = d.Uvarint(), o.u
	case 1:
		got, want = d.Varint(), o.i
	case 2:
		got, want = d.Int(), int(o.i)
	case 3:
		got, want = d.U8(), byte(o.u)
	case 4:
		got, want = d.U32(), uint32(o.u)
	case 5:
		got, want = d.U64(), o.u
	case 6:
		got, want = d.Bool(), o.u&1 == 1
	case 7:
		got, want = d.Str(), o.s
	case 8:
		b := d.Bytes()
		if (b == nil) != (o.b == nil) || !bytes.Equal(b, o.b) {
			t.Fatalf("Bytes: got %v, want %v", b, o.b)
		}
		return
	case 9:
		sameSlices(t, "Strs", d.Strs(), o.ss, func(a, b string) bool { return a == b })
		return
	case 10:
		sameSlices(t, "ByteSlices", d.ByteSlices(), o.bb, func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) })
		return
	case 11:
		tm := d.Time()
		if !tm.Equal(o.t) || tm.IsZero() != o.t.IsZero() {
			t.Fatalf("Time: got %v, want %v", tm, o.t)
		}
		return
	case 12:
		n, isNil := d.Len()
		raw := d.Raw(n)
		if isNil != (o.b == nil) || !bytes.Equal(raw, o.b) {
			t.Fatalf("Len+Raw: got %v (nil %v), want %v", raw, isNil, o.b)
		}
		return
	}
	if got != want {
		t.Fatalf("kind %d: got %v, want %v", o.kind, got, want)
	}
}

// drawEncoded draws min to max values and encodes them in order; an encoding error fails
// the test.
func drawEncoded(t *rapid.T, min, max int) ([]op, []byte) {
	ops := rapid.SliceOfN(rapid.Custom(genOp), min, max).Draw(t, "ops")
	var e Encoder
	for _, o := range ops {
		o.write(&e)
	}
	if e.Err() != nil {
		t.Fatal(e.Err())
	}
	return ops, e.B
}

// TestRoundTrip: any sequence of values reads back as written, with nothing left over,
// through both the plain and the bulk decoder.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops, b := drawEncoded(t, 0, 20)
		for _, d := range []*Decoder{NewDecoder(b), NewBulkDecoder(b)} {
			for _, o := range ops {
				o.check(t, d)
			}
			if d.Err() != nil || d.Left() != 0 {
				t.Fatalf("err %v, %d bytes left", d.Err(), d.Left())
			}
		}
	})
}

// TestTruncatedNeverPanics: reading any proper prefix of an encoding never panics and never
// reads past the input.
func TestTruncatedNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops, b := drawEncoded(t, 1, 10)
		cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut")
		d := NewDecoder(b[:cut])
		for _, o := range ops {
			switch o.kind {
			case 9:
				d.Strs()
			case 10:
				d.ByteSlices()
			default:
				d.Bytes()
				d.Time()
			}
		}
		if d.Offset() > cut {
			t.Fatalf("read %d bytes of %d", d.Offset(), cut)
		}
	})
}

// TestHostileLength: a length larger than the input is refused before any allocation.
func TestHostileLength(t *testing.T) {
	var e Encoder
	e.Uvarint(1 << 40)
	d := NewDecoder(e.B)
	if n, _ := d.Len(); n != 0 || !errors.Is(d.Err(), ErrTruncated) {
		t.Fatalf("Len = %d, err %v", n, d.Err())
	}
	d = NewDecoder(e.B)
	if s := d.Str(); s != "" || !errors.Is(d.Err(), ErrTruncated) {
		t.Fatalf("Str = %q, err %v", s, d.Err())
	}
}

// TestBoolMalformed: a boolean byte other than 0 or 1 is an error.
func TestBoolMalformed(t *testing.T) {
	d := NewDecoder([]byte{2})
	if d.Bool() || !errors.Is(d.Err(), ErrMalformed) {
		t.Fatalf("err %v", d.Err())
	}
}

// TestRestSkip: a value with its own binary form is read from Rest and passed over with
// Skip; Skip past the end is an error, and Rest is nil after one.
func TestRestSkip(t *testing.T) {
	var e Encoder
	e.Appended(append(e.B, 7), nil)
	e.U8(9)
	d := NewDecoder(e.B)
	if d.Rest()[0] != 7 {
		t.Fatalf("Rest = %v", d.Rest())
	}
	d.Skip(1)
	if d.U8() != 9 || d.Err() != nil {
		t.Fatalf("err %v", d.Err())
	}
	d.Skip(1)
	if !errors.Is(d.Err(), ErrTruncated) || d.Rest() != nil {
		t.Fatalf("err %v, rest %v", d.Err(), d.Rest())
	}
	var f Encoder
	f.Appended([]byte{1}, ErrMalformed)
	if !errors.Is(f.Err(), ErrMalformed) {
		t.Fatalf("Appended error lost: %v", f.Err())
	}
}

// TestStream: a stream encoder hands its buffer to the writer past FlushAt and on Flush,
// and the bytes written are the encoding.
func TestStream(t *testing.T) {
	var out bytes.Buffer
	e := NewStreamEncoder(&out, nil)
	var want Encoder
	for i := range 20000 {
		e.Str("value")
		e.Uvarint(uint64(i))
		want.Str("value")
		want.Uvarint(uint64(i))
		e.FlushSome()
		if len(e.B) > FlushAt+16 {
			t.Fatalf("buffer grew to %d", len(e.B))
		}
	}
	e.Flush()
	if e.Err() != nil || !bytes.Equal(out.Bytes(), want.B) {
		t.Fatalf("err %v, %d bytes written, want %d", e.Err(), out.Len(), len(want.B))
	}
}

// TestOverlongVarint: an overlong varint is refused, so an accepted encoding is canonical.
func TestOverlongVarint(t *testing.T) {
	for _, b := range [][]byte{{0x80, 0x00}, {0x81, 0x80, 0x00}} {
		d := NewDecoder(b)
		if d.Uvarint(); !errors.Is(d.Err(), ErrMalformed) {
			t.Errorf("%x: err %v", b, d.Err())
		}
	}
}

// TestTimeOutOfRange: a time before year 1 is an encoding error.
func TestTimeOutOfRange(t *testing.T) {
	var e Encoder
	e.Time(time.Unix(-62135596801, 0))
	if e.Err() == nil {
		t.Fatal("no error")
	}
}
