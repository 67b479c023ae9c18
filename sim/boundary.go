package sim

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Inputs that reach every boundary of the contract. Each seed draws which boundaries its
// actors exercise and how often (BoundaryMix, swarm testing like the fault mix); each
// boundary is a coverage goal, and where the actor knows the one correct answer it asserts
// it (a Safety failure otherwise). The oracles here are written from the documents with
// math/big, never with the desk's money package: the quote amount is qty × price rounded
// half-even to 10 fractional digits, the fee that amount × feeBps / 10000 truncated to 10
// digits, the fee tier the one with the largest minimum at or below qty × usdPrice(base).

// simFeeTiers are the sim's fee tiers: boundaries the actors' funds reach (a taker draws
// 0.05 CBTC and 5000 USDCx from the faucet, so a 1000 USD ticket is within reach).
func simFeeTiers() []machine.FeeTier {
	return []machine.FeeTier{
		{MinNotionalUSD: money.Zero, FeeBps: 30},
		{MinNotionalUSD: money.MustParse("50"), FeeBps: 20},
		{MinNotionalUSD: money.MustParse("200"), FeeBps: 10},
		{MinNotionalUSD: money.MustParse("1000"), FeeBps: 5},
	}
}

// BoundaryMix is how often one seed's actors send boundary inputs: each a probability per
// occasion (an RFQ, a quote, an execute, a wake-up), switched off entirely with
// probability 1/4 like a fault rate.
type BoundaryMix struct {
	Ticket   float64 `json:"ticket"`   // an RFQ's qty on a tier boundary or at/just below the minimum notional
	TTL      float64 `json:"ttl"`      // an RFQ's ttlSeconds at or just outside its bounds
	Price    float64 `json:"price"`    // a quote's price that needs rounding at 10 digits, or a dust price
	Validity float64 `json:"validity"` // a quote's validUntil exactly at the deadline or 1 ns after
	Limit    float64 `json:"limit"`    // a limited read with limit 1, 500 or 501
	Batch    float64 `json:"batch"`    // an execute batch of exactly 50 or 51 entries
}

// drawBoundaryMix draws a seed's boundary mix from its own stream (so that the fault mix
// and the actors' streams stay those of the seed).
func drawBoundaryMix(seed uint64) BoundaryMix {
	rng := rand.New(rand.NewPCG(seed, 0xb0da4d))
	rate := func(max float64) float64 {
		if rng.IntN(4) == 0 {
			return 0
		}
		return max * (0.2 + 0.8*rng.Float64())
	}
	return BoundaryMix{Ticket: rate(0.3), TTL: rate(0.08), Price: rate(0.2), Validity: rate(0.2), Limit: rate(0.05), Batch: rate(0.05)}
}

// maxBoundaryMix merges mixes: each rate the largest.
func maxBoundaryMix(a, b BoundaryMix) BoundaryMix {
	return BoundaryMix{Ticket: max(a.Ticket, b.Ticket), TTL: max(a.TTL, b.TTL), Price: max(a.Price, b.Price),
		Validity: max(a.Validity, b.Validity), Limit: max(a.Limit, b.Limit), Batch: max(a.Batch, b.Batch)}
}

// Coverage goals of the boundaries (the tier ones are named by tierGoals).
const (
	covMinNotionalExact  = "an RFQ exactly at the minimum notional"
	covBelowMinNotional  = "an RFQ just below the minimum notional refused (BELOW_MIN_NOTIONAL)"
	covHalfEvenDown      = "qty × price an exact half at 10 digits, rounded down to even"
	covHalfEvenUp        = "qty × price an exact half at 10 digits, rounded up to even"
	covRoundedNotHalf    = "qty × price rounded at 10 digits (not a half)"
	covFeeTruncated      = "a fee truncated at 10 digits"
	covDustLeg           = "a dust quote refused: qty × price rounds to zero (DUST_TRADE)"
	covDustFee           = "a dust quote refused: the fee truncates to zero (DUST_TRADE)"
	covZeroPrice         = "a quote at price 0 refused (DUST_TRADE)"
	covValidAtDeadline   = "a quote valid exactly until its RFQ's deadline accepted"
	covValidPastDeadline = "a quote valid 1 ns past its RFQ's deadline refused (409)"
	covTTLMin            = "an RFQ with ttlSeconds at its minimum"
	covTTLMax            = "an RFQ with ttlSeconds at its maximum"
	covTTLBelow          = "an RFQ with ttlSeconds one under its minimum refused (400)"
	covTTLAbove          = "an RFQ with ttlSeconds one over its maximum refused (400)"
	covLimit1            = "a limited read with limit 1"
	covLimit500          = "a limited read with limit 500"
	covLimit501          = "a limited read with limit 501 refused (400)"
	covBatch50           = "an execute batch of exactly 50 entries"
	covBatch51           = "an execute batch of 51 entries refused (400)"
)

