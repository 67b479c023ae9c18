package money

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cockroachdb/apd/v3"
)

// Binary form of a Decimal (used by the desk's snapshots and journal records):
//
//	uvarint header = zigzag(exponent)<<2 | big<<1 | negative
//	coefficient    = uvarint (big == 0), or uvarint length + big-endian bytes (big == 1)
//
// The value is always written reduced (no trailing zeros in the coefficient, zero as
// coefficient 0 with exponent 0 and no sign), so equal numbers have equal bytes: "1.50"
// and "1.5" encode alike, as they format alike. DecodeBinary accepts only that canonical
// form, so every accepted encoding re-encodes to the same bytes.

// Bounds of the binary form: far beyond any value the desk makes, they keep a hostile
// encoding from becoming a huge allocation or a slow number.
const (
	maxBinaryExponent = 400
	maxBinaryCoeffLen = 128 // bytes of a big coefficient (~308 decimal digits)
)

// ErrBadBinary means bytes are not a canonical binary Decimal.
var ErrBadBinary = errors.New("money: not a canonical binary decimal")

// AppendBinary appends the canonical binary form of d to b.
func (d Decimal) AppendBinary(b []byte) ([]byte, error) {
	x := &d.d
	if x.Form != apd.Finite {
		return b, fmt.Errorf("money: %s has no binary form", x.Form)
	}
	if x.IsZero() {
		return append(b, 0, 0), nil
	}
	var r apd.Decimal
	if x.Coeff.IsUint64() && x.Coeff.Uint64()%10 != 0 {
		r.Exponent, r.Negative = x.Exponent, x.Negative // already reduced
		return appendParts(b, r.Exponent, r.Negative, x.Coeff.Uint64(), nil), nil
	}
	r.Reduce(x)
	if r.Coeff.IsUint64() {
		return appendParts(b, r.Exponent, r.Negative, r.Coeff.Uint64(), nil), nil
	}
	return appendParts(b, r.Exponent, r.Negative, 0, r.Coeff.Bytes()), nil
}

func appendParts(b []byte, exp int32, neg bool, small uint64, big []byte) []byte {
	h := zigzag(int64(exp)) << 2
	if neg {
		h |= 1
	}
	if big != nil {
		h |= 2
		b = binary.AppendUvarint(b, h)
		b = binary.AppendUvarint(b, uint64(len(big)))
		return append(b, big...)
	}
	b = binary.AppendUvarint(b, h)
	return binary.AppendUvarint(b, small)
}

// uvarint reads a minimally encoded uvarint (an overlong encoding of the same number is
// refused, so that every value has one encoding).
func uvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n > 0 && n != len(binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64), v)) {
		return 0, 0
	}
	return v, n
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// DecodeBinary reads one canonical binary Decimal from the start of b and returns it with
// the number of bytes it took. It never panics, whatever b holds.
func DecodeBinary(b []byte) (Decimal, int, error) {
	h, n := uvarint(b)
	if n <= 0 {
		return Decimal{}, 0, ErrBadBinary
	}
	neg, isBig := h&1 == 1, h&2 == 2
	exp := unzigzag(h >> 2)
	if exp < -maxBinaryExponent || exp > maxBinaryExponent {
		return Decimal{}, 0, ErrBadBinary
	}
	var out Decimal
	out.d.Exponent, out.d.Negative = int32(exp), neg
	if !isBig {
		c, m := uvarint(b[n:])
		if m <= 0 {
			return Decimal{}, 0, ErrBadBinary
		}
		n += m
		if c == 0 {
			if neg || exp != 0 {
				return Decimal{}, 0, ErrBadBinary
			}
			return Decimal{}, n, nil
		}
		if c%10 == 0 {
			return Decimal{}, 0, ErrBadBinary
		}
		out.d.Coeff.SetUint64(c)
		return out, n, nil
	}
	l, m := uvarint(b[n:])
	if m <= 0 || l > maxBinaryCoeffLen || l > uint64(len(b)-n-m) {
		return Decimal{}, 0, ErrBadBinary
	}
	n += m
	raw := b[n : n+int(l)]
	n += int(l)
	// Canonical: no leading zero byte, and more than 64 bits (else it is written small).
	if len(raw) == 0 || raw[0] == 0 || len(raw)*8-bits.LeadingZeros8(raw[0]) <= 64 {
		return Decimal{}, 0, ErrBadBinary
	}
	out.d.Coeff.SetBytes(raw)
	var ten, rem apd.BigInt
	ten.SetInt64(10)
	rem.Rem(&out.d.Coeff, &ten)
	if rem.Sign() == 0 {
		return Decimal{}, 0, ErrBadBinary
	}
	return out, n, nil
}
