package ledgersim

import (
	"slices"
	"strings"

	"github.com/deskco/rfqdesk/money"
)

type settlePlan struct {
	cmd    Settle
	allocs []*Allocation
	ins    []*Instrument // per leg
	want   []cover       // the check's scratch
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
	p := &c.st.plans.settle // one plan at a time: reused (plans.go)
	*p = settlePlan{cmd: s, ins: slices.Grow(p.ins[:0], len(s.Legs))[:len(s.Legs)], allocs: p.allocs[:0], want: p.want[:0]}
	// What the legs need per (party, instrument, side), in a small slice searched
	// linearly: a settlement has a handful of legs (at most MaxLegs).
	want := p.want
	need := func(k coverKey, amt money.Decimal) {
		for i := range want {
			if want[i].k == k {
				want[i].amt = want[i].amt.Add(amt)
				return
			}
		}
		want = append(want, cover{k, amt})
	}
	for i, l := range s.Legs {
		if l.Sender == l.Receiver {
			return nil, newErr(CategoryInvalid, "", "leg %d sends to its own sender", i)
		}
		if err := c.party(l.Sender, "sender"); err != nil {
			return nil, err
		}
		in, err := c.delivery(l.Receiver, l.Instrument, l.Amount)
		if err != nil {
			return nil, err
		}
		p.ins[i] = in
		need(coverKey{l.Sender, l.Instrument, SideSend}, l.Amount)
		need(coverKey{l.Receiver, l.Instrument, SideReceive}, l.Amount)
	}
	for i, cid := range s.Allocations {
		if slices.Contains(s.Allocations[:i], cid) {
			return nil, newErr(CategoryInvalid, "", "allocation %s named twice", cid)
		}
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
		if other := allocFor(p.allocs, coverOf(al)); other != nil {
			return nil, newErr(CategoryMismatch, "", "allocations %s and %s cover the same party, instrument and side", other.CID, cid)
		}
		if al.Side == SideSend {
			if h := c.st.holding(al.Locked); !lockedFor(h, "allocation ", cid) {
				return nil, c.missing("locked holding of allocation", cid)
			}
		}
		p.allocs = append(p.allocs, al)
	}
	p.want = want
	slices.SortFunc(want, func(a, b cover) int {
		if c := strings.Compare(a.k.party, b.k.party); c != 0 {
			return c
		}
		if c := strings.Compare(a.k.instrument, b.k.instrument); c != 0 {
			return c
		}
		return int(a.k.side) - int(b.k.side)
	})
	for _, w := range want {
		al := allocFor(p.allocs, w.k)
		if al == nil {
			return nil, newErr(CategoryMismatch, "", "no %s allocation of %s for %s", w.k.side, w.k.party, w.k.instrument)
		}
		if !al.Amount.Equal(w.amt) {
			return nil, newErr(CategoryMismatch, "", "allocation %s is for %s, the legs need %s", al.CID, al.Amount, w.amt)
		}
	}
	for _, al := range p.allocs {
		k := coverOf(al)
		if !slices.ContainsFunc(want, func(w cover) bool { return w.k == k }) {
			return nil, newErr(CategoryMismatch, "", "allocation %s is not used by any leg", al.CID)
		}
	}
	return p, nil
}

// cover is what the legs of a settlement need of one party, instrument and side.
type cover struct {
	k   coverKey
	amt money.Decimal
}

func coverOf(al *Allocation) coverKey { return coverKey{al.Owner, al.Instrument, al.Side} }

// allocFor returns the allocation among allocs covering k, or nil.
func allocFor(allocs []*Allocation, k coverKey) *Allocation {
	for _, al := range allocs {
		if coverOf(al) == k {
			return al
		}
	}
	return nil
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