// tierGoals names the coverage goals of the fee tiers: a ticket exactly on each boundary
// above zero, and an RFQ stamped with each tier's fee.
func tierGoals() []string {
	var out []string
	for _, t := range simFeeTiers() {
		if t.MinNotionalUSD.Sign() > 0 {
			out = append(out, fmt.Sprintf("an RFQ exactly on the %s USD fee tier boundary", t.MinNotionalUSD))
		}
		out = append(out, fmt.Sprintf("an RFQ in the %d bps fee tier", t.FeeBps))
	}
	return out
}

// boundaryGoals lists the goals a run whose mix enables each boundary must reach.
func boundaryGoals(b BoundaryMix) []string {
	var goals []string
	if b.Ticket > 0 {
		goals = append(goals, covMinNotionalExact, covBelowMinNotional)
		goals = append(goals, tierGoals()...)
	}
	if b.TTL > 0 {
		goals = append(goals, covTTLMin, covTTLMax, covTTLBelow, covTTLAbove)
	}
	if b.Price > 0 {
		goals = append(goals, covHalfEvenDown, covHalfEvenUp, covRoundedNotHalf, covDustLeg, covDustFee, covZeroPrice)
	}
	if b.Validity > 0 {
		goals = append(goals, covValidAtDeadline, covValidPastDeadline)
	}
	if b.Limit > 0 {
		goals = append(goals, covLimit1, covLimit500, covLimit501)
	}
	if b.Batch > 0 {
		goals = append(goals, covBatch50, covBatch51)
	}
	if b.Price > 0 {
		goals = append(goals, covFeeTruncated)
	}
	return goals
}

// ---- exact arithmetic of the documents (math/big) ----

// rat parses a decimal exactly.
func rat(d money.Decimal) *big.Rat {
	r, ok := new(big.Rat).SetString(d.String())
	if !ok {
		panic(fmt.Sprintf("sim: decimal %q does not parse as a rational", d.String()))
	}
	return r
}

var tenTo10 = new(big.Int).Exp(big.NewInt(10), big.NewInt(10), nil)

// roundHalfEven10 rounds r half-even to 10 fractional digits; half says whether r was an
// exact half there.
func roundHalfEven10(r *big.Rat) (out *big.Rat, half bool) {
	if r.Sign() < 0 {
		out, half = roundHalfEven10(new(big.Rat).Neg(r))
		return out.Neg(out), half
	}
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(tenTo10))
	q, m := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
	// compare 2·remainder with the denominator
	c := new(big.Int).Mul(m, big.NewInt(2)).Cmp(scaled.Denom())
	switch {
	case c > 0 || c == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	return new(big.Rat).SetFrac(q, tenTo10), c == 0 && m.Sign() != 0
}

// trunc10 truncates r toward zero at 10 fractional digits.
func trunc10(r *big.Rat) *big.Rat {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(tenTo10))
	q := new(big.Int).Quo(scaled.Num(), scaled.Denom())
	return new(big.Rat).SetFrac(q, tenTo10)
}

// exact10 reports whether r has at most 10 fractional digits.
func exact10(r *big.Rat) bool {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(tenTo10))
	return scaled.IsInt()
}

// usdPrice is the catalog's reference USD price of a symbol.
func usdPrice(symbol string) *big.Rat {
	for _, in := range catalog() {
		if in.Symbol == symbol {
			return rat(in.USDPrice)
		}
	}
	return nil
}

