package machine

import (
	"fmt"
	"slices"
	"strings"
)

// Coin selection and reservation. On Canton the submitter names the holdings a transfer
// or an allocation spends (inputHoldingCids), and nothing is reserved at prepare: two
// prepared transactions of one party may name the same holding, and the second to
// execute fails. The desk keeps its own prepared transactions apart:
//
//   - the adapter chooses the inputs of a send allocation's or a transfer's prepare among
//     the party's free holdings on the ledger, leaving out the call's Reserved, and
//     answers with them (LedgerResult.Inputs), which the journal keeps with the result;
//   - the desk keeps them with what it prepared: the allocation of a quote or a trade
//     (AllocationRef.Inputs) while its request is held, then the action made from it
//     (Action.Inputs), or the withdrawal's action; the reserved holdings of a party are
//     the inputs of its live actions and of its allocations whose request is still held
//     (reservedOf), a pure function of the desk's state, freed by whatever ends them
//     (executed, failed, expired, dropped, a quote or an accept undone by a restart);
//   - at most one such prepare of a party is with the ledger at a time: a second one waits
//     in Pending, marked Deferred, until the first's answer is applied (its inputs then
//     reserved), so the Reserved a prepare carries, computed when it goes out, is exact.
//
// A prepare the party's unreserved holdings cannot cover comes back as insufficient
// funds, and the quote (or accept, or withdrawal) is refused as SPEC says (409
// INSUFFICIENT_FUNDS). Desk-signed parties submit (nothing lives between prepare and
// execute), and the adapter serialises the submits of one party itself.

// spends reports whether c is the prepare of a command that spends the acting party's
// holdings: a send allocation or a transfer.
func spends(c *LedgerCall) bool {
	if c.Op != OpPrepare || c.Command == nil {
		return false
	}
	return (c.Command.Allocate != nil && c.Command.Allocate.Send) || c.Command.Transfer != nil
}

// spendInFlight reports whether a spending prepare of party other than the call except
// is with the ledger (pending and not deferred). Whether any matches does not depend on
// the map's order.
func (d *Desk) spendInFlight(party, except string) bool {
	for id, c := range d.Pending {
		if id != except && !c.Deferred && c.Call.ActAs == party && spends(&c.Call) {
			return true
		}
	}
	return false
}

