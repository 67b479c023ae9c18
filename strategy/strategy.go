// Package strategy is the reference quoting strategy of the desk's makers: the one the
// reference maker bot (cmd/makerbot) runs over the wire and the desk's built-in house maker
// runs in-process. It is pure: given an RFQ, the desk's reference price for the pair, a
// spread and the maker's free holdings, it returns the price to quote or the reason to
// skip. Everything is exact decimal arithmetic; nothing here reads a clock or does I/O.
//
// The rule, from the maker's side:
//
//   - On a SELL RFQ the taker sells the base, so the maker buys it: it bids below the mid,
//     price = mid × (1 − spread), rounded down (in the maker's favour), and spends
//     qty × price of the quote instrument.
//   - On a BUY RFQ the maker sells the base: it offers above the mid,
//     price = mid × (1 + spread), rounded up (in the maker's favour), and spends qty of the
//     base.
//   - It skips an RFQ that would spend more than MaxShareBps of its free holding of the
//     instrument it spends, so one ticket never drains a holding (and a maker keeps capacity
//     for the RFQs that follow).
//
// Copy this file to change the strategy; the bot and the house maker need nothing else.
package strategy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/deskco/rfqdesk/money"
)

// Bounds of the knobs.
const (
	// MaxSpreadBps is the widest spread accepted: 50 %.
	MaxSpreadBps = 5000
	// FullShareBps is 100 % of a holding.
	FullShareBps = 10000
)

// Directions of an RFQ, from the taker's side (as on the wire).
const (
	Sell = "SELL"
	Buy  = "BUY"
)

// RFQ is what the strategy needs of an RFQ.
type RFQ struct {
	// Direction is Sell or Buy, from the taker's side.
	Direction string
	// Qty is the quantity of the base.
	Qty money.Decimal
	// Base and Quote are catalog symbols.
	Base, Quote string
}

// Params are the maker's knobs.
type Params struct {
	// SpreadBps is the distance from the mid, in basis points (0 to MaxSpreadBps).
	SpreadBps int
	// MaxShareBps is the largest share of a free holding one RFQ may spend, in basis points
	// (1 to FullShareBps).
	MaxShareBps int
}

// Validate checks the knobs.
func (p Params) Validate() error {
	if p.SpreadBps < 0 || p.SpreadBps > MaxSpreadBps {
		return fmt.Errorf("strategy: spread of %d bps is outside 0..%d", p.SpreadBps, MaxSpreadBps)
	}
	if p.MaxShareBps < 1 || p.MaxShareBps > FullShareBps {
		return fmt.Errorf("strategy: max share of %d bps is outside 1..%d", p.MaxShareBps, FullShareBps)
	}
	return nil
}

// Quote is a decision to quote: the price, and what the quote would lock.
type Quote struct {
	// Price is the quote-instrument amount per 1 unit of base.
	Price money.Decimal
	// Spends is the catalog symbol of the instrument the maker sends, and Amount how much.
	Spends string
	Amount money.Decimal
}

// Skip reasons, wrapped by Decide's error with the details.
var (
	ErrNoReference  = errors.New("no reference price for the pair")
	ErrBadDirection = errors.New("direction is neither SELL nor BUY")
	ErrDust         = errors.New("the quote rounds to zero")
	ErrNoHolding    = errors.New("no free holding of the instrument the quote spends")
	ErrTooLarge     = errors.New("the RFQ would spend more than the allowed share of a holding")
)

// Decide prices rfq at mid ± the spread, or says why the maker should skip it. mid is the
// desk's reference price of 1 base in quote units (zero when the desk has none); free maps a
// lower-case catalog symbol to the maker's free holding of it.
func Decide(rfq RFQ, mid money.Decimal, p Params, free map[string]money.Decimal) (Quote, error) {
	if err := p.Validate(); err != nil {
		return Quote{}, err
	}
	if mid.Sign() <= 0 {
		return Quote{}, fmt.Errorf("%s/%s: %w", rfq.Base, rfq.Quote, ErrNoReference)
	}
	if rfq.Qty.Sign() <= 0 {
		return Quote{}, fmt.Errorf("qty %s: %w", rfq.Qty, ErrDust)
	}
	var q Quote
	switch strings.ToUpper(rfq.Direction) {
	case Sell: // the maker buys the base below the mid and pays in the quote instrument
		q.Price = mid.MulDown(bpsFactor(FullShareBps - p.SpreadBps))
		q.Spends, q.Amount = strings.ToLower(rfq.Quote), rfq.Qty.MulHalfEven(q.Price)
	case Buy: // the maker sells the base above the mid
		q.Price = mulUp(mid, FullShareBps+p.SpreadBps)
		q.Spends, q.Amount = strings.ToLower(rfq.Base), rfq.Qty
	default:
		return Quote{}, fmt.Errorf("%q: %w", rfq.Direction, ErrBadDirection)
	}
	if q.Price.Sign() <= 0 || q.Amount.Sign() <= 0 {
		return Quote{}, fmt.Errorf("price %s for qty %s: %w", q.Price, rfq.Qty, ErrDust)
	}
	have := free[q.Spends]
	if have.Sign() <= 0 {
		return Quote{}, fmt.Errorf("%s: %w", q.Spends, ErrNoHolding)
	}
	limit := have.MulDown(bpsFactor(p.MaxShareBps))
	if q.Amount.Cmp(limit) > 0 {
		return Quote{}, fmt.Errorf("spends %s %s, more than %d bps of the free %s: %w",
			q.Amount, q.Spends, p.MaxShareBps, have, ErrTooLarge)
	}
	return q, nil
}

// bpsFactor is bps / 10000 as an exact decimal.
func bpsFactor(bps int) money.Decimal {
	f, err := money.FromInt(int64(bps)).QuoHalfEven(money.FromInt(FullShareBps))
	if err != nil { // unreachable: the divisor is a nonzero constant
		panic(err)
	}
	return f
}

// mulUp returns mid × bps / 10000 rounded up to 10 fractional digits, so an offer is
// never cheaper than the spread asked for. The truncated quotient, scaled back by 10000
// (exact), equals the exact product mid × bps only when truncation lost nothing; otherwise
// one unit of the tenth fractional digit is added.
func mulUp(mid money.Decimal, bps int) money.Decimal {
	down := mid.MulDown(bpsFactor(bps))
	if down.MulHalfEven(money.FromInt(FullShareBps)).Equal(mid.MulHalfEven(money.FromInt(int64(bps)))) {
		return down
	}
	return down.Add(tick)
}

// tick is one unit of the tenth fractional digit, the wire's finest step.
var tick = money.MustParse("0.0000000001")