// expectedFeeBps is the documents' tier of a ticket: the largest minimum at or below
// qty × usdPrice(base).
func expectedFeeBps(qty money.Decimal, base string) (int, *big.Rat) {
	notional := new(big.Rat).Mul(rat(qty), usdPrice(base))
	best, bps := (*big.Rat)(nil), 0
	for _, t := range simFeeTiers() {
		m := rat(t.MinNotionalUSD)
		if m.Cmp(notional) <= 0 && (best == nil || m.Cmp(best) > 0) {
			best, bps = m, t.FeeBps
		}
	}
	return bps, notional
}

// decimalOf renders an exact rational with at most 10 fractional digits as a Decimal.
func decimalOf(r *big.Rat) (money.Decimal, bool) {
	if !exact10(r) {
		return money.Zero, false
	}
	d, err := money.Parse(r.FloatString(10))
	if err != nil {
		return money.Zero, false
	}
	return d, true
}

// ---- tickets ----

// ticketKind is the boundary an RFQ's ticket sits on.
type ticketKind int

const (
	ticketOrdinary ticketKind = iota
	ticketTier                // exactly on a tier boundary
	ticketMinExact            // exactly at the minimum notional
	ticketBelowMin            // one unit of the base's last digit under it
)

// boundaryTicket may set an RFQ's qty on a boundary; it says which.
func (a *actor) boundaryTicket(c *machine.CreateRFQ) ticketKind {
	s := a.s
	if s.mix.Boundary.Ticket == 0 || a.rng.Float64() >= s.mix.Boundary.Ticket {
		return ticketOrdinary
	}
	var target *big.Rat
	kind := ticketTier
	switch n := a.rng.IntN(5); {
	case n == 0:
		target, kind = rat(s.cfg.MinNotionalUSD), ticketMinExact
	case n == 1:
		target, kind = rat(s.cfg.MinNotionalUSD), ticketBelowMin
	default:
		tiers := simFeeTiers()[1:]
		target = rat(tiers[a.rng.IntN(len(tiers))].MinNotionalUSD)
	}
	qty := new(big.Rat).Quo(target, usdPrice(c.Base))
	if kind == ticketBelowMin {
		// one unit of the base instrument's last digit less
		for _, in := range catalog() {
			if in.Symbol == c.Base {
				unit := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(in.Decimals)), nil))
				qty.Sub(qty, unit)
			}
		}
	}
	d, ok := decimalOf(qty)
	if !ok || d.Sign() <= 0 {
		return ticketOrdinary
	}
	c.Qty = d
	return kind
}

// checkTicket asserts what the contract says of an RFQ's ticket: under the minimum it is
// 400 BELOW_MIN_NOTIONAL; at or over it is never refused for its notional, and the RFQ
// carries the fee of the tier the documents give.
func (s *Sim) checkTicket(c machine.CreateRFQ, kind ticketKind, rep machine.Reply) {
	s.stats.Checks++
	bps, notional := expectedFeeBps(c.Qty, c.Base)
	below := notional.Cmp(rat(s.cfg.MinNotionalUSD)) < 0
	code := ""
	if rep.Err != nil {
		code = rep.Err.Code
	}
	switch {
	case rep.Status == 599, rep.Status == 401: // 401: a key rotated meanwhile (see checkTTL)
		return
	case below && rep.Status != 400:
		// (Another 400 may come first: the contract does not order the checks.)
		s.failf(Safety, "RFQ of %s %s (worth %s USD, under the minimum %s) answered %d %q, not 400 BELOW_MIN_NOTIONAL",
			c.Qty, c.Base, notional.RatString(), s.cfg.MinNotionalUSD, rep.Status, code)
		return
	case !below && code == machine.CodeBelowMinNotional:
		s.failf(Safety, "RFQ of %s %s (worth %s USD, at or over the minimum %s) refused BELOW_MIN_NOTIONAL",
			c.Qty, c.Base, notional.RatString(), s.cfg.MinNotionalUSD)
		return
	}
	if below {
		if code == machine.CodeBelowMinNotional {
			s.cov.hit(covBelowMinNotional)
		}
		return
	}
	if rep.Err != nil {
		return
	}
	dto := rep.Body.(machine.RfqDTO)
	if dto.FeeBps != bps {
		s.failf(Safety, "RFQ %s of %s %s (worth %s USD) carries feeBps %d, the tier says %d", dto.RfqID, c.Qty, c.Base, notional.FloatString(10), dto.FeeBps, bps)
		return
	}
	s.cov.hit(fmt.Sprintf("an RFQ in the %d bps fee tier", bps))
	switch kind {
	case ticketMinExact:
		s.cov.hit(covMinNotionalExact)
	case ticketTier:
		for _, t := range simFeeTiers() {
			if t.MinNotionalUSD.Sign() > 0 && rat(t.MinNotionalUSD).Cmp(notional) == 0 {
				s.cov.hit(fmt.Sprintf("an RFQ exactly on the %s USD fee tier boundary", t.MinNotionalUSD))
			}
		}
	}
}

