package main

import (
	"fmt"
	"sort"

	"github.com/BurntSushi/toml"
)

// moneyKeys are the keys of the configuration file that hold money, by table: a money
// value is a TOML string in the wire's decimal format (DECISIONS.md, configuration file
// conventions). The decoder would turn a float or an integer into text and accept it, so
// every such value is checked against the file's raw types before it is used.
var moneyKeys = struct {
	top, instrument, feeTier []string
	houseFund                string // every value of [[house]].fund is money
}{
	top:        []string{"min_notional_usd"},
	instrument: []string{"usd_price", "faucet_amount", "reservoir"},
	feeTier:    []string{"min_notional_usd"},
	houseFund:  "fund",
}

// checkMoneyStrings refuses a money value that is not a TOML string, naming its key
// (with the table's index for a list: instrument[2].usd_price).
func checkMoneyStrings(b []byte) error {
	var raw map[string]any
	if _, err := toml.Decode(string(b), &raw); err != nil {
		return err
	}
	check := func(key string, v any) error {
		if _, ok := v.(string); ok {
			return nil
		}
		return fmt.Errorf("%s = %v: money is a string in the wire's decimal format (%s = \"%v\"), never a %s",
			key, v, key, v, tomlKind(v))
	}
	for _, k := range moneyKeys.top {
		if v, ok := raw[k]; ok {
			if err := check(k, v); err != nil {
				return err
			}
		}
	}
	tables := func(name string, keys []string) error {
		list, _ := raw[name].([]map[string]any)
		for i, t := range list {
			for _, k := range keys {
				if v, ok := t[k]; ok {
					if err := check(fmt.Sprintf("%s[%d].%s", name, i, k), v); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := tables("instrument", moneyKeys.instrument); err != nil {
		return err
	}
	if err := tables("fee_tier", moneyKeys.feeTier); err != nil {
		return err
	}
	houses, _ := raw["house"].([]map[string]any)
	for i, h := range houses {
		fund, _ := h[moneyKeys.houseFund].(map[string]any)
		symbols := make([]string, 0, len(fund))
		for s := range fund {
			symbols = append(symbols, s)
		}
		sort.Strings(symbols) // the first offender named is the same on every run
		for _, s := range symbols {
			if err := check(fmt.Sprintf("house[%d].fund.%s", i, s), fund[s]); err != nil {
				return err
			}
		}
	}
	return nil
}

// tomlKind names a decoded TOML value's type as the TOML specification does.
func tomlKind(v any) string {
	switch v.(type) {
	case float64:
		return "float"
	case int64:
		return "integer"
	case bool:
		return "boolean"
	default:
		return fmt.Sprintf("%T", v)
	}
}
