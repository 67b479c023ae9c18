package money

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestParseAccepts(t *testing.T) {
	cases := []struct{ in, out string }{
		{"0", "0"},
		{"1", "1"},
		{"1.5", "1.5"},
		{"1.50", "1.5"},
		{"0.001", "0.001"},
		{"2.0000000000", "2"},
		{"007", "7"},
		{"0.0000000001", "0.0000000001"},
		{"100", "100"},
		{"123456789012345678901234567890.1234567891", "123456789012345678901234567890.1234567891"},
		{"0000000000000000000000000000000000001", "1"}, // leading zeros do not count toward the bound
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			d, err := Parse(c.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.in, err)
			}
			if got := d.String(); got != c.out {
				t.Fatalf("Parse(%q).String() = %q, want %q", c.in, got, c.out)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", ErrSyntax},
		{"+1", ErrSyntax},
		{"-1", ErrSyntax},
		{"-0", ErrSyntax},
		{"1e5", ErrSyntax},
		{"1E5", ErrSyntax},
		{".5", ErrSyntax},
		{"5.", ErrSyntax},
		{" 1", ErrSyntax},
		{"1 ", ErrSyntax},
		{"1,5", ErrSyntax},
		{"NaN", ErrSyntax},
		{"Inf", ErrSyntax},
		{"infinity", ErrSyntax},
		{"0x10", ErrSyntax},
		{"1.2.3", ErrSyntax},
		{"1.00000000001", ErrSyntax}, // 11 fractional digits
		{"١", ErrSyntax},             // a non-ASCII digit
		{"1_000", ErrSyntax},
		{"1234567890123456789012345678901", ErrTooLarge}, // 31 integer digits
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			_, err := Parse(c.in)
			if !errors.Is(err, c.want) {
				t.Fatalf("Parse(%q) error = %v, want %v", c.in, err, c.want)
			}
		})
	}
}

func TestParseErrorIsBounded(t *testing.T) {
	_, err := Parse(strings.Repeat("9", 1<<20) + "x")
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("error for a huge input must exist and stay short, got %d bytes", len(err.Error()))
	}
}

