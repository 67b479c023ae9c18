package sim

import (
	"crypto/ed25519"
	"fmt"
	"slices"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Coin selection (machine/coinsel.go): the desk names the input holdings of every send
// allocation and transfer it prepares and reserves them while the prepared transaction
// lives, so a maker's concurrent quotes never name one holding; a quote the maker's
// unreserved holdings cannot fund is refused with 409 INSUFFICIENT_FUNDS. The simulator's
// makers quote every RFQ they are invited to whatever their funds, so they often quote
// more than they hold at once (the adversarial case comes by itself).
const (
	// covQuoteFundsReserved: a maker with two or more live prepared transactions (on
	// disjoint holdings, as the invariant checks) had a quote refused for insufficient
	// funds that its free holdings would have covered but for the holdings the others
	// reserve.
	covQuoteFundsReserved = "a quote refused for funds the maker's other live quotes reserve"
	// covReservationFreedByRestart: a restart undid a quote or an accept still funding
	// whose prepared allocation had reserved holdings, and freed them.
	covReservationFreedByRestart = "holdings reserved by a quote or accept a restart undid were freed"
	// covOutsideSpend: a maker spent, outside the desk, a holding one of its actions names
	// (maybeSpendOutside).
	covOutsideSpend = "a maker spent outside the desk a holding its action names"
)

// checkCoinSelection fails the run when the desk's state breaks a coin selection
// invariant: a holding named by two of its live prepared transactions, or two spending
// prepares of a party with the ledger at once.
func (s *Sim) checkCoinSelection() {
	s.stats.Checks++
	if p := s.desk.CoinSelectionProblem(); p != "" {
		s.failf(Safety, "coin selection: %s", p)
	}
}

// noteQuoteFundsRefused counts covQuoteFundsReserved for a quote of maker on r at price
// the desk refused for insufficient funds.
func (s *Sim) noteQuoteFundsRefused(maker string, r machine.RfqDTO, price money.Decimal, rep machine.Reply) {
	if rep.Err == nil || rep.Err.Code != machine.CodeInsufficientFunds {
		return
	}
	symbol, amount := r.Base, r.Qty // the taker buys: the maker sends the base
	if r.Direction != machine.Buy {
		symbol, amount = r.Quote, r.Qty.MulHalfEven(price)
	}
	registry := ""
	for _, in := range s.desk.Cfg.Instruments {
		if in.Symbol == symbol {
			registry = in.RegistryID
		}
	}
	live := 0
	var reserved []string
	for _, x := range s.desk.Actions {
		if x.Party == maker && len(x.Inputs) > 0 {
			live++
			reserved = append(reserved, x.Inputs...)
		}
	}
	if live < 2 {
		return
	}
	total := money.Zero
	held := false
	for _, h := range s.ledger.L.FreeHoldings(maker, registry) {
		total = total.Add(h.Amount)
		held = held || slices.Contains(reserved, h.CID)
	}
	if held && total.Cmp(amount) >= 0 {
		s.cov.hit(covQuoteFundsReserved)
	}
}

// reservedCount is how many holdings the desk reserves, over every party.
func (s *Sim) reservedCount() int {
	n := 0
	for _, x := range s.desk.Actions {
		n += len(x.Inputs)
	}
	for _, h := range s.desk.Held {
		switch h.Kind {
		case "quote.prepare":
			if q := s.desk.Quotes[h.Entity]; q != nil && q.State == machine.QuoteFunding {
				n += allocInputs(q.Allocations)
			}
		case "trade.prepare":
			if t := s.desk.Trades[h.Entity]; t != nil && t.State == machine.TradeAllocating {
				n += allocInputs(t.Allocations)
			}
		}
	}
	return n
}

func allocInputs(als []machine.AllocationRef) int {
	n := 0
	for _, al := range als {
		if al.PreparedID != "" {
			n += len(al.Inputs)
		}
	}
	return n
}

// noteReservationsFreed counts covReservationFreedByRestart when the Boot just applied
// reserves fewer holdings than the desk did before it (a restart ends no action by itself:
// what it frees is the funding quotes and accepts it undid).
func (s *Sim) noteReservationsFreed(before int) {
	if s.desk != nil && s.reservedCount() < before {
		s.cov.hit(covReservationFreedByRestart)
	}
}

// coinSelGoals: a set of runs meets a quote refused for funds the maker's other quotes
// reserve; with crashes, a restart that freed what an undone quote or accept reserved.
func coinSelGoals(k Knobs, runs int) []string {
	var goals []string
	if runs > 1 {
		goals = append(goals, covQuoteFundsReserved)
	}
	if runs > 1 && k.CrashRate > 0 {
		goals = append(goals, covReservationFreedByRestart)
	}
	return goals
}

// outsideSpendRate is the chance that a maker, about to sign its actions, first spends one
// of the holdings the first of them names outside the desk (a treasury move in another
// wallet, which a real maker may make at any time): it transfers the holding to the
// faucet reservoir on the ledger with its own key and withdraws the transfer at once, so
// the funds come back as a new holding. The desk's prepared transaction then names a
// holding that is gone, and its execute meets an inactive input, as on Canton: the only
// way left to meet one, since the desk's own transactions never contend.
const outsideSpendRate = 0.01

// maybeSpendOutside makes the outside spend for the actions a maker is about to sign.
func (a *actor) maybeSpendOutside(xs []machine.SignActionDTO) {
	s := a.s
	if a.role != roleMaker || s.liveness || len(xs) == 0 || a.rng.Float64() >= outsideSpendRate {
		return
	}
	x := s.desk.Actions[xs[0].ID]
	if x == nil || len(x.Inputs) == 0 || x.Party != a.party {
		return
	}
	l := s.ledger.L
	var h *ledgersim.Holding
	for _, c := range l.Holdings(a.party) {
		if c.CID == x.Inputs[0] && c.Lock == nil {
			h = &c
			break
		}
	}
	if h == nil {
		return
	}
	s.cov.hit(covOutsideSpend)
	id := fmt.Sprintf("outside:%s:%d", a.hint, s.cov[covOutsideSpend])
	run := func(cmd ledgersim.Command, cmdID string) (ledgersim.Update, error) {
		p, err := l.Prepare(a.party, cmd, cmdID)
		if err != nil {
			return ledgersim.Update{}, err
		}
		return l.Execute(p.Blob, ed25519.Sign(a.priv, p.Hash[:]))
	}
	spend := ledgersim.Transfer{Receiver: l.Reservoir(), Instrument: h.Instrument, Amount: h.Amount, Reason: "outside", Inputs: []string{h.CID}}
	back := func(u ledgersim.Update, err error) {
		if err != nil || u.TransferInstruction == "" {
			return // refused (or its answer lost): the desk's transaction may still run
		}
		s.dirtyLedger = true
		if _, err := run(ledgersim.WithdrawTransfer{Instruction: u.TransferInstruction}, id+":back"); err == nil {
			return
		}
		// The withdrawal was refused or its answer lost: the funds stay in the instruction,
		// which the reservoir never takes; the maker is poorer, nothing else changes.
	}
	delay := l.Config().SequencingDelay
	if delay <= 0 {
		back(run(spend, id))
		return
	}
	// With a sequencing delay the spend stays in flight as long, its input locked: the
	// desk's execute of the action, signed next, meets an input locked by a transaction in
	// flight (contention) and, once the spend committed, an inactive one.
	p, err := l.Prepare(a.party, spend, id)
	if err != nil {
		return
	}
	f, err := l.BeginExecute(p.Blob, ed25519.Sign(a.priv, p.Hash[:]))
	if err != nil {
		return
	}
	ad := s.ledger
	s.after(delay, func() {
		if s.ledger != ad { // the ledger crashed meanwhile: the spend is lost with it
			f.Abandon()
			return
		}
		back(f.Commit())
	})
}

// spendingCall returns the instrument and amount a prepare or submit spends from its
// acting party's holdings (a send allocation's, a transfer's); ok is false otherwise.
func spendingCall(c machine.LedgerCall) (instrument string, amount money.Decimal, ok bool) {
	if (c.Op != machine.OpPrepare && c.Op != machine.OpSubmit) || c.Command == nil {
		return "", money.Zero, false
	}
	switch {
	case c.Command.Allocate != nil && c.Command.Allocate.Send:
		return c.Command.Allocate.Instrument, c.Command.Allocate.Amount, true
	case c.Command.Transfer != nil:
		return c.Command.Transfer.Instrument, c.Command.Transfer.Amount, true
	}
	return "", money.Zero, false
}

// freeBeforeSpend lists the acting party's free holdings of what a spending call spends,
// as the ledger has them just before the call (what the desk's selection could see), or
// nil for any other call.
func (s *Sim) freeBeforeSpend(c machine.LedgerCall) []ledgersim.FreeHolding {
	instrument, _, ok := spendingCall(c)
	if !ok {
		return nil
	}
	return s.ledger.L.FreeHoldings(c.ActAs, instrument)
}

// judgeSelection checks the desk's coin selection for a spending call on its own, without
// the adapter's rule: the holdings it named are none of those the call says the desk's
// live prepared transactions reserve, and a refusal for funds is right: the free holdings
// the desk did not reserve (free, listed before the call) cannot cover the amount with at
// most the ledger's input limit of them. A desk that reserved too much, or an adapter that
// overlooked a holding, would refuse a quote the maker can fund.
func (s *Sim) judgeSelection(c machine.LedgerCall, free []ledgersim.FreeHolding, res machine.LedgerResult) {
	_, amount, ok := spendingCall(c)
	if !ok {
		return
	}
	reserved := make(map[string]bool, len(c.Reserved))
	for _, cid := range c.Reserved {
		reserved[cid] = true
	}
	for _, cid := range res.Inputs {
		if reserved[cid] {
			s.failf(Safety, "%s %s named holding %s, which a live prepared transaction of the desk reserves", c.Op, c.CommandID, cid)
			return
		}
	}
	if res.Failure == nil || res.Failure.Category != machine.LedgerInsufficientFunds {
		return
	}
	// Largest first (as free is ordered) needs the fewest holdings to cover the amount.
	sum, n := money.Zero, 0
	for _, h := range free {
		if reserved[h.CID] {
			continue
		}
		sum, n = sum.Add(h.Amount), n+1
		if sum.Cmp(amount) >= 0 {
			break
		}
	}
	if sum.Cmp(amount) >= 0 && n <= s.ledger.L.MaxInputs() {
		s.failf(Safety, "%s %s of %s refused for funds, but %d unreserved free holdings of %s cover it (%s)",
			c.Op, c.CommandID, amount, n, c.ActAs, sum)
	}
}
