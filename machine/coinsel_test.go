package machine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/deskco/rfqdesk/money"
)

// fakeCoin is a free holding of the fake ledger's coin selection.
type fakeCoin struct {
	cid    string
	amount money.Decimal
}

// fund gives party free holdings of the amounts in instrument (a catalog symbol) and
// makes the fake ledger choose the inputs of its spending prepares as the adapter does:
// the smallest single holding that covers the amount, else the largest first, never one
// the call reserves; insufficient funds when they cannot cover it.
func (f *fakeLedger) fund(party, registryID string, amounts ...string) []string {
	if f.coins == nil {
		f.coins = map[string][]fakeCoin{}
	}
	var cids []string
	for _, a := range amounts {
		f.n++
		c := fakeCoin{cid: fmt.Sprintf("00coin%d", f.n), amount: money.MustParse(a)}
		f.coins[party+"|"+registryID] = append(f.coins[party+"|"+registryID], c)
		cids = append(cids, c.cid)
	}
	return cids
}

// spendOf is the registry id and amount a spending command takes from the actor's
// holdings (ok false for any other).
func spendOf(cmd *Command) (string, money.Decimal, bool) {
	switch {
	case cmd == nil:
	case cmd.Allocate != nil && cmd.Allocate.Send:
		return cmd.Allocate.Instrument, cmd.Allocate.Amount, true
	case cmd.Transfer != nil:
		return cmd.Transfer.Instrument, cmd.Transfer.Amount, true
	}
	return "", money.Zero, false
}

// selectCoins names the inputs of a spending prepare of a funded party (res.Inputs), or
// fails it with insufficient funds; it reports whether the prepare goes on.
func (f *fakeLedger) selectCoins(c LedgerCall, res *LedgerResult) bool {
	inst, amount, ok := spendOf(c.Command)
	coins, funded := f.coins[c.ActAs+"|"+inst]
	if !ok || !funded {
		return true
	}
	if !slices.IsSorted(c.Reserved) {
		panic(fmt.Sprintf("reserved holdings not sorted: %v", c.Reserved))
	}
	var free []fakeCoin
	for _, k := range coins {
		if _, r := slices.BinarySearch(c.Reserved, k.cid); !r {
			free = append(free, k)
		}
	}
	// Largest first, ties by id, as the ledger lists them.
	slices.SortFunc(free, func(a, b fakeCoin) int {
		if n := b.amount.Cmp(a.amount); n != 0 {
			return n
		}
		return strings.Compare(a.cid, b.cid)
	})
	for i := len(free) - 1; i >= 0; i-- {
		if free[i].amount.Cmp(amount) >= 0 {
			res.Inputs = []string{free[i].cid}
			return true
		}
	}
	sum := money.Zero
	for _, k := range free {
		if sum.Cmp(amount) >= 0 {
			break
		}
		res.Inputs = append(res.Inputs, k.cid)
		sum = sum.Add(k.amount)
	}
	if sum.Cmp(amount) < 0 {
		res.Inputs = nil
		res.Failure = &LedgerFailure{Category: LedgerInsufficientFunds, Message: fmt.Sprintf("%s %s free, %s needed", sum, inst, amount)}
		return false
	}
	return true
}

// spendCoins spends the inputs of an executed prepared transaction, giving the change
// back as a new holding; an input spent since fails it as inactive. It reports whether
// the execute goes on.
func (f *fakeLedger) spendCoins(p preparedTx, res *LedgerResult) bool {
	inst, amount, ok := spendOf(p.cmd)
	if !ok || len(p.inputs) == 0 {
		return true
	}
	key := p.actAs + "|" + inst
	coins := f.coins[key]
	sum := money.Zero
	for _, cid := range p.inputs {
		i := slices.IndexFunc(coins, func(k fakeCoin) bool { return k.cid == cid })
		if i < 0 {
			res.Failure = &LedgerFailure{Category: LedgerInactive, Message: "input holding " + cid + " was spent since prepare"}
			return false
		}
		sum = sum.Add(coins[i].amount)
	}
	coins = slices.DeleteFunc(slices.Clone(coins), func(k fakeCoin) bool { return slices.Contains(p.inputs, k.cid) })
	if change := sum.Sub(amount); change.Sign() > 0 {
		coins = append(coins, fakeCoin{cid: f.cid(), amount: change})
	}
	f.coins[key] = coins
	return true
}

// coins runs the transcript directives of coin selection: `coins <party> symbol=s
// amounts=(a,b,…)` funds the party in the fake ledger and prints its holdings;
// `reserved <party>` prints the holdings the desk reserves for it.
func (tr *transcript) coins(td *datadriven.TestData) {
	a := tr.who(td, "by")
	name := td.CmdArgs[0].Key
	if td.Cmd == "reserved" {
		fmt.Fprintf(&tr.out, "%s reserves %v\n", name, tr.h.d.reservedOf(a.id))
		return
	}
	inst, ok := tr.h.d.Cfg.instrument(tr.arg(td, "symbol", "cbtc"))
	if !ok {
		tr.h.t.Fatalf("%s: unknown symbol", td.Pos)
	}
	cids := tr.h.ledger.fund(a.id, inst.RegistryID, tr.vals(td, "amounts")...)
	fmt.Fprintf(&tr.out, "%s holds %s %v of %v\n", name, inst.Symbol, cids, tr.vals(td, "amounts"))
}
