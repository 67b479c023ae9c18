package model

import (
	"fmt"
	"math/big"
	"strings"
)

// The money formulas of the contract, written from the documents with math/big so that a
// bug in the desk's own money package cannot fool the model.

// fracDigits is how many fractional digits every amount on the wire may carry.
const fracDigits = 10

// scale is 10^fracDigits.
var scale = new(big.Int).Exp(big.NewInt(10), big.NewInt(fracDigits), nil)

// parseDec reads a decimal in the wire's grammar (digits, optionally a dot and 1 to 10
// digits) as an exact rational.
func parseDec(s string) (*big.Rat, error) {
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart == "" || (hasDot && (frac == "" || len(frac) > fracDigits)) || !digits(intPart) || !digits(frac) {
		return nil, fmt.Errorf("%q is not a decimal of the wire's form (digits, at most %d fractional)", s, fracDigits)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a decimal", s)
	}
	return r, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// formatDec writes a non-negative rational with at most 10 fractional digits in the wire's
// minimal plain form: no exponent, no trailing fractional zeros, no dot for an integer. It
// fails for a value that needs more digits (the caller rounds first).
func formatDec(r *big.Rat) (string, error) {
	if r.Sign() < 0 {
		return "", fmt.Errorf("negative amount %s", r.RatString())
	}
	n := new(big.Int).Mul(r.Num(), scale)
	q, rem := new(big.Int).QuoRem(n, r.Denom(), new(big.Int))
	if rem.Sign() != 0 {
		return "", fmt.Errorf("%s needs more than %d fractional digits", r.RatString(), fracDigits)
	}
	s := q.String()
	if len(s) <= fracDigits {
		s = strings.Repeat("0", fracDigits-len(s)+1) + s
	}
	ip, fp := s[:len(s)-fracDigits], strings.TrimRight(s[len(s)-fracDigits:], "0")
	if fp == "" {
		return ip, nil
	}
	return ip + "." + fp, nil
}

// mustFormat formats a value the model computed itself (always at 10 digits or fewer).
func mustFormat(r *big.Rat) string {
	s, err := formatDec(r)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return s
}

// roundHalfEven10 rounds a non-negative rational to 10 fractional digits, ties to even.
func roundHalfEven10(r *big.Rat) *big.Rat {
	n := new(big.Int).Mul(r.Num(), scale)
	q, rem := new(big.Int).QuoRem(n, r.Denom(), new(big.Int))
	// compare 2·rem with the denominator
	twice := new(big.Int).Lsh(rem, 1)
	switch c := twice.Cmp(r.Denom()); {
	case c > 0:
		q.Add(q, big.NewInt(1))
	case c == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	return new(big.Rat).SetFrac(q, scale)
}

// trunc10 truncates a non-negative rational to 10 fractional digits.
func trunc10(r *big.Rat) *big.Rat {
	n := new(big.Int).Mul(r.Num(), scale)
	q := new(big.Int).Quo(n, r.Denom())
	return new(big.Rat).SetFrac(q, scale)
}

// quoteAmount is DECISIONS' trade amount: qty × price rounded half-even at 10 digits.
func quoteAmount(qty, price *big.Rat) *big.Rat {
	return roundHalfEven10(new(big.Rat).Mul(qty, price))
}

// fee is DECISIONS' fee: quoteAmount × feeBps / 10000, truncated at 10 digits.
func fee(quoteAmt *big.Rat, bps int) *big.Rat {
	f := new(big.Rat).Mul(quoteAmt, big.NewRat(int64(bps), 10000))
	return trunc10(f)
}

// notional is the USD notional of a ticket: qty × usdPrice(base). The exact product is
// returned; the desk carries amounts at 10 digits, see notionalBounds.
func notional(qty, usd *big.Rat) *big.Rat { return new(big.Rat).Mul(qty, usd) }

// tier is one fee tier of the configuration, parsed.
type tier struct {
	Min *big.Rat
	Bps int
}

// tierFor is DECISIONS' rule: the tier with the largest minNotionalUsd at or below the
// notional. A notional under every tier pays the lowest tier (the base tier of GET /desk;
// it only happens for a desk whose lowest tier starts above its minimum ticket).
func tierFor(tiers []tier, n *big.Rat) int {
	best := -1
	for i, t := range tiers {
		if t.Min.Cmp(n) <= 0 && (best < 0 || t.Min.Cmp(tiers[best].Min) > 0) {
			best = i
		}
	}
	if best < 0 {
		return baseTier(tiers)
	}
	return tiers[best].Bps
}

// baseTier is the fee of the tier with the smallest minimum; 0 without tiers.
func baseTier(tiers []tier) int {
	best := -1
	for i, t := range tiers {
		if best < 0 || t.Min.Cmp(tiers[best].Min) < 0 {
			best = i
		}
	}
	if best < 0 {
		return 0
	}
	return tiers[best].Bps
}

// dust says why a trade at these amounts is DUST_TRADE, or "" when it is not: a leg, or a
// fee with feeBps > 0, that comes to zero at 10 digits (DECISIONS, Money); on SELL the
// taker's proceeds quoteAmount − fee are a leg too.
func dust(dirSell bool, qty, quoteAmt, f *big.Rat, bps int) string {
	switch {
	case qty.Sign() <= 0:
		return "the quantity is zero"
	case quoteAmt.Sign() <= 0:
		return "qty × price rounds to zero at 10 decimals"
	case bps > 0 && f.Sign() <= 0:
		return "the fee truncates to zero at 10 decimals"
	case dirSell && new(big.Rat).Sub(quoteAmt, f).Sign() <= 0:
		return "the taker's proceeds come to zero"
	}
	return ""
}
