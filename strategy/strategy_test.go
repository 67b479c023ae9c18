package strategy

import (
	"errors"
	"testing"

	"github.com/deskco/rfqdesk/money"
)

func TestDecide(t *testing.T) {
	d := money.MustParse
	rich := map[string]money.Decimal{"cbtc": d("10"), "usdcx": d("1000000")}
	cases := []struct {
		name      string
		rfq       RFQ
		mid       string
		p         Params
		free      map[string]money.Decimal
		price     string
		spends    string
		amount    string
		wantError error
	}{
		{"sell: maker bids below mid", RFQ{Sell, d("0.5"), "cbtc", "usdcx"}, "100000", Params{20, 5000}, rich, "99800", "usdcx", "49900", nil},
		{"buy: maker offers above mid", RFQ{Buy, d("0.5"), "cbtc", "usdcx"}, "100000", Params{20, 5000}, rich, "100200", "cbtc", "0.5", nil},
		{"lower-case direction and upper-case symbols", RFQ{"sell", d("1"), "CBTC", "USDCX"}, "100000", Params{0, 10000}, rich, "100000", "usdcx", "100000", nil},
		{"sell rounds the bid down", RFQ{Sell, d("1"), "cc", "cbtc"}, "0.0000020001", Params{33, 10000}, map[string]money.Decimal{"cbtc": d("1")}, "0.0000019934", "cbtc", "0.0000019934", nil},
		{"buy rounds the offer up", RFQ{Buy, d("1"), "cc", "cbtc"}, "0.0000020001", Params{33, 10000}, map[string]money.Decimal{"cc": d("5")}, "0.0000020068", "cc", "1", nil},
		{"buy exact at ten digits stays", RFQ{Buy, d("2"), "cc", "usdcx"}, "0.2", Params{50, 10000}, map[string]money.Decimal{"cc": d("5")}, "0.201", "cc", "2", nil},
		{"share limit reached exactly is allowed", RFQ{Buy, d("5"), "cbtc", "usdcx"}, "100000", Params{20, 5000}, rich, "100200", "cbtc", "5", nil},
		{"share limit exceeded", RFQ{Buy, d("5.0000000001"), "cbtc", "usdcx"}, "100000", Params{20, 5000}, rich, "", "", "", ErrTooLarge},
		{"sell spends the quote instrument", RFQ{Sell, d("6"), "cbtc", "usdcx"}, "100000", Params{0, 5000}, rich, "", "", "", ErrTooLarge},
		{"no holding", RFQ{Buy, d("1"), "ceth", "usdcx"}, "3500", Params{20, 5000}, rich, "", "", "", ErrNoHolding},
		{"no reference price", RFQ{Buy, d("1"), "cbtc", "usdcx"}, "0", Params{20, 5000}, rich, "", "", "", ErrNoReference},
		{"bad direction", RFQ{"HOLD", d("1"), "cbtc", "usdcx"}, "1", Params{20, 5000}, rich, "", "", "", ErrBadDirection},
		{"dust price", RFQ{Sell, d("1"), "cc", "cbtc"}, "0.0000000001", Params{20, 10000}, rich, "", "", "", ErrDust},
		{"zero qty", RFQ{Sell, money.Zero, "cbtc", "usdcx"}, "1", Params{20, 10000}, rich, "", "", "", ErrDust},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := Decide(c.rfq, d(c.mid), c.p, c.free)
			if c.wantError != nil {
				if !errors.Is(err, c.wantError) {
					t.Fatalf("got %+v, %v; want %v", q, err, c.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if q.Price.String() != c.price || q.Spends != c.spends || q.Amount.String() != c.amount {
				t.Fatalf("got price %s spends %s %s; want %s, %s %s", q.Price, q.Amount, q.Spends, c.price, c.amount, c.spends)
			}
		})
	}
}

func TestParamsValidate(t *testing.T) {
	for _, c := range []struct {
		p  Params
		ok bool
	}{
		{Params{0, 1}, true}, {Params{MaxSpreadBps, FullShareBps}, true},
		{Params{-1, 5000}, false}, {Params{MaxSpreadBps + 1, 5000}, false},
		{Params{20, 0}, false}, {Params{20, FullShareBps + 1}, false},
	} {
		if err := c.p.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.p, err)
		}
		if _, err := Decide(RFQ{Sell, money.FromInt(1), "a", "b"}, money.FromInt(1), c.p, map[string]money.Decimal{"b": money.FromInt(100000)}); (err == nil) != c.ok {
			t.Errorf("Decide %+v: %v", c.p, err)
		}
	}
}
