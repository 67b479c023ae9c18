package ledgersim

import (
	"sort"

	"github.com/deskco/rfqdesk/money"
)

type settlePlan struct {
	cmd    Settle
	allocs []*Allocation
	ins    []*Instrument // per leg
}

type coverKey struct {
	party, instrument string
	side              Side
}

// settle checks that a settlement can execute atomically: the executor acts, every named
// allocation is live, of this settlement and inside its window, and for every (party,
// instrument) the legs it sends and receives add up exactly to its Send and Receive
// allocations, with no allocation left unused.
func (c *checker) settle(s Settle) (plan, error) {
	if c.actAs != s.Settlement.Executor {
		return nil, newErr(CategoryForbidden, "", "only the executor %s settles %q", s.Settlement.Executor, s.Settlement.ID)
	}
	if !validID(s.Settlement.ID) {
		return nil, newErr(CategoryInvalid, "", "settlement id must be 1..%d bytes", maxIDLen)
	}
	maxLegs := c.st.cfg.Limits.MaxLegs
	if len(s.Legs) == 0 || len(s.Legs) > maxLegs {
		return nil, newErr(CategoryInvalid, "", "a settlement has 1..%d legs, got %d", maxLegs, len(s.Legs))
	}
	if len(s.Allocations) == 0 || len(s.Allocations) > 2*maxLegs {
		return nil, newErr(CategoryInvalid, "", "a settlement names 1..%d allocations, got %d", 2*maxLegs, len(s.Allocations))
	}
	p := &settlePlan{cmd: s, ins: make([]*Instrument, len(s.Legs))}
	want := map[coverKey]money.Decimal{}
	for i, l := range s.Legs {
		if l.Sender == l.Receiver {
			return nil, newErr(CategoryInvalid, "", "leg %d sends to its own sender", i)
		}
		if err := c.party(l.Sender, "sender"); err != nil {
			return nil, err
		}
		if err := c.party(l.Receiver, "receiver"); err != nil {
			return nil, err
		}
		in, err := c.instrument(l.Instrument)
		if err != nil {
			return nil, err
		}
		if err := checkAmount(in, l.Amount); err != nil {
			return nil, err
		}
		p.ins[i] = in
		ks := coverKey{l.Sender, l.Instrument, SideSend}
		kr := coverKey{l.Receiver, l.Instrument, SideReceive}
		want[ks] = want[ks].Add(l.Amount)
		want[kr] = want[kr].Add(l.Amount)
	}
	have := map[coverKey]*Allocation{}
	seen := map[string]bool{}
	for _, cid := range s.Allocations {
		if seen[cid] {
			return nil, newErr(CategoryInvalid, "", "allocation %s named twice", cid)
		}
		seen[cid] = true
		k := c.st.contracts[cid]
		if k == nil || k.kind != ContractAllocation {
			return nil, c.missing("allocation", cid)
		}
		al := k.al
		if al.Settlement != s.Settlement {
			return nil, newErr(CategoryMismatch, "", "allocation %s belongs to settlement %q of %s", cid, al.Settlement.ID, al.Settlement.Executor)
		}
		if !c.now.Before(al.SettleBefore) {
			return nil, newErr(CategoryExpired, "", "allocation %s: settleBefore has passed", cid)
		}
		key := coverKey{al.Owner, al.Instrument, al.Side}
		if other, dup := have[key]; dup {
			return nil, newErr(CategoryMismatch, "", "allocations %s and %s cover the same party, instrument and side", other.CID, cid)
		}
		have[key] = al
		if al.Side == SideSend {
			if h := c.st.holding(al.Locked); h == nil || h.Lock == nil || h.Lock.Context != "allocation "+cid {
				return nil, c.missing("locked holding of allocation", cid)
			}
		}
		p.allocs = append(p.allocs, al)
	}
	keys := make([]coverKey, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.party != b.party {
			return a.party < b.party
		}
		if a.instrument != b.instrument {
			return a.instrument < b.instrument
		}
		return a.side < b.side
	})
	for _, k := range keys {
		al, ok := have[k]
		if !ok {
			return nil, newErr(CategoryMismatch, "", "no %s allocation of %s for %s", k.side, k.party, k.instrument)
		}
		if !al.Amount.Equal(want[k]) {
			return nil, newErr(CategoryMismatch, "", "allocation %s is for %s, the legs need %s", al.CID, al.Amount, want[k])
		}
	}
	for _, al := range p.allocs {
		if _, used := want[coverKey{al.Owner, al.Instrument, al.Side}]; !used {
			return nil, newErr(CategoryMismatch, "", "allocation %s is not used by any leg", al.CID)
		}
	}
	return p, nil
}

func (p *settlePlan) inputs() []string {
	out := make([]string, 0, 2*len(p.allocs))
	for _, al := range p.allocs {
		out = append(out, al.CID)
	}
	for _, al := range p.allocs {
		if al.Side == SideSend {
			out = append(out, al.Locked)
		}
	}
	return out
}
func (p *settlePlan) chosen() []string { return nil }

func (p *settlePlan) commit(t *tx) {
	for _, al := range p.allocs {
		t.archive(al.CID)
	}
	for _, al := range p.allocs {
		if al.Side == SideSend {
			t.archive(al.Locked)
		}
	}
	for i, l := range p.cmd.Legs {
		t.u.Receipts = append(t.u.Receipts, t.createHolding("", l.Receiver, p.ins[i], l.Amount))
	}
}
