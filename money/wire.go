package money

import "github.com/deskco/rfqdesk/internal/wire"

// Encode appends d's canonical binary form (AppendBinary) to e; a decimal with no binary
// form (not finite) is recorded as e's error.
func (d Decimal) Encode(e *wire.Encoder) { e.Appended(d.AppendBinary(e.B)) }

// ReadDecimal reads a Decimal written by Encode; a malformed one is recorded as r's error
// and reads as the zero Decimal.
func ReadDecimal(r *wire.Decoder) Decimal {
	v, n, err := DecodeBinary(r.Rest())
	if err != nil {
		r.Fail(err)
		return Decimal{}
	}
	r.Skip(n)
	return v
}
