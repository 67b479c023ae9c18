package ledgersim

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// queryNow is the time queries judge lock expiry by: the clock, never earlier than the
// latest call's time. Called under the read lock.
func (l *Ledger) queryNow() time.Time {
	t := l.cfg.Clock.Now()
	if t.Before(l.now) {
		return l.now
	}
	return t
}

// Holdings returns every holding of party, locked ones included (each with its Lock),
// sorted by instrument then contract id.
func (l *Ledger) Holdings(party string) []Holding {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := l.st
	cs := st.holdingsByOwner.of(party)
	out := make([]Holding, 0, len(cs))
	for _, c := range cs {
		out = append(out, st.viewHolding(c.h))
	}
	slices.SortFunc(out, func(a, b Holding) int {
		return cmp.Or(strings.Compare(a.Instrument, b.Instrument), strings.Compare(a.CID, b.CID))
	})
	return out
}

// Balances returns party's free and locked totals per instrument it holds, sorted by
// instrument id. A holding whose lock has lapsed counts as free.
func (l *Ledger) Balances(party string) []Balance {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := l.st
	now := l.queryNow()
	by := map[string]*Balance{}
	var ids []string
	for _, c := range st.holdingsByOwner.of(party) {
		h := c.h
		b := by[h.Instrument]
		if b == nil {
			b = &Balance{Instrument: h.Instrument}
			b.Symbol, b.DisplaySymbol = st.symbols(h.Instrument)
			by[h.Instrument] = b
			ids = append(ids, h.Instrument)
		}
		if h.FreeAt(now) {
			b.Free = b.Free.Add(h.Amount)
		} else {
			b.Locked = b.Locked.Add(h.Amount)
		}
	}
	sort.Strings(ids)
	out := make([]Balance, len(ids))
	for i, id := range ids {
		out[i] = *by[id]
	}
	return out
}

func (st *state) viewInstruction(t *TransferInstruction) TransferInstruction {
	c := *t
	c.Symbol, c.DisplaySymbol = st.symbols(t.Instrument)
	return c
}

func (l *Ledger) transfers(set map[string]struct{}) []TransferInstruction {
	st := l.st
	now := l.queryNow()
	var out []TransferInstruction
	for cid := range set {
		t := st.contracts[cid].ti
		if !t.ExecuteBefore.IsZero() && !now.Before(t.ExecuteBefore) {
			continue
		}
		out = append(out, st.viewInstruction(t))
	}
	oldestFirst(out, func(t TransferInstruction) (int64, string) { return t.CreatedOffset, t.CID })
	return out
}

// oldestFirst sorts contracts by their creation offset, then their contract id (age gives
// both).
func oldestFirst[T any](cs []T, age func(T) (int64, string)) {
	slices.SortFunc(cs, func(a, b T) int {
		oa, ca := age(a)
		ob, cb := age(b)
		return cmp.Or(cmp.Compare(oa, ob), strings.Compare(ca, cb))
	})
}

// PendingTransfers returns the transfer instructions addressed to receiver that can
// still be accepted (its deposit inbox), oldest first.
func (l *Ledger) PendingTransfers(receiver string) []TransferInstruction {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.transfers(l.st.inbox[receiver])
}

// OutgoingTransfers returns the live, unexpired transfer instructions sent by sender,
// oldest first.
func (l *Ledger) OutgoingTransfers(sender string) []TransferInstruction {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.transfers(l.st.outbox[sender])
}

// Allocations returns the live allocations of owner, oldest first.
func (l *Ledger) Allocations(owner string) []Allocation {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []Allocation
	for _, c := range l.st.allocsByOwner.of(owner) {
		out = append(out, *c.al)
	}
	oldestFirst(out, func(a Allocation) (int64, string) { return a.CreatedOffset, a.CID })
	return out
}

// Allocation returns a live allocation.
func (l *Ledger) Allocation(cid string) (Allocation, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	c := l.st.contracts[cid]
	if c == nil || c.kind != ContractAllocation {
		return Allocation{}, newErr(CategoryNotFound, "allocation", "no live allocation %q", truncate(cid))
	}
	return *c.al, nil
}

// Contract returns a live contract of any kind.
func (l *Ledger) Contract(cid string) (Contract, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := l.st
	c := st.contracts[cid]
	if c == nil {
		return Contract{}, newErr(CategoryNotFound, "contract", "no live contract %q", truncate(cid))
	}
	out := Contract{CID: cid, Kind: c.kind}
	switch c.kind {
	case ContractHolding:
		h := st.viewHolding(c.h)
		out.Holding = &h
	case ContractTransferInstruction:
		t := st.viewInstruction(c.ti)
		out.TransferInstruction = &t
	case ContractAllocation:
		a := *c.al
		out.Allocation = &a
	case ContractPreapproval:
		p := *c.pa
		out.Preapproval = &p
	}
	return out, nil
}

