// Package money is the desk's exact decimal type for every amount and price.
//
// A Decimal wraps an apd decimal. Values that enter from the wire are parsed strictly
// (the SPEC.md grammar ^\d+(\.\d{1,10})?$ and nothing else), every value this package
// produces has at most MaxFractionDigits fractional digits, and values leave in the
// minimal plain form of DECISIONS.md ("1.50" leaves as "1.5", "2" as "2", never an
// exponent). A float never touches a Decimal.
//
// Decimals are immutable values: every operation returns a fresh Decimal and never
// writes to its operands, so copying a Decimal by assignment is safe. Compare them with
// Cmp or Equal, never with ==.
package money

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"
)

// MaxFractionDigits is the number of fractional digits every amount and price carries at most.
const MaxFractionDigits = 10

// MaxIntegerDigits bounds the integer part of a parsed amount. The wire grammar has no
// bound of its own; this one keeps arithmetic exact and cheap (10^30 of any instrument is
// far beyond any supply) and makes a megabyte of digits a validation error, not work.
const MaxIntegerDigits = 30

// workPrecision is the number of significant digits of the arithmetic contexts. Operands
// have at most MaxIntegerDigits integer digits when they come from the wire and at most
// MaxFractionDigits fractional digits always, so sums and products of them fit with room
// to spare: no result of this package is ever rounded by the precision limit.
const workPrecision = 200

var (
	// exact traps Inexact: a result that would lose a digit is an error, never a silent rounding.
	exact = apd.Context{
		Precision:   workPrecision,
		MaxExponent: apd.MaxExponent,
		MinExponent: apd.MinExponent,
		Traps:       apd.DefaultTraps | apd.Inexact,
		Rounding:    apd.RoundHalfEven,
	}
	// halfEven and down round on Quantize to land results on MaxFractionDigits digits.
	halfEven = apd.Context{
		Precision:   workPrecision,
		MaxExponent: apd.MaxExponent,
		MinExponent: apd.MinExponent,
		Traps:       apd.DefaultTraps,
		Rounding:    apd.RoundHalfEven,
	}
	down = apd.Context{
		Precision:   workPrecision,
		MaxExponent: apd.MaxExponent,
		MinExponent: apd.MinExponent,
		Traps:       apd.DefaultTraps,
		Rounding:    apd.RoundDown,
	}
)

// Decimal is an exact decimal number: an amount or a price. The zero value is 0.
type Decimal struct {
	d apd.Decimal
}

// Errors returned by Parse, wrapped with the offending input.
var (
	// ErrSyntax means the text is not of the wire grammar ^\d+(\.\d{1,10})?$.
	ErrSyntax = errors.New("not a decimal string of the form 123 or 123.45 (digits, optional dot and 1 to 10 fractional digits)")
	// ErrTooLarge means the integer part has more than MaxIntegerDigits digits.
	ErrTooLarge = fmt.Errorf("more than %d integer digits", MaxIntegerDigits)
	// ErrDivisionByZero is returned by Quo when the divisor is zero.
	ErrDivisionByZero = errors.New("division by zero")
)

// Zero is the decimal 0.
var Zero = Decimal{}

// Parse reads a decimal in the strict wire grammar: one or more ASCII digits, optionally a
// dot followed by one to MaxFractionDigits digits. No sign, exponent, space, NaN, Inf,
// leading or trailing dot is accepted.
func Parse(s string) (Decimal, error) {
	if err := validate(s); err != nil {
		return Decimal{}, fmt.Errorf("decimal %q: %w", truncateForError(s), err)
	}
	var out Decimal
	if _, _, err := out.d.SetString(s); err != nil {
		// Unreachable for text that passed validate; kept so a library change cannot slip by.
		return Decimal{}, fmt.Errorf("decimal %q: %w", truncateForError(s), err)
	}
	return out, nil
}

// validate checks s byte by byte against ^\d+(\.\d{1,10})?$ and the integer-digit bound.
func validate(s string) error {
	intDigits := 0
	i := 0
	for ; i < len(s) && isDigit(s[i]); i++ {
		intDigits++
	}
	if intDigits == 0 {
		return ErrSyntax
	}
	if i < len(s) {
		if s[i] != '.' {
			return ErrSyntax
		}
		i++
		frac := 0
		for ; i < len(s) && isDigit(s[i]); i++ {
			frac++
		}
		if i != len(s) || frac == 0 || frac > MaxFractionDigits {
			return ErrSyntax
		}
	}
	if significantIntegerDigits(s[:intDigits]) > MaxIntegerDigits {
		return ErrTooLarge
	}
	return nil
}