func TestJSON(t *testing.T) {
	type body struct {
		Amount Decimal `json:"amount"`
	}
	var b body
	if err := json.Unmarshal([]byte(`{"amount":"12.50"}`), &b); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"amount":"12.5"}` {
		t.Fatalf("got %s", out)
	}
	for _, bad := range []string{`{"amount":12.5}`, `{"amount":null}`, `{"amount":"1e3"}`, `{"amount":"\u0031"}`, `{"amount":true}`} {
		if err := json.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
	if _, err := json.Marshal(body{Amount: FromInt(1).Sub(FromInt(2))}); err == nil {
		t.Fatal("a negative amount must not marshal")
	}
}

func TestRounding(t *testing.T) {
	cases := []struct {
		name, a, b, halfEven, down string
	}{
		{"exact", "2", "3.5", "7", "7"},
		{"half to even down", "0.00000000005", "1", "0", "0"},
		{"half to even up", "0.00000000015", "1", "0.0000000002", "0.0000000001"},
		{"above half", "0.000000000051", "1", "0.0000000001", "0"},
		{"qty x price", "1.2345678901", "3.3333333333", "4.1152263003", "4.1152263002"},
		{"large", "123456789012345678901234567890", "123456789012345678901234567890", "15241578753238836750495351562536198787501905199875019052100", "15241578753238836750495351562536198787501905199875019052100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := mustExactDecimal(t, c.a)
			b := MustParse(c.b)
			if got := a.MulHalfEven(b).String(); got != c.halfEven {
				t.Errorf("MulHalfEven = %s, want %s", got, c.halfEven)
			}
			if got := a.MulDown(b).String(); got != c.down {
				t.Errorf("MulDown = %s, want %s", got, c.down)
			}
		})
	}
}

// mustExactDecimal builds a Decimal from text that may have more than 10 fractional digits,
// for rounding tests only.
func mustExactDecimal(t *testing.T, s string) Decimal {
	t.Helper()
	var d Decimal
	if _, _, err := d.d.SetString(s); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFee(t *testing.T) {
	cases := []struct {
		amount string
		bps    int
		want   string
	}{
		{"1000", 25, "2.5"},
		{"1", 1, "0.0001"},
		{"0.0000001", 1, "0"},                // truncated to dust
		{"0.0000099999", 10, "0.0000000099"}, // truncated, not rounded
		{"500", 0, "0"},
		{"500", -3, "0"},
	}
	for _, c := range cases {
		if got := Fee(MustParse(c.amount), c.bps).String(); got != c.want {
			t.Errorf("Fee(%s, %d) = %s, want %s", c.amount, c.bps, got, c.want)
		}
	}
}

func TestQuo(t *testing.T) {
	cases := []struct{ a, b, want string }{
		{"100000", "1", "100000"},
		{"1", "3", "0.3333333333"},
		{"2", "3", "0.6666666667"},
		{"3000", "100000", "0.03"},
		{"0.00000000005", "1", "0"},
		{"0.00000000015", "1", "0.0000000002"},
	}
	for _, c := range cases {
		got, err := mustExactDecimal(t, c.a).QuoHalfEven(MustParse(c.b))
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != c.want {
			t.Errorf("%s / %s = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	if _, err := FromInt(1).QuoHalfEven(Zero); !errors.Is(err, ErrDivisionByZero) {
		t.Fatalf("division by zero: %v", err)
	}
}

// canonical draws a string in the minimal plain form: parse∘format must be the identity on it.
func canonical() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		intPart := rapid.StringMatching(`0|[1-9][0-9]{0,29}`).Draw(t, "int")
		if rapid.Bool().Draw(t, "hasFrac") {
			return intPart + "." + rapid.StringMatching(`[0-9]{0,9}[1-9]`).Draw(t, "frac")
		}
		return intPart
	})
}

func wireDecimal() *rapid.Generator[Decimal] {
	return rapid.Custom(func(t *rapid.T) Decimal {
		return MustParse(canonical().Draw(t, "d"))
	})
}

func TestPropertyParseFormatIdentity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := canonical().Draw(t, "s")
		d, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if d.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, d.String())
		}
		b, err := json.Marshal(d)
		if err != nil || string(b) != fmt.Sprintf("%q", s) {
			t.Fatalf("json %s %v", b, err)
		}
	})
}

func TestPropertyArithmeticLaws(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := wireDecimal().Draw(t, "a"), wireDecimal().Draw(t, "b"), wireDecimal().Draw(t, "c")
		if !a.Add(b).Equal(b.Add(a)) {
			t.Fatal("addition does not commute")
		}
		if !a.Add(b).Add(c).Equal(a.Add(b.Add(c))) {
			t.Fatal("addition does not associate")
		}
		if !a.Add(b).Sub(b).Equal(a) {
			t.Fatal("(a+b)-b != a")
		}
		if !a.MulHalfEven(FromInt(1)).Equal(a) || !a.MulHalfEven(b).Equal(b.MulHalfEven(a)) {
			t.Fatal("multiplication identity or commutativity broken")
		}
		if a.MulHalfEven(b).FractionDigits() > MaxFractionDigits || a.MulDown(b).FractionDigits() > MaxFractionDigits {
			t.Fatal("a product left more than 10 fractional digits")
		}
		// Truncation never exceeds half-even rounding, which differ by at most one unit in the last place.
		ulp := MustParse("0.0000000001")
		diff := a.MulHalfEven(b).Sub(a.MulDown(b))
		if diff.Sign() < 0 || diff.Cmp(ulp) > 0 {
			t.Fatalf("half-even minus truncation = %s", diff)
		}
		// A fee never exceeds its amount and is never negative.
		bps := rapid.IntRange(0, 10000).Draw(t, "bps")
		f := Fee(a, bps)
		if f.Sign() < 0 || f.Cmp(a) > 0 {
			t.Fatalf("fee %s of %s at %d bps", f, a, bps)
		}
		if got := a.Cmp(b); got != -b.Cmp(a) {
			t.Fatal("Cmp is not antisymmetric")
		}
	})
}
