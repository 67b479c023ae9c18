package main

import (
	"strings"
	"testing"
)

// TestMoneyKeysRefuseNonStrings covers each kind of money key of the configuration file
// (top level, [[instrument]], [[fee_tier]], a [[house]] fund): a float or an integer is
// refused with its key named, and the same value as a string is accepted.
func TestMoneyKeysRefuseNonStrings(t *testing.T) {
	const instrument = "[[instrument]]\nsymbol = \"usdcx\"\ndisplay = \"USDCx\"\ndecimals = 6\nusd_price = \"1\"\nfaucet_amount = \"100\"\n"
	const tier = "[[fee_tier]]\nmin_notional_usd = \"0\"\nfee_bps = 30\n"
	cases := []struct {
		name, bad, good, key string
	}{
		{"top level", "min_notional_usd = 10.5\n", "min_notional_usd = \"10.5\"\n", "min_notional_usd"},
		{"instrument usd_price",
			"[[instrument]]\nsymbol = \"cbtc\"\ndisplay = \"CBTC\"\ndecimals = 8\nusd_price = 100000.0\nfaucet_amount = \"0.1\"\n" + instrument,
			"[[instrument]]\nsymbol = \"cbtc\"\ndisplay = \"CBTC\"\ndecimals = 8\nusd_price = \"100000.0\"\nfaucet_amount = \"0.1\"\n" + instrument,
			"instrument[0].usd_price"},
		{"instrument faucet_amount",
			instrument + "[[instrument]]\nsymbol = \"cc\"\ndisplay = \"CC\"\ndecimals = 10\nusd_price = \"0.2\"\nfaucet_amount = 1000\n",
			instrument + "[[instrument]]\nsymbol = \"cc\"\ndisplay = \"CC\"\ndecimals = 10\nusd_price = \"0.2\"\nfaucet_amount = \"1000\"\n",
			"instrument[1].faucet_amount"},
		{"instrument reservoir", strings.Replace(instrument, "\nfaucet_amount", "\nreservoir = 1e6\nfaucet_amount", 1),
			strings.Replace(instrument, "\nfaucet_amount", "\nreservoir = \"1000000\"\nfaucet_amount", 1), "instrument[0].reservoir"},
		{"fee tier", tier + "[[fee_tier]]\nmin_notional_usd = 10000.5\nfee_bps = 20\n",
			tier + "[[fee_tier]]\nmin_notional_usd = \"10000.5\"\nfee_bps = 20\n", "fee_tier[1].min_notional_usd"},
		{"house fund", "[[house]]\nname = \"t\"\nrole = \"taker\"\napi_key = \"0123456789abcdef\"\nfund = { usdcx = \"5\", cbtc = 0.5 }\n",
			"[[house]]\nname = \"t\"\nrole = \"taker\"\napi_key = \"0123456789abcdef\"\nfund = { usdcx = \"5\", cbtc = \"0.5\" }\n",
			"house[0].fund.cbtc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadConfig(writeConfig(t, c.bad))
			if err == nil || !strings.Contains(err.Error(), c.key+" = ") || !strings.Contains(err.Error(), "string") {
				t.Fatalf("a non-string %s: got %v, want an error naming the key", c.key, err)
			}
			fc, err := loadConfig(writeConfig(t, c.good))
			if err != nil {
				t.Fatalf("the same value as a string: %v", err)
			}
			drawn := func(string) (string, error) { return "drawn-key-0123456789", nil }
			if _, _, err := fc.resolve(func(string) string { return "" }, drawn); err != nil {
				t.Fatalf("resolve the string form: %v", err)
			}
		})
	}
}
