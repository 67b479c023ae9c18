package strategy

import (
	"fmt"
	"slices"
	"testing"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// TestDeclineReason: each of Decide's skips maps to the reason the bot declines with.
func TestDeclineReason(t *testing.T) {
	d := money.MustParse
	rich := map[string]money.Decimal{"cbtc": d("10"), "usdcx": d("1000000")}
	p := Params{SpreadBps: 20, MaxShareBps: 5000}
	cases := []struct {
		name string
		rfq  RFQ
		mid  string
		free map[string]money.Decimal
		want string
	}{
		{"quoted: no reason", RFQ{Buy, d("1"), "cbtc", "usdcx"}, "100000", rich, ""},
		{"no reference price", RFQ{Buy, d("1"), "cbtc", "usdcx"}, "0", rich, DeclinePrice},
		{"more than the share of the holding", RFQ{Buy, d("6"), "cbtc", "usdcx"}, "100000", rich, DeclineSize},
		{"rounds to zero", RFQ{Sell, d("1"), "cc", "cbtc"}, "0.0000000001", rich, DeclineSize},
		{"no holding of what it spends", RFQ{Buy, d("1"), "ceth", "usdcx"}, "3500", rich, DeclineInventory},
		{"unknown direction", RFQ{"HOLD", d("1"), "cbtc", "usdcx"}, "1", rich, DeclineOther},
	}
	for _, c := range cases {
		_, err := Decide(c.rfq, d(c.mid), p, c.free)
		if got := DeclineReason(err); got != c.want {
			t.Errorf("%s: Decide said %v, reason %q, want %q", c.name, err, got, c.want)
		}
	}
	if got := DeclineReason(fmt.Errorf("wrapped twice: %w", fmt.Errorf("x: %w", ErrNoHolding))); got != DeclineInventory {
		t.Errorf("a wrapped skip: %q", got)
	}
}

// TestDeclineReasonProperty: whatever Decide answers, it quotes exactly when there is no
// reason to decline, and a skip's reason is one the desk accepts.
func TestDeclineReasonProperty(t *testing.T) {
	reasons := []string{DeclinePrice, DeclineSize, DeclineInventory, DeclineInstrument, DeclineOther}
	rapid.Check(t, func(t *rapid.T) {
		amount := func(label string) money.Decimal {
			return money.MustParse(fmt.Sprintf("%d.%06d", rapid.IntRange(0, 50).Draw(t, label+"Int"), rapid.IntRange(0, 999999).Draw(t, label+"Frac")))
		}
		rfq := RFQ{Direction: rapid.SampledFrom([]string{Sell, Buy, "sell", "HOLD"}).Draw(t, "dir"), Qty: amount("qty"), Base: "cbtc", Quote: "usdcx"}
		free := map[string]money.Decimal{}
		for _, sym := range []string{"cbtc", "usdcx"} {
			if rapid.Bool().Draw(t, "has"+sym) {
				free[sym] = amount(sym)
			}
		}
		p := Params{SpreadBps: rapid.IntRange(0, MaxSpreadBps).Draw(t, "spread"), MaxShareBps: rapid.IntRange(1, FullShareBps).Draw(t, "share")}
		_, err := Decide(rfq, amount("mid"), p, free)
		reason := DeclineReason(err)
		if (err == nil) != (reason == "") {
			t.Fatalf("Decide said %v, reason %q", err, reason)
		}
		if err != nil && !slices.Contains(reasons, reason) {
			t.Fatalf("reason %q for %v is not one the desk accepts", reason, err)
		}
	})
}