// ---- ttlSeconds ----

// ttlKind is the bound an RFQ's ttlSeconds sits on or beside.
type ttlKind int

const (
	ttlOrdinary ttlKind = iota
	ttlMin
	ttlMax
	ttlBelow
	ttlAbove
)

// boundaryTTL may set an RFQ's ttlSeconds at or beside its bounds.
func (a *actor) boundaryTTL(c *machine.CreateRFQ) ttlKind {
	s := a.s
	if s.mix.Boundary.TTL == 0 || a.rng.Float64() >= s.mix.Boundary.TTL {
		return ttlOrdinary
	}
	lo, hi := int64(s.cfg.MinTTL/time.Second), int64(s.cfg.MaxTTL/time.Second)
	k := ttlKind(1 + a.rng.IntN(4))
	c.TTLSeconds = map[ttlKind]int64{ttlMin: lo, ttlMax: hi, ttlBelow: lo - 1, ttlAbove: hi + 1}[k]
	return k
}

// checkTTL asserts ttlSeconds' answer: outside the bounds 400, at them never a 400.
func (s *Sim) checkTTL(c machine.CreateRFQ, kind ttlKind, rep machine.Reply) {
	// 401: the actor's key was rotated away while the call was on its way; the key is
	// checked first, and the reference model judges that answer.
	if kind == ttlOrdinary || rep.Status == 599 || rep.Status == 401 {
		return
	}
	s.stats.Checks++
	outside := kind == ttlBelow || kind == ttlAbove
	switch {
	case outside && rep.Status != 400:
		s.failf(Safety, "RFQ with ttlSeconds %d (outside [%s, %s]) answered %d, not 400", c.TTLSeconds, s.cfg.MinTTL, s.cfg.MaxTTL, rep.Status)
	case !outside && rep.Status == 400 && rep.Err != nil && strings.Contains(rep.Err.Message, "ttlSeconds"):
		// Only the ttl's own refusal is wrong at a bound: another (a maker that went
		// offline meanwhile, the minimum notional) may come first, and the model judges it.
		s.failf(Safety, "RFQ with ttlSeconds %d (a bound of [%s, %s]) refused 400: %s", c.TTLSeconds, s.cfg.MinTTL, s.cfg.MaxTTL, rep.Err.Message)
	case rep.Status == 400 && outside:
		s.cov.hit(map[ttlKind]string{ttlBelow: covTTLBelow, ttlAbove: covTTLAbove}[kind])
	case rep.Err == nil:
		s.cov.hit(map[ttlKind]string{ttlMin: covTTLMin, ttlMax: covTTLMax}[kind])
	}
}

// cancelFarRFQs cancels, in the liveness phase, the taker's open RFQs that would outlive
// it (ttlSeconds at its maximum): read from GET /rfq/mine, since the answer that named one
// may have been lost with a crash.
func (a *actor) cancelFarRFQs() {
	s := a.s
	if s.mix.Boundary.TTL == 0 || a.role == roleMaker || a.reg != regDone {
		return
	}
	horizon := Start.Add(s.k.Duration + LivenessHorizon/2)
	a.read(a.keyHash, machine.QRfqMine{}, func(rep machine.Reply) {
		if rep.Err != nil {
			return
		}
		for _, r := range rep.Body.([]machine.RfqDTO) {
			if r.Open && time.Time(r.Deadline).After(horizon) {
				a.cancelRFQAnyway(r.RfqID)
			}
		}
	})
}

