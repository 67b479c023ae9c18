package sim

import (
	"math/big"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// TestOracleArithmetic: the simulator's own arithmetic, on worked examples written from
// the documents (half-even at 10 digits, truncation, the fee tier of a notional).
func TestOracleArithmetic(t *testing.T) {
	r := func(s string) *big.Rat {
		v, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("bad rational %q", s)
		}
		return v
	}
	for _, tc := range []struct {
		in, want string
		half     bool
	}{
		{"0.00000000005", "0", true},               // half, to even 0
		{"0.00000000015", "0.0000000002", true},    // half, up to even 2
		{"0.00000000025", "0.0000000002", true},    // half, down to even 2
		{"49.98000000005", "49.98", true},          // half, 10th digit 0: down
		{"49.98000000011", "49.9800000001", false}, // under half: down
		{"49.98000000009", "49.9800000001", false}, // over half: up
		{"12.3456789012", "12.3456789012", false},  // exact
		{"-0.00000000015", "-0.0000000002", true},  // symmetric
		{"7.999999999951", "8.0000000000", false},  // carries
		{"1.00000000005000001", "1.0000000001", false},
	} {
		got, half := roundHalfEven10(r(tc.in))
		if got.Cmp(r(tc.want)) != 0 || half != tc.half {
			t.Errorf("roundHalfEven10(%s) = %s half=%v, want %s half=%v", tc.in, got.FloatString(12), half, tc.want, tc.half)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"0.12495", "0.12495"}, {"0.00000000009", "0"}, {"1.23456789019", "1.2345678901"},
	} {
		if got := trunc10(r(tc.in)); got.Cmp(r(tc.want)) != 0 {
			t.Errorf("trunc10(%s) = %s, want %s", tc.in, got.FloatString(12), tc.want)
		}
	}
	for _, tc := range []struct {
		qty, base string
		bps       int
	}{
		{"0.0001", "cbtc", 30},        // 10 USD
		{"0.00049999", "cbtc", 30},    // 49.999 USD
		{"0.0005", "cbtc", 20},        // 50 USD: on the boundary
		{"999.9999999999", "cc", 20},  // 199.99999999998 USD: a hair under 200
		{"1000", "cc", 10},            // 200 USD
		{"0.01", "cbtc", 5},           // 1000 USD
		{"5000", "cc", 5},             // 1000 USD
		{"4999.9999999999", "cc", 10}, // a hair under 1000
	} {
		if got, _ := expectedFeeBps(money.MustParse(tc.qty), tc.base); got != tc.bps {
			t.Errorf("tier of %s %s = %d bps, want %d", tc.qty, tc.base, got, tc.bps)
		}
	}
}

// TestBoundaryInputsReachTheirGoals: a run whose seed exercises every boundary often
// reaches every boundary goal, with every asserted answer right.
func TestBoundaryInputsReachTheirGoals(t *testing.T) {
	k := knobs(2, "none", 0)
	k.Duration = 10 * time.Minute
	s := newSim(t, k)
	s.mix.Boundary = BoundaryMix{Ticket: 0.5, TTL: 0.2, Price: 0.5, Validity: 0.3, Limit: 0.2, Batch: 0.2}
	r := runSim(t, s, k)
	var missing []string
	for _, g := range boundaryGoals(s.mix.Boundary) {
		if r.Coverage[g] == 0 {
			missing = append(missing, g)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("never reached: %v", missing)
	}
}
