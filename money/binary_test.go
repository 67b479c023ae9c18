package money

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestBinaryRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in   Decimal
		want string
	}{
		{Zero, "0"},
		{MustParse("0.00"), "0"},
		{MustParse("1.50"), "1.5"},
		{MustParse("60000"), "60000"},
		{MustParse("0.0000000001"), "0.0000000001"},
		{MustParse("123456789012345678901234567890.1234567890"), "123456789012345678901234567890.123456789"},
		{MustParse("1").Sub(MustParse("2.25")), "-1.25"},
		{MustParse("0.01").MulHalfEven(MustParse("60000")), "600"},
	} {
		b, err := tc.in.AppendBinary(nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.want, err)
		}
		got, n, err := DecodeBinary(b)
		if err != nil || n != len(b) || got.String() != tc.want {
			t.Errorf("%s: decoded %s (%d of %d bytes, %v)", tc.want, got, n, len(b), err)
		}
		again, _ := got.AppendBinary(nil)
		if !bytes.Equal(again, b) {
			t.Errorf("%s: re-encoding differs: % x vs % x", tc.want, again, b)
		}
	}
}

// TestBinaryCanonical checks that equal numbers encode alike and that non-canonical or
// truncated bytes are refused.
func TestBinaryCanonical(t *testing.T) {
	a, _ := MustParse("1.5").AppendBinary(nil)
	b, _ := MustParse("1.5000").AppendBinary(nil)
	if !bytes.Equal(a, b) {
		t.Fatalf("1.5 and 1.5000 encode differently: % x vs % x", a, b)
	}
	for _, bad := range [][]byte{
		nil,
		{0},
		{1, 0},       // negative zero
		{4, 0},       // zero with an exponent
		{0, 10},      // trailing zero in the coefficient
		{2, 1, 5},    // a big coefficient that fits 64 bits
		{2, 9, 0, 1}, // truncated
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // varint overflow
	} {
		if d, _, err := DecodeBinary(bad); err == nil {
			t.Errorf("% x decoded as %s", bad, d)
		}
	}
}

func TestBinaryProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		intPart := rapid.StringMatching(`[0-9]{1,30}`).Draw(t, "int")
		frac := rapid.StringMatching(`[0-9]{0,10}`).Draw(t, "frac")
		s := intPart
		if frac != "" {
			s += "." + frac
		}
		d := MustParse(s)
		if rapid.Bool().Draw(t, "negate") {
			d = Zero.Sub(d)
		}
		b, err := d.AppendBinary([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := DecodeBinary(b[6:])
		if err != nil || n != len(b)-6 || !got.Equal(d) || got.String() != d.String() {
			t.Fatalf("%s: decoded %s, %d of %d bytes, %v", d, got, n, len(b)-6, err)
		}
		if got.IsZero() && strings.HasPrefix(got.String(), "-") {
			t.Fatalf("negative zero from %s", d)
		}
	})
}

func BenchmarkBinary(b *testing.B) {
	d := MustParse("0.0123456789")
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = d.AppendBinary(buf[:0])
		if _, _, err := DecodeBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
}