// Update returns a retained update by id.
func (l *Ledger) Update(updateID string) (Update, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	seq, ok := l.st.updates.byUpdateID(updateID)
	if !ok {
		return Update{}, newErr(CategoryNotFound, "update", "no retained update %q", truncate(updateID))
	}
	return l.st.updates.update(seq), nil
}

// CommandResult returns the update a command id of actAs produced, while it is retained.
// It is an oracle for tests and the simulator's checks; a client learns what its commands
// did from Completions, as on Canton.
func (l *Ledger) CommandResult(actAs, commandID string) (Update, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	u, ok := l.st.doneUpdate(actAs, commandID)
	if !ok {
		return Update{}, false
	}
	return u.clone(), true
}

// PreparedTransaction returns a live prepared transaction.
func (l *Ledger) PreparedTransaction(id string) (Prepared, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r := l.st.prepared[id]
	if r == nil {
		return Prepared{}, newErr(CategoryNotFound, "prepared", "no live prepared transaction %q", truncate(id))
	}
	return r.p.clone(), nil
}

// Instruments returns the catalog: listed instruments in configuration order.
func (l *Ledger) Instruments() []Instrument {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []Instrument
	for _, id := range l.st.instrumentOrder {
		if in := l.st.instruments[id]; in.Listed {
			out = append(out, *in)
		}
	}
	return out
}

// Instrument returns an instrument of the registry, listed or not.
func (l *Ledger) Instrument(id string) (Instrument, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	in := l.st.instruments[id]
	if in == nil {
		return Instrument{}, newErr(CategoryNotFound, "instrument", "unknown instrument %q", truncate(id))
	}
	return *in, nil
}

// HasPreapproval reports whether party has a transfer preapproval.
func (l *Ledger) HasPreapproval(party string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.st.preapprovals[party]
	return ok
}

// Profile returns the ledger's network profile.
func (l *Ledger) Profile() Profile { return l.cfg.Profile }

// Offset returns the offset of the latest update (0 before the first).
func (l *Ledger) Offset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.st.offset
}

// Digest returns a digest of the whole state: parties, pending onboardings, the
// catalog, every live contract, live prepared transactions, retained updates and the id
// and offset counters. It is maintained incrementally: it costs one SHA-256 of 56 bytes
// plus the contributions of the live contracts among the latest 1,024 created, which
// are computed on first read. Two ledgers with equal digests answer every query alike.
func (l *Ledger) Digest() [32]byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.flushSums()
	return l.st.digest()
}

// Reservoir returns the faucet reservoir's party id ("" when none is configured).
func (l *Ledger) Reservoir() string { return l.st.reservoir }

// FaucetTransfers returns the Transfer commands of one faucet draw to receiver, one per
// drip entry: the faucet at ledger level is these transfers, submitted by the reservoir
// party (Submit with Reservoir() as actAs). They arrive in the receiver's inbox like any
// deposit. Empty when the profile has no faucet.
func (l *Ledger) FaucetTransfers(receiver string, executeBefore time.Time) []Transfer {
	if !l.cfg.Profile.FaucetEnabled() || l.st.reservoir == "" {
		return nil
	}
	out := make([]Transfer, len(l.cfg.Faucet.Drip))
	for i, d := range l.cfg.Faucet.Drip {
		out[i] = Transfer{Receiver: receiver, Instrument: d.Instrument, Amount: d.Amount, ExecuteBefore: executeBefore, Reason: "faucet"}
	}
	return out
}

// Supply returns the supply of an instrument: the sum of its holdings, fixed when it was
// created (the genesis funding, or for an instrument listed after genesis the reservoir
// funding minted with it), which nothing else changes.
func (l *Ledger) Supply(instrument string) (money.Decimal, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s, ok := l.st.supply[instrument]
	if !ok {
		return money.Zero, newErr(CategoryNotFound, "supply", "unknown instrument %q", truncate(instrument))
	}
	return s, nil
}

