package ledgeradapter

import (
	"slices"
	"sync"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Coin selection. On Canton the submitter names the holdings a transfer or an allocation
// spends (inputHoldingCids) and the participant reserves nothing at prepare, so the desk
// chooses them. The adapter reads the acting party's free holdings of the instrument from
// the ledger (FreeHoldings: its active, unlocked holding contracts, as a Canton client
// reads them from the active-contract service), leaves out the ones the machine says its
// live prepared transactions name (LedgerCall.Reserved), and chooses by SelectInputs. The
// reservation itself is machine state: the machine journals each prepare's inputs with
// its result (LedgerResult.Inputs) and keeps them while the prepared transaction lives,
// and it sends at most one such prepare of a party at a time (machine/coinsel.go), so
// the reserved set it passes is exact.

// SelectInputs chooses the input holdings that cover amount among free (a party's free
// holdings of one instrument, largest first, as Ledger.FreeHoldings lists them), leaving
// out reserved (sorted): the smallest single holding that covers amount, else the
// largest first until they cover it, at most maxInputs of them. When the unreserved
// holdings cannot cover amount within maxInputs it returns the shortfall instead: Free is
// what the unreserved holdings hold, and MaxInputs is set when they would cover amount
// but only with more than maxInputs of them. Deterministic: ties in amount go by
// contract id, as free is ordered.
func SelectInputs(free []ledgersim.FreeHolding, reserved []string, amount money.Decimal, maxInputs int) ([]string, *ledgersim.Shortfall) {
	usable := func(h ledgersim.FreeHolding) bool {
		_, found := slices.BinarySearch(reserved, h.CID)
		return !found
	}
	for i := len(free) - 1; i >= 0; i-- { // smallest first
		if h := free[i]; h.Amount.Cmp(amount) >= 0 && usable(h) {
			return []string{h.CID}, nil
		}
	}
	var out []string
	sum, total := money.Zero, money.Zero
	for _, h := range free {
		if !usable(h) {
			continue
		}
		total = total.Add(h.Amount)
		if len(out) < maxInputs && sum.Cmp(amount) < 0 {
			out = append(out, h.CID)
			sum = sum.Add(h.Amount)
		}
	}
	if sum.Cmp(amount) >= 0 {
		return out, nil
	}
	sf := &ledgersim.Shortfall{Instrument: "", Free: total, Needed: amount}
	if total.Cmp(amount) >= 0 {
		sf.MaxInputs = maxInputs
	}
	return nil, sf
}

// spending returns the instrument and amount a command spends from the acting party's
// holdings: a send allocation's or a transfer's; ok is false for any other command.
func spending(cmd ledgersim.Command) (instrument string, amount money.Decimal, ok bool) {
	switch v := cmd.(type) {
	case ledgersim.Allocate:
		return v.Instrument, v.Amount, v.Side == ledgersim.SideSend
	case ledgersim.Transfer:
		return v.Instrument, v.Amount, true
	}
	return "", money.Zero, false
}

// withInputs is cmd naming the input holdings chosen for it, and those holdings; a
// command that spends nothing comes back as it is. When the party's unreserved holdings
// cannot cover it, the shortfall is returned with cmd naming what there is (the ledger
// then refuses it, unless the command already took effect, which it says first).
func (a *Adapter) withInputs(call machine.LedgerCall, cmd ledgersim.Command) (ledgersim.Command, []string, *ledgersim.Shortfall) {
	instrument, amount, ok := spending(cmd)
	if !ok {
		return cmd, nil, nil
	}
	reserved := call.Reserved
	if !slices.IsSorted(reserved) { // the machine sorts them; a caller that did not is not trusted
		reserved = slices.Sorted(slices.Values(reserved))
	}
	// The ledger's index answers the rule without a copy of the party's holdings; only a
	// shortfall reads them all, to say what there is.
	if inputs, ok := a.L.SelectFree(call.ActAs, instrument, amount, reserved, a.L.MaxInputs()); ok {
		return named(cmd, inputs), inputs, nil
	}
	free := a.L.FreeHoldings(call.ActAs, instrument)
	inputs, sf := SelectInputs(free, reserved, amount, a.L.MaxInputs())
	if sf != nil {
		sf.Owner, sf.Instrument = call.ActAs, instrument
		inputs = nil
		for _, h := range free {
			if _, found := slices.BinarySearch(reserved, h.CID); !found && len(inputs) < a.L.MaxInputs() {
				inputs = append(inputs, h.CID)
			}
		}
	}
	return named(cmd, inputs), inputs, sf
}

// named is a spending command naming inputs as its input holdings.
func named(cmd ledgersim.Command, inputs []string) ledgersim.Command {
	switch v := cmd.(type) {
	case ledgersim.Allocate:
		v.Inputs = inputs
		return v
	case ledgersim.Transfer:
		v.Inputs = inputs
		return v
	}
	return cmd
}

// partyLocks serialises the calls of one acting party that name input holdings, so that
// reading its free holdings and the call that spends them are one step: two submits of
// a desk-signed party (the house maker, the faucet reservoir) never name the same holding.
type partyLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

// lock locks party's mutex and returns its unlock.
func (p *partyLocks) lock(party string) func() {
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]*sync.Mutex{}
	}
	m, ok := p.m[party]
	if !ok {
		m = &sync.Mutex{}
		p.m[party] = m
	}
	p.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// spend runs a prepare or a submit of cmd (run) with the input holdings chosen for it,
// under the acting party's lock when it spends, and returns those holdings and, when the
// party's unreserved holdings could not cover it, the shortfall.
func (a *Adapter) spend(call machine.LedgerCall, cmd ledgersim.Command, run func(ledgersim.Command) error) ([]string, *ledgersim.Shortfall, error) {
	if _, _, ok := spending(cmd); !ok {
		return nil, nil, run(cmd)
	}
	defer a.locks.lock(call.ActAs)()
	cmd, inputs, sf := a.withInputs(call, cmd)
	return inputs, sf, run(cmd)
}

// refused is the result of a prepare or submit the ledger refused. When the desk's own
// selection fell short (sf) and the ledger refused the inputs for it (insufficient
// funds, or, none being free, no input named), the failure is insufficient funds in the desk's
// terms: the free holdings its live prepared transactions do not reserve cannot cover
// the amount. Any other refusal (a duplicate of a command that took effect, an expired
// deadline) is the ledger's, as it said it.
func (a *Adapter) refused(res machine.LedgerResult, err error, inputs []string, sf *ledgersim.Shortfall) (machine.LedgerResult, error) {
	res.Failure = failure(err)
	cat := ledgersim.CategoryOf(err)
	switch {
	case sf != nil && (cat == ledgersim.CategoryInsufficientFunds || (cat == ledgersim.CategoryInvalid && len(inputs) == 0)):
		res.Failure = &machine.LedgerFailure{Category: machine.LedgerInsufficientFunds, Message: a.shortfallText(*sf)}
	default:
		if got, ok := ledgersim.ShortfallOf(err); ok {
			res.Failure.Message = a.shortfallText(got)
		}
	}
	return res, err
}
