package model

import (
	"math/big"
	"testing"
)

func rat(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, err := parseDec(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Worked examples written by hand from DECISIONS.md, Money and Formats.
func TestQuoteAmountRoundsHalfEvenAt10(t *testing.T) {
	for _, c := range []struct{ qty, price, want string }{
		{"0.5", "61234.5678", "30617.2839"},
		{"2", "1.5", "3"},
		{"0.0000000001", "0.5", "0"},            // 0.00000000005: a tie, 0 is even
		{"0.0000000003", "0.5", "0.0000000002"}, // 0.00000000015: a tie, 1 is odd so up
		{"0.0000000005", "0.5", "0.0000000002"}, // 0.00000000025: a tie, 2 is even so down
		{"0.0000000001", "0.6", "0.0000000001"}, // 0.00000000006: above the half
		{"0.0000000001", "0.4", "0"},            // 0.00000000004: below the half
		{"1.2345678901", "3", "3.7037036703"},
		{"0.3333333333", "0.3333333333", "0.1111111111"}, // 0.11111111108888888889
	} {
		got := mustFormat(quoteAmount(rat(t, c.qty), rat(t, c.price)))
		if got != c.want {
			t.Errorf("%s × %s = %s, want %s", c.qty, c.price, got, c.want)
		}
	}
}

func TestFeeTruncatesAt10(t *testing.T) {
	for _, c := range []struct {
		amount string
		bps    int
		want   string
	}{
		{"30617.2839", 25, "76.54320975"},
		{"1.2345678901", 25, "0.0030864197"}, // 0.003086419725 cut, not rounded
		{"0.0000000399", 25, "0"},            // 0.00000000009975: truncates to zero
		{"0.0000004", 25, "0.000000001"},
		{"10000", 10, "10"},
		{"1", 0, "0"},
		{"0.0000000001", 10000, "0.0000000001"},
	} {
		if got := mustFormat(fee(rat(t, c.amount), c.bps)); got != c.want {
			t.Errorf("fee(%s, %d bps) = %s, want %s", c.amount, c.bps, got, c.want)
		}
	}
}

func TestTierIsTheLargestMinimumAtOrBelow(t *testing.T) {
	tiers := []tier{{Min: big.NewRat(0, 1), Bps: 25}, {Min: big.NewRat(10000, 1), Bps: 10}, {Min: big.NewRat(1000000, 1), Bps: 5}}
	for _, c := range []struct {
		notional string
		want     int
	}{
		{"0", 25}, {"10", 25}, {"9999.9999999999", 25}, {"10000", 10}, {"10000.0000000001", 10},
		{"999999.9999999999", 10}, {"1000000", 5}, {"5000000", 5},
	} {
		if got := tierFor(tiers, rat(t, c.notional)); got != c.want {
			t.Errorf("tier of %s = %d bps, want %d", c.notional, got, c.want)
		}
	}
	// Tiers in any order, and a notional under all of them pays the base (lowest) tier.
	high := []tier{{Min: big.NewRat(500, 1), Bps: 20}, {Min: big.NewRat(100, 1), Bps: 30}}
	if got := tierFor(high, rat(t, "50")); got != 30 {
		t.Errorf("under every tier: %d bps, want the base tier's 30", got)
	}
	if got := tierFor(high, rat(t, "500")); got != 20 {
		t.Errorf("on the 500 boundary: %d bps, want 20", got)
	}
	if got := baseTier(high); got != 30 {
		t.Errorf("base tier %d, want 30", got)
	}
}

func TestNotionalAndMinimum(t *testing.T) {
	for _, c := range []struct{ qty, usd, want string }{
		{"0.001", "100000", "100"},
		{"0.0001", "100000", "10"},
		{"0.00009999", "100000", "9.999"},
		{"3", "0.25", "0.75"},
	} {
		if got := mustFormat(notional(rat(t, c.qty), rat(t, c.usd))); got != c.want {
			t.Errorf("notional %s × %s = %s, want %s", c.qty, c.usd, got, c.want)
		}
	}
}

func TestMinimalDecimalForm(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1.50", "1.5"}, {"2", "2"}, {"0.001", "0.001"}, {"100.0000000000", "100"}, {"0", "0"},
		{"0.0000000001", "0.0000000001"}, {"007", "7"}, {"12345678901234567890.5", "12345678901234567890.5"},
	} {
		if got := mustFormat(rat(t, c.in)); got != c.want {
			t.Errorf("%s is written %s, want %s", c.in, got, c.want)
		}
	}
	if _, err := formatDec(big.NewRat(1, 3)); err == nil {
		t.Error("1/3 formatted without rounding")
	}
	for _, bad := range []string{"", "1e5", "-1", ".5", "1.", "1.12345678901", "1,5", " 1", "0x10"} {
		if _, err := parseDec(bad); err == nil {
			t.Errorf("%q parsed as a wire decimal", bad)
		}
	}
}

func TestDust(t *testing.T) {
	one := rat(t, "1")
	for _, c := range []struct {
		sell     bool
		qa, fee  string
		bps      int
		wantDust bool
	}{
		{true, "0", "0", 25, true},                          // a zero leg
		{true, "0.0000000001", "0", 25, true},               // the fee truncates to zero
		{true, "0.0000000001", "0", 0, false},               // no fee due
		{true, "0.0000000001", "0.0000000001", 10000, true}, // the taker's proceeds are zero
		{false, "0.0000000001", "0.0000000001", 10000, false},
		{true, "100", "0.25", 25, false},
	} {
		got := dust(c.sell, one, rat(t, c.qa), rat(t, c.fee), c.bps) != ""
		if got != c.wantDust {
			t.Errorf("dust(sell %v, %s, fee %s, %d bps) = %v", c.sell, c.qa, c.fee, c.bps, got)
		}
	}
}