// significantIntegerDigits counts the digits of an integer part without its leading zeros.
func significantIntegerDigits(s string) int {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// truncateForError keeps error messages bounded whatever the input size.
func truncateForError(s string) string {
	const max = 48
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// MustParse is Parse for constants in code and tests; it panics on a malformed literal.
func MustParse(s string) Decimal {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// FromInt returns the decimal value of an integer.
func FromInt(i int64) Decimal {
	var out Decimal
	out.d.SetInt64(i)
	return out
}

// String formats d in the minimal plain form of the wire: no exponent, no trailing
// fractional zeros, no trailing dot. A negative value (possible only in internal
// arithmetic such as a difference) gets a leading '-'.
func (d Decimal) String() string {
	var r apd.Decimal
	r.Reduce(&d.d)
	return r.Text('f')
}

// Cmp compares d and x: -1 if d < x, 0 if equal, +1 if d > x.
func (d Decimal) Cmp(x Decimal) int { return d.d.Cmp(&x.d) }

// Equal reports whether d and x are the same number ("1.5" equals "1.50").
func (d Decimal) Equal(x Decimal) bool { return d.Cmp(x) == 0 }

// Sign returns -1, 0 or +1 by the sign of d.
func (d Decimal) Sign() int { return d.d.Sign() }

// IsZero reports whether d is 0.
func (d Decimal) IsZero() bool { return d.d.IsZero() }

// Add returns d + x exactly.
func (d Decimal) Add(x Decimal) Decimal {
	var out Decimal
	mustExact(exact.Add(&out.d, &d.d, &x.d))
	return out
}

// Sub returns d - x exactly; the result may be negative.
func (d Decimal) Sub(x Decimal) Decimal {
	var out Decimal
	mustExact(exact.Sub(&out.d, &d.d, &x.d))
	return out
}

// Min returns the smaller of d and x.
func (d Decimal) Min(x Decimal) Decimal {
	if d.Cmp(x) <= 0 {
		return d
	}
	return x
}

// MulHalfEven returns d × x rounded half-even to MaxFractionDigits fractional digits:
// DECISIONS.md's rule for a trade's quote-instrument amount (qty × price).
func (d Decimal) MulHalfEven(x Decimal) Decimal {
	return mulRounded(&halfEven, d, x)
}

// MulDown returns d × x truncated (rounded toward zero) to MaxFractionDigits fractional digits.
func (d Decimal) MulDown(x Decimal) Decimal {
	return mulRounded(&down, d, x)
}

func mulRounded(ctx *apd.Context, d, x Decimal) Decimal {
	var product apd.Decimal
	mustExact(exact.Mul(&product, &d.d, &x.d))
	return quantize(ctx, &product)
}

// Fee returns amount × bps / 10000 truncated to MaxFractionDigits fractional digits:
// DECISIONS.md's fee rule. A negative bps is a programming error and yields 0.
func Fee(amount Decimal, bps int) Decimal {
	if bps <= 0 {
		return Zero
	}
	var rate Decimal
	rate.d.SetFinite(int64(bps), -4) // bps / 10000, exact
	return amount.MulDown(rate)
}

// QuoHalfEven returns d / x rounded half-even to MaxFractionDigits fractional digits, as
// used for a pair's reference price (usdPrice(base) / usdPrice(quote)).
//
// The quotient is first computed to workPrecision significant digits. For operands of at
// most 40 digits that cannot double-round: a quotient that is not exactly on a half-way
// point lies further than 10^-52 from it, far beyond the 200 digits kept.
func (d Decimal) QuoHalfEven(x Decimal) (Decimal, error) {
	if x.IsZero() {
		return Decimal{}, ErrDivisionByZero
	}
	var q apd.Decimal
	if _, err := halfEven.Quo(&q, &d.d, &x.d); err != nil {
		return Decimal{}, fmt.Errorf("divide %s by %s: %w", d, x, err)
	}
	return quantize(&halfEven, &q), nil
}

// RoundHalfEven rounds d half-even to MaxFractionDigits fractional digits.
func (d Decimal) RoundHalfEven() Decimal { return quantize(&halfEven, &d.d) }

// quantize lands x on exactly MaxFractionDigits fractional digits with ctx's rounding.
func quantize(ctx *apd.Context, x *apd.Decimal) Decimal {
	var out Decimal
	if x.Exponent >= -MaxFractionDigits {
		out.d.Set(x)
		return out
	}
	if _, err := ctx.Quantize(&out.d, x, -MaxFractionDigits); err != nil {
		panic(fmt.Sprintf("money: quantize %s: %v", x.Text('f'), err))
	}
	return out
}

// mustExact turns an arithmetic error into a panic. Operands built by this package have
// at most MaxFractionDigits fractional digits and are far below 10^(workPrecision-20), so
// exact addition, subtraction and multiplication of them cannot fail; a failure is a
// programming error (an operand that did not come from this package's constructors).
func mustExact(_ apd.Condition, err error) {
	if err != nil {
		panic(fmt.Sprintf("money: exact arithmetic failed: %v", err))
	}
}

// FractionDigits returns how many fractional digits d needs in its minimal form.
func (d Decimal) FractionDigits() int {
	var r apd.Decimal
	r.Reduce(&d.d)
	if r.Exponent >= 0 {
		return 0
	}
	return int(-r.Exponent)
}

// errNotWire is returned when a value that cannot be written on the wire is encoded.
var errNotWire = errors.New("money: negative amounts have no wire form")

// MarshalText writes the minimal plain form. A negative value is an error: the wire
// grammar has no sign, so a negative amount must never leave the desk.
func (d Decimal) MarshalText() ([]byte, error) {
	if d.Sign() < 0 {
		return nil, errNotWire
	}
	return []byte(d.String()), nil
}

// UnmarshalText parses the strict wire grammar (see Parse).
func (d *Decimal) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes d as a JSON string in the minimal plain form.
func (d Decimal) MarshalJSON() ([]byte, error) {
	text, err := d.MarshalText()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(text)+2)
	out = append(out, '"')
	out = append(out, text...)
	return append(out, '"'), nil
}

// ErrNotString means a JSON amount was not a string (a number, null, object...).
var ErrNotString = errors.New("an amount must be a JSON string such as \"12.5\", never a number")

// UnmarshalJSON accepts only a JSON string holding the strict wire grammar. A JSON number
// is refused, so a float never becomes an amount. The string may not contain escapes: the
// grammar's characters need none.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return ErrNotString
	}
	return d.UnmarshalText(b[1 : len(b)-1])
}
