package ledgersim

import "github.com/deskco/rfqdesk/money"

// named returns cmd with input holdings named for it when it is a spending Allocate or
// a Transfer that names none: the smallest of party's free holdings of the instrument
// that covers the amount alone, else the largest first until they cover it or the input
// limit is reached (all of them when they do not cover it, so that the ledger answers
// insufficient funds). The tests' stand-in for the submitter's coin selection (the
// desk's, the same rule, is in ledgeradapter).
func named(l *Ledger, party string, cmd Command) Command {
	pick := func(instrument string, amount money.Decimal) []string {
		free := l.FreeHoldings(party, instrument)
		for i := len(free) - 1; i >= 0; i-- { // smallest first
			if free[i].Amount.Cmp(amount) >= 0 {
				return []string{free[i].CID}
			}
		}
		var out []string
		sum := money.Zero
		for _, h := range free {
			if sum.Cmp(amount) >= 0 || len(out) == l.MaxInputs() {
				break
			}
			out = append(out, h.CID)
			sum = sum.Add(h.Amount)
		}
		return out
	}
	switch v := cmd.(type) {
	case Allocate:
		if v.Side == SideSend && v.Inputs == nil {
			v.Inputs = pick(v.Instrument, v.Amount)
		}
		return v
	case Transfer:
		if v.Inputs == nil {
			v.Inputs = pick(v.Instrument, v.Amount)
		}
		return v
	}
	return cmd
}

// prepare is Ledger.Prepare with input holdings named for a spending command (named).
func (e *env) prepare(party string, cmd Command, cmdID string) (Prepared, error) {
	return e.l.Prepare(party, named(e.l, party, cmd), cmdID)
}

// submit is Ledger.Submit with input holdings named for a spending command (named).
func (e *env) submit(party string, cmd Command, cmdID string) (Update, error) {
	return e.l.Submit(party, named(e.l, party, cmd), cmdID)
}