// CheckInvariants verifies the ledger's invariants and returns the first violation:
// supply conserved per instrument, every holding positive, every lock's owner contract
// consistent, the indexes in step with the contracts, the digest equal to a recount.
// It walks the whole state: for tests and simulations.
func (l *Ledger) CheckInvariants() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.flushSums()
	st := l.st
	total := map[string]money.Decimal{}
	var acc digestAcc
	cids := make([]string, 0, len(st.contracts))
	for cid := range st.contracts {
		cids = append(cids, cid)
	}
	sort.Strings(cids)
	for _, cid := range cids {
		c := st.contracts[cid]
		acc.add(contractSum(nil, c))
		switch c.kind {
		case ContractHolding:
			h := c.h
			if h.Amount.Sign() <= 0 {
				return fmt.Errorf("holding %s has non-positive amount %s", cid, h.Amount)
			}
			total[h.Instrument] = total[h.Instrument].Add(h.Amount)
			if !st.holdingsByOwner.has(h.Owner, c) {
				return fmt.Errorf("holding %s missing from its owner's index", cid)
			}
			if h.Lock != nil && !h.Lock.ExpiredAt(l.now) {
				if err := st.checkLockOwner(h); err != nil {
					return err
				}
			}
		case ContractAllocation:
			al := c.al
			if st.allocLeg[legKey{al.Settlement, al.LegID}] != cid {
				return fmt.Errorf("allocation %s missing from the leg index", cid)
			}
			if !st.allocsByOwner.has(al.Owner, c) {
				return fmt.Errorf("allocation %s missing from its owner's index", cid)
			}
			if al.Side == SideSend && l.now.Before(al.SettleBefore) {
				if h := st.holding(al.Locked); h == nil || h.Amount.Cmp(al.Amount) != 0 {
					return fmt.Errorf("send allocation %s lost its locked holding", cid)
				}
			}
		case ContractTransferInstruction:
			ti := c.ti
			if ti.ExecuteBefore.IsZero() || l.now.Before(ti.ExecuteBefore) {
				if h := st.holding(ti.Locked); h == nil || h.Amount.Cmp(ti.Amount) != 0 {
					return fmt.Errorf("transfer instruction %s lost its locked holding", cid)
				}
			}
		}
	}
	for _, id := range st.instrumentOrder {
		if !total[id].Equal(st.supply[id]) {
			return fmt.Errorf("instrument %s: holdings sum to %s, supply is %s", id, total[id], st.supply[id])
		}
	}
	for _, x := range []ownerIndex{st.holdingsByOwner, st.allocsByOwner} {
		for owner, list := range x {
			for i, c := range list.cs {
				if !c.live || c.ownerPos != i || (c.h != nil && c.h.Owner != owner) || (c.al != nil && c.al.Owner != owner) {
					return fmt.Errorf("owner index of %s holds a stale contract", owner)
				}
			}
		}
	}
	for k, s := range st.spendable {
		for i, e := range s.hs {
			if i > 0 && !holdingLess(e.h, s.hs[i-1].h) {
				return fmt.Errorf("spendable index of %s out of order at %s", k.owner, e.h.CID)
			}
			if e.key != amountKey(e.h.Amount) {
				return fmt.Errorf("spendable index of %s has a stale key for %s", k.owner, e.h.CID)
			}
		}
		for _, h := range s.holdings() {
			if st.holding(h.CID) != h || h.Owner != k.owner || h.Instrument != k.instrument {
				return fmt.Errorf("spendable index holds stale holding %s", h.CID)
			}
		}
	}
	for _, r := range st.prepared {
		acc.add(r.sum)
	}
	for _, p := range st.parties {
		acc.add(partySum(nil, p))
	}
	for _, p := range st.pending {
		acc.add(p.sum)
	}
	for _, in := range st.instruments {
		acc.add(instrumentSum(nil, in))
	}
	slots, first := st.updates.live()
	for i := range slots {
		u := st.updates.update(first + uint64(i))
		sum := updateSum(nil, &u)
		if sum != slots[i].sum {
			return fmt.Errorf("retained update %s: its digest contribution is not its content's", truncate(u.UpdateID))
		}
		acc.add(sum)
	}
	if acc != st.acc {
		return fmt.Errorf("incremental digest out of step with a recount")
	}
	return nil
}

// checkLockOwner checks that a live lock belongs to a live allocation or instruction.
func (st *state) checkLockOwner(h *Holding) error {
	var kind, cid string
	if _, err := fmt.Sscanf(h.Lock.Context, "%s %s", &kind, &cid); err != nil {
		return fmt.Errorf("holding %s: unreadable lock context %q", h.CID, h.Lock.Context)
	}
	c := st.contracts[cid]
	switch {
	case kind == "allocation" && c != nil && c.kind == ContractAllocation && c.al.Locked == h.CID:
	case kind == "transfer" && c != nil && c.kind == ContractTransferInstruction && c.ti.Locked == h.CID:
	default:
		return fmt.Errorf("holding %s is locked for %q, which is gone", h.CID, h.Lock.Context)
	}
	return nil
}