// ---- prices ----

// priceKind is what a quote's price was drawn to test.
type priceKind int

const (
	priceOrdinary priceKind = iota
	priceRounding           // qty × price needs rounding at 10 digits
	priceDustLeg            // qty × price rounds to zero
	priceDustFee            // the fee truncates to zero, the leg does not
	priceZero               // a price of 0, which makes a zero leg
)

// boundaryPrice may set a quote's price so that qty × price needs rounding at 10 digits
// (an exact half either way, or not a half), or is dust, or is 0 (a valid decimal whose
// leg is zero: DUST_TRADE, not a malformed price).
func (a *actor) boundaryPrice(c *machine.SubmitQuote, r machine.RfqDTO) priceKind {
	s := a.s
	if s.mix.Boundary.Price == 0 || a.rng.Float64() >= s.mix.Boundary.Price {
		return priceOrdinary
	}
	qty := rat(r.Qty)
	if qty.Sign() <= 0 {
		return priceOrdinary
	}
	unit := new(big.Rat).SetFrac(big.NewInt(1), tenTo10) // 1e-10
	var price *big.Rat
	kind := priceRounding
	switch n := a.rng.IntN(8); n {
	case 7:
		c.Price = money.MustParse("0")
		return priceZero
	case 0: // dust leg: qty × price at most half a unit (rounds to 0, the half to even 0)
		price = new(big.Rat).Quo(new(big.Rat).Mul(unit, big.NewRat(1, 2)), qty)
		kind = priceDustLeg
	case 1: // dust fee: qty × price = 1e-10, whose fee at any bps truncates to 0
		price = new(big.Rat).Quo(unit, qty)
		kind = priceDustFee
	default: // the product lands h units of 1e-10 past a price rounded to 0.01
		base := new(big.Rat).SetFrac(new(big.Int).Quo(new(big.Int).Mul(rat(c.Price).Num(), big.NewInt(100)), rat(c.Price).Denom()), big.NewInt(100))
		// Halves either way and not-halves round the leg; 170 units (1.7e-8) give a fee
		// whose 11th digit is 5 at 30 bps, which truncation drops and rounding would not.
		h := []*big.Rat{big.NewRat(1, 2), big.NewRat(3, 2), big.NewRat(11, 10), big.NewRat(9, 10), big.NewRat(170, 1)}[n-2]
		price = new(big.Rat).Add(base, new(big.Rat).Quo(new(big.Rat).Mul(unit, h), qty))
	}
	d, ok := decimalOf(price)
	if !ok || d.Sign() <= 0 {
		return priceOrdinary // not representable at 10 digits for this qty
	}
	c.Price = d
	return kind
}