// reservedOf returns the holdings of party that its live prepared transactions name,
// sorted and without repeats: the inputs of its actions, and of its allocations whose
// quote or accept still waits for the rest of its prepares (no action made yet).
func (d *Desk) reservedOf(party string) []string {
	out := d.reservedByActions(party)
	for _, h := range d.Held {
		var als []AllocationRef
		switch h.Kind {
		case contQuotePrepare:
			if q := d.Quotes[h.Entity]; q != nil && q.State == QuoteFunding && q.Maker == party {
				als = q.Allocations
			}
		case contTradePrepare:
			if t := d.Trades[h.Entity]; t != nil && t.State == TradeAllocating && t.Taker == party {
				als = t.Allocations
			}
		}
		for i := range als {
			if als[i].Owner == party && als[i].PreparedID != "" {
				out = append(out, als[i].Inputs...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// reservingOf returns the live actions of party that name input holdings, building the
// index from Actions on first use (after a restore, or in a new desk).
func (d *Desk) reservingOf(party string) map[string]*Action {
	if d.reserving == nil {
		d.reserving = map[string]map[string]*Action{}
		for _, x := range d.Actions {
			d.indexReserving(x, true)
		}
	}
	return d.reserving[party]
}

// indexReserving adds a live action to the index (or, add false, takes one out); nothing
// while the index is not built.
func (d *Desk) indexReserving(x *Action, add bool) {
	if d.reserving == nil || x == nil || len(x.Inputs) == 0 {
		return
	}
	m := d.reserving[x.Party]
	switch {
	case add && m == nil:
		d.reserving[x.Party] = map[string]*Action{x.ID: x}
	case add:
		m[x.ID] = x
	default:
		delete(m, x.ID)
		if len(m) == 0 {
			delete(d.reserving, x.Party)
		}
	}
}

// reservedByActions returns the inputs of party's live actions (unsorted, maybe repeated).
func (d *Desk) reservedByActions(party string) []string {
	var out []string
	for _, x := range d.reservingOf(party) {
		out = append(out, x.Inputs...)
	}
	return out
}

// emitCall hands a call to the adapter, a spending prepare with the holdings it must
// not name, computed now. While the desk boots, the quotes and accepts still held are
// being undone (boot), so their allocations' holdings no longer count: a re-issued
// withdrawal is not refused for funds the restart frees.
func (a *applier) emitCall(c LedgerCall) {
	if a.quiet {
		return
	}
	if spends(&c) {
		if a.booting {
			c.Reserved = slices.Compact(slices.Sorted(slices.Values(a.d.reservedByActions(c.ActAs))))
		} else {
			c.Reserved = a.d.reservedOf(c.ActAs)
		}
	}
	if a.out.Calls == nil {
		// Room for two at the first: an input that calls the ledger makes one or two calls
		// (in loop BenchmarkLifecycle/desk, counted: 11 allocations a lifecycle for this
		// slice, 7 now).
		a.out.Calls = make([]LedgerCall, 0, 2)
	}
	a.out.Calls = append(a.out.Calls, c)
}

// releaseDeferred sends the next spending prepare of party that waits (Deferred), once
// none of the party's is with the ledger: the one with the smallest command id, a choice
// that does not depend on the map's order.
func (a *applier) releaseDeferred(party string) {
	if a.d.spendInFlight(party, "") {
		return
	}
	var next *Continuation
	for _, c := range a.d.Pending {
		if c.Deferred && c.Call.ActAs == party && (next == nil || c.Call.CommandID < next.Call.CommandID) {
			next = c
		}
	}
	if next == nil {
		return
	}
	next.Deferred = false
	a.emitCall(next.Call)
}

// releaseAllDeferred releases the waiting prepares of every party (after a restart), in
// party order.
func (a *applier) releaseAllDeferred() {
	var parties []string
	for _, c := range a.d.Pending {
		if c.Deferred {
			parties = append(parties, c.Call.ActAs)
		}
	}
	slices.Sort(parties)
	for _, p := range slices.Compact(parties) {
		a.releaseDeferred(p)
	}
}

// writeCoinSelSection writes what the desk reserves (since snapshot version 5): the
// inputs of every action that names some (by action id), of every quote's and trade's
// allocation that names some (by quote or trade id and the allocation's index), and the
// command ids of the deferred prepares; each list sorted, each a count then its entries
// (an empty section is four zero bytes).
func writeCoinSelSection(e *encoder, d *Desk) {
	var ids []string
	for id, x := range d.Actions {
		if x != nil && len(x.Inputs) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	e.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.Str(id)
		e.Strs(d.Actions[id].Inputs)
	}
	writeAllocInputs(e, d.Quotes, func(q *Quote) []AllocationRef { return q.Allocations })
	writeAllocInputs(e, d.Trades, func(t *Trade) []AllocationRef { return t.Allocations })
	ids = ids[:0]
	for id, c := range d.Pending {
		if c != nil && c.Deferred {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	e.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.Str(id)
	}
}

// writeAllocInputs writes the inputs of the allocations of m's entities that name some:
// a count, then per allocation the entity's id, the allocation's index and its inputs.
func writeAllocInputs[T any](e *encoder, m map[string]*T, als func(*T) []AllocationRef) {
	type entry struct {
		id string
		i  int
	}
	var out []entry
	for id, v := range m {
		if v == nil {
			continue
		}
		for i, al := range als(v) {
			if len(al.Inputs) > 0 {
				out = append(out, entry{id, i})
			}
		}
	}
	slices.SortFunc(out, func(a, b entry) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return a.i - b.i
	})
	e.Uvarint(uint64(len(out)))
	for _, x := range out {
		e.Str(x.id)
		e.Uvarint(uint64(x.i))
		e.Strs(als(m[x.id])[x.i].Inputs)
	}
}

// readCoinSelSection reads what writeCoinSelSection wrote into d, refusing an entry that
// names nothing the snapshot holds.
func readCoinSelSection(dec *decoder, d *Desk) {
	for n := dec.Count(); n > 0 && dec.Err() == nil; n-- {
		id, inputs := dec.Str(), dec.Strs()
		if x := d.Actions[id]; x != nil {
			x.Inputs = inputs
		} else {
			dec.Failf("inputs of unknown action %q", id)
		}
	}
	readAllocInputs(dec, d.Quotes, func(q *Quote) []AllocationRef { return q.Allocations })
	readAllocInputs(dec, d.Trades, func(t *Trade) []AllocationRef { return t.Allocations })
	for n := dec.Count(); n > 0 && dec.Err() == nil; n-- {
		id := dec.Str()
		if c := d.Pending[id]; c != nil {
			c.Deferred = true
		} else {
			dec.Failf("unknown deferred call %q", id)
		}
	}
}

// readAllocInputs reads what writeAllocInputs wrote into m's allocations.
func readAllocInputs[T any](dec *decoder, m map[string]*T, als func(*T) []AllocationRef) {
	for n := dec.Count(); n > 0 && dec.Err() == nil; n-- {
		id, i, inputs := dec.Str(), dec.Uvarint(), dec.Strs()
		v := m[id]
		if v == nil || i >= uint64(len(als(v))) {
			dec.Failf("inputs of unknown allocation %d of %q", i, id)
			continue
		}
		als(v)[i].Inputs = inputs
	}
}

// liveInputs returns, per live prepared transaction of the desk (an action, or an
// allocation of a quote or an accept still waiting for its other prepares), the input
// holdings it names, keyed by its prepared id.
func (d *Desk) liveInputs() map[string][]string {
	out := map[string][]string{}
	for _, x := range d.Actions {
		if x != nil && len(x.Inputs) > 0 {
			out[x.PreparedID] = x.Inputs
		}
	}
	for _, h := range d.Held {
		als := d.heldAllocations(h)
		for _, al := range als {
			if al.PreparedID != "" && len(al.Inputs) > 0 {
				out[al.PreparedID] = al.Inputs
			}
		}
	}
	return out
}

// CoinSelectionProblem checks the coin selection invariants and describes the first one
// broken ("" when none): no holding is named by two live prepared transactions of the
// desk, and no party has two spending prepares with the ledger at once. The simulator
// checks it after every step; it walks every action, so it is for checks, not for the
// desk's own path.
func (d *Desk) CoinSelectionProblem() string {
	if d.reserving != nil { // the index agrees with Actions
		n := 0
		for party, m := range d.reserving {
			for id, x := range m {
				if d.Actions[id] != x || x.Party != party || len(x.Inputs) == 0 {
					return fmt.Sprintf("the reservation index holds action %s of %s, which is not a live action naming inputs", id, party)
				}
				n++
			}
		}
		for _, x := range d.Actions {
			if x != nil && len(x.Inputs) > 0 {
				n--
			}
		}
		if n != 0 {
			return "the reservation index misses live actions that name inputs"
		}
	}
	var live map[string][]string
	if d.mayShareInputs() { // coinsel_check.go
		live = d.liveInputs()
	}
	owner := map[string]string{}
	for _, id := range sortedKeys(live) {
		for _, cid := range live[id] {
			if other, dup := owner[cid]; dup {
				return fmt.Sprintf("holding %s named by the live prepared transactions %s and %s", cid, other, id)
			}
			owner[cid] = id
		}
	}
	inFlight := map[string]string{}
	for _, id := range sortedKeys(d.Pending) {
		c := d.Pending[id]
		if c == nil || c.Deferred || !spends(&c.Call) {
			continue
		}
		if other, dup := inFlight[c.Call.ActAs]; dup {
			return fmt.Sprintf("%s has two spending prepares with the ledger: %s and %s", c.Call.ActAs, other, id)
		}
		inFlight[c.Call.ActAs] = id
	}
	return ""
}
