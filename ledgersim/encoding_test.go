package ledgersim

import (
	"testing"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// TestDecText checks the allocation-free decimal text and fraction digits against
// money's own, on parsed amounts and on sums, differences and products of them
// (negative values, many digits, coefficients beyond 64 bits, zero).
func TestDecText(t *testing.T) {
	amount := rapid.Custom(func(t *rapid.T) money.Decimal {
		s := rapid.StringMatching(`(0|[1-9][0-9]{0,20})(\.[0-9]{1,10})?`).Draw(t, "text")
		return money.MustParse(s)
	})
	rapid.Check(t, func(t *rapid.T) {
		a, b := amount.Draw(t, "a"), amount.Draw(t, "b")
		for _, d := range []money.Decimal{a, b, a.Sub(b), a.Add(b), a.MulHalfEven(b), money.Zero, a.Sub(a)} {
			if got, want := string(appendDecText(nil, d)), d.String(); got != want {
				t.Fatalf("text %q, want %q", got, want)
			}
			if got, want := fractionDigits(d), d.FractionDigits(); got != want {
				t.Fatalf("fraction digits of %s: %d, want %d", d, got, want)
			}
		}
	})
}