// checkQuoteAmounts asserts a submitted quote's answer against the documents' arithmetic:
// a dust price is 409 DUST_TRADE; an accepted quote carries qty × price half-even and the
// truncated fee of the RFQ's tier.
func (s *Sim) checkQuoteAmounts(c machine.SubmitQuote, r machine.RfqDTO, kind priceKind, rep machine.Reply) {
	if rep.Status == 599 {
		return
	}
	s.stats.Checks++
	bps, _ := expectedFeeBps(r.Qty, r.Base)
	exact := new(big.Rat).Mul(rat(r.Qty), rat(c.Price))
	amount, half := roundHalfEven10(exact)
	feeExact := new(big.Rat).Quo(new(big.Rat).Mul(amount, big.NewRat(int64(bps), 1)), big.NewRat(10000, 1))
	fee := trunc10(feeExact)
	proceeds := new(big.Rat).Sub(amount, fee)
	dust := amount.Sign() == 0 || bps > 0 && fee.Sign() == 0 || r.Direction == machine.Sell && proceeds.Sign() <= 0
	code := ""
	if rep.Err != nil {
		code = rep.Err.Code
	}
	if dust {
		// The RFQ may have closed meanwhile (404) or the validUntil be refused first (409):
		// the contract does not order the checks. A dust price is never accepted.
		switch {
		case rep.Err == nil:
			s.failf(Safety, "quote at %s on RFQ %s (qty %s, %d bps) accepted: qty × price is %s and the fee %s, a dust trade",
				c.Price, r.RfqID, r.Qty, bps, amount.FloatString(10), fee.FloatString(10))
		case code == machine.CodeDustTrade && kind == priceDustLeg:
			s.cov.hit(covDustLeg)
		case code == machine.CodeDustTrade && kind == priceDustFee:
			s.cov.hit(covDustFee)
		case code == machine.CodeDustTrade && kind == priceZero:
			s.cov.hit(covZeroPrice)
		case kind == priceZero && rep.Status == 400:
			s.failf(Safety, "quote at price 0 on RFQ %s refused 400 %s: 0 is a valid decimal whose leg is zero, a dust trade (409 DUST_TRADE)",
				r.RfqID, code)
		}
		return
	}
	if code == machine.CodeDustTrade {
		s.failf(Safety, "quote at %s on RFQ %s (qty %s, %d bps) refused DUST_TRADE: qty × price is %s, the fee %s",
			c.Price, r.RfqID, r.Qty, bps, amount.FloatString(10), fee.FloatString(10))
		return
	}
	if rep.Err != nil {
		return
	}
	id := rep.Body.(machine.QuoteWithActionsDTO).QuoteID
	q := s.desk.Quotes[id]
	if q == nil {
		return
	}
	if rat(q.Amounts.QuoteAmount).Cmp(amount) != 0 || rat(q.Amounts.Fee).Cmp(fee) != 0 {
		s.failf(Safety, "quote %s: qty %s × price %s is %s (half-even at 10 digits) with a fee of %s at %d bps (truncated); the desk fixed %s and %s",
			id, r.Qty, c.Price, amount.FloatString(10), fee.FloatString(10), bps, q.Amounts.QuoteAmount, q.Amounts.Fee)
		return
	}
	if feeExact.Cmp(fee) != 0 {
		s.cov.hit(covFeeTruncated)
	}
	if exact.Cmp(amount) != 0 {
		switch {
		case half && amount.Cmp(exact) < 0:
			s.cov.hit(covHalfEvenDown)
		case half:
			s.cov.hit(covHalfEvenUp)
		default:
			s.cov.hit(covRoundedNotHalf)
		}
	}
}

// ---- validUntil ----

// validityKind is where a quote's validUntil sits against its RFQ's deadline.
type validityKind int

const (
	validOrdinary validityKind = iota
	validAtDeadline
	validPastDeadline
)

// boundaryValidity may set a quote's validUntil to its RFQ's deadline exactly or 1 ns after.
func (a *actor) boundaryValidity(c *machine.SubmitQuote, r machine.RfqDTO) validityKind {
	s := a.s
	if s.mix.Boundary.Validity == 0 || a.rng.Float64() >= s.mix.Boundary.Validity {
		return validOrdinary
	}
	t := time.Time(r.Deadline)
	if a.rng.IntN(2) == 0 {
		c.ValidUntil = &t
		return validAtDeadline
	}
	// A frame a resume replayed was decoded from its JSON, whose deadline shows the
	// millisecond only: 1 ns past that may still be before the RFQ's deadline. The probe
	// takes the desk's own deadline, which the in-process frames carry in full.
	if rf := s.desk.RFQs[r.RfqID]; rf != nil {
		t = rf.Deadline
	}
	t = t.Add(time.Nanosecond)
	c.ValidUntil = &t
	return validPastDeadline
}

// checkValidity asserts validUntil's answer: 1 ns after the deadline is never accepted (409,
// or 404 once the RFQ closed); exactly at it is accepted unless something else refuses.
func (s *Sim) checkValidity(c machine.SubmitQuote, kind validityKind, rep machine.Reply) {
	// 401: the actor's key was rotated away while the call was on its way (see checkTTL).
	if kind == validOrdinary || rep.Status == 599 || rep.Status == 401 {
		return
	}
	s.stats.Checks++
	switch {
	case kind == validPastDeadline && rep.Err == nil:
		s.failf(Safety, "quote on RFQ %s valid until %s, 1 ns past the deadline, was accepted", c.RFQID, c.ValidUntil.Format(time.RFC3339Nano))
	case kind == validPastDeadline && rep.Status != 409 && rep.Status != 404:
		s.failf(Safety, "quote on RFQ %s valid 1 ns past the deadline answered %d, not 409", c.RFQID, rep.Status)
	case kind == validPastDeadline && rep.Status == 409:
		s.cov.hit(covValidPastDeadline)
	case kind == validAtDeadline && rep.Err == nil:
		s.cov.hit(covValidAtDeadline)
	}
}

// ---- limited reads and batches ----

// boundaryRead reads one of the limited lists with limit 1, 500 or 501 and asserts the
// answer: 400 for 501; at most limit rows otherwise. (limit 0 never reaches the desk: the
// transport reads an absent or zero limit as the default.)
func (a *actor) boundaryRead() {
	s := a.s
	if s.mix.Boundary.Limit == 0 || a.rng.Float64() >= s.mix.Boundary.Limit {
		return
	}
	limit := []int{1, 500, 501}[a.rng.IntN(3)]
	var q machine.Query
	switch a.rng.IntN(3) {
	case 0:
		q = machine.QTrades{Limit: limit}
	case 1:
		q = machine.QRfqHistory{Limit: limit}
	default:
		q = machine.QMakerTrades{Limit: limit}
	}
	a.read(a.keyHash, q, func(rep machine.Reply) {
		if rep.Status == 599 || rep.Status == 401 { // 401: a key rotated meanwhile
			return
		}
		s.stats.Checks++
		rows := -1
		switch b := rep.Body.(type) {
		case []machine.TradeDTO:
			rows = len(b)
		case []machine.RfqHistoryDTO:
			rows = len(b)
		}
		switch {
		case limit > machine.MaxLimit && rep.Status != 400:
			s.failf(Safety, "%T with limit %d answered %d, not 400", q, limit, rep.Status)
		case limit > machine.MaxLimit:
			s.cov.hit(covLimit501)
		case rep.Status == 400:
			s.failf(Safety, "%T with limit %d refused 400: %s", q, limit, rep.Err.Message)
		case rep.Err == nil && rows > limit:
			s.failf(Safety, "%T with limit %d answered %d rows", q, limit, rows)
		case rep.Err == nil && limit == 1:
			s.cov.hit(covLimit1)
		case rep.Err == nil:
			s.cov.hit(covLimit500)
		}
	})
}

// boundaryBatch may pad an execute batch to exactly 50 entries (with action ids the desk
// does not know, each refused on its own) or to 51 (the whole batch refused with 400).
// It returns the entries to send and the size it aimed at (0: none).
func (a *actor) boundaryBatch(entries []machine.SignedAction) ([]machine.SignedAction, int) {
	s := a.s
	if s.mix.Boundary.Batch == 0 || len(entries) > machine.MaxBatch || a.rng.Float64() >= s.mix.Boundary.Batch {
		return entries, 0
	}
	size := machine.MaxBatch + a.rng.IntN(2)
	out := append([]machine.SignedAction(nil), entries...)
	for len(out) < size {
		out = append(out, machine.SignedAction{ActionID: fmt.Sprintf("act_%024x", a.rng.Uint64()), Signature: make([]byte, 64)})
	}
	return out, size
}

// checkBatch asserts a padded batch's answer: 51 entries are 400 and nothing runs; 50 are
// taken, one result per entry.
func (s *Sim) checkBatch(size int, rep machine.Reply) {
	if size == 0 || rep.Status == 599 || rep.Status == 401 { // 401: a key rotated meanwhile
		return
	}
	s.stats.Checks++
	switch {
	case size > machine.MaxBatch && rep.Status != 400:
		s.failf(Safety, "an execute batch of %d entries answered %d, not 400", size, rep.Status)
	case size > machine.MaxBatch:
		s.cov.hit(covBatch51)
	case rep.Status == 400:
		s.failf(Safety, "an execute batch of exactly %d entries refused 400: %s", size, rep.Err.Message)
	case rep.Err == nil:
		if res, ok := rep.Body.(machine.ExecBatchDTO); ok && len(res.Results) != size {
			s.failf(Safety, "an execute batch of %d entries answered %d results", size, len(res.Results))
			return
		}
		s.cov.hit(covBatch50)
	}
}
