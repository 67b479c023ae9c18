package ledgersim

import (
	"sort"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// holdingSet keeps the spendable holdings of one (owner, instrument) sorted by amount,
// largest first, then by contract id, so coin selection never sorts and never depends on
// map order.
type holdingSet struct{ hs []*Holding }

func holdingLess(a, b *Holding) bool {
	if c := a.Amount.Cmp(b.Amount); c != 0 {
		return c > 0
	}
	return a.CID < b.CID
}

func (s *holdingSet) search(h *Holding) int {
	return sort.Search(len(s.hs), func(i int) bool { return !holdingLess(s.hs[i], h) })
}

func (s *holdingSet) insert(h *Holding) {
	i := s.search(h)
	if i < len(s.hs) && s.hs[i].CID == h.CID {
		return
	}
	s.hs = append(s.hs, nil)
	copy(s.hs[i+1:], s.hs[i:])
	s.hs[i] = h
}

func (s *holdingSet) remove(h *Holding) {
	i := s.search(h)
	if i < len(s.hs) && s.hs[i].CID == h.CID {
		copy(s.hs[i:], s.hs[i+1:])
		s.hs[len(s.hs)-1] = nil
		s.hs = s.hs[:len(s.hs)-1]
	}
}

// selectHoldings chooses spendable holdings of owner in instrument covering amount.
// Holdings chosen by other live prepared transactions are avoided while others suffice,
// so two quotes of one maker do not contend needlessly. Among the others it takes the
// smallest single holding that covers the amount, else the largest first.
func (st *state) selectHoldings(owner, instrument string, amount money.Decimal) ([]*Holding, money.Decimal, error) {
	s := st.spendable[ownerInst{owner, instrument}]
	if s == nil {
		return nil, money.Zero, newErr(CategoryInsufficientFunds, "", "%s holds no free %s (needs %s)", owner, instrument, amount)
	}
	hs := s.hs
	// Smallest single unreferenced holding that covers the amount.
	best := -1
	for i := 0; i < len(hs) && hs[i].Amount.Cmp(amount) >= 0; i++ {
		if st.refs[hs[i].CID] == 0 {
			best = i
		}
	}
	if best >= 0 {
		return []*Holding{hs[best]}, hs[best].Amount, nil
	}
	limit := st.cfg.Limits.MaxInputs
	var out []*Holding
	sum := money.Zero
	take := func(referenced bool) bool {
		for _, h := range hs {
			if (st.refs[h.CID] > 0) != referenced {
				continue
			}
			if len(out) == limit {
				return false
			}
			out = append(out, h)
			sum = sum.Add(h.Amount)
			if sum.Cmp(amount) >= 0 {
				return true
			}
		}
		return false
	}
	if take(false) || take(true) {
		return out, sum, nil
	}
	if len(out) == limit {
		return nil, money.Zero, newErr(CategoryInsufficientFunds, "", "%s needs more than %d holdings of %s to cover %s", owner, limit, instrument, amount)
	}
	return nil, money.Zero, newErr(CategoryInsufficientFunds, "", "%s has %s free %s, needs %s", owner, sum, instrument, amount)
}

// fixedHoldings re-checks the holdings a prepared transaction chose: each must still be
// live, the owner's, of the instrument and spendable at now; else ErrContention.
func (st *state) fixedHoldings(cids []string, owner, instrument string, amount money.Decimal, now time.Time) ([]*Holding, money.Decimal, error) {
	out := make([]*Holding, 0, len(cids))
	sum := money.Zero
	for _, cid := range cids {
		h := st.holding(cid)
		if h == nil || h.Owner != owner || h.Instrument != instrument || !h.FreeAt(now) {
			return nil, money.Zero, newErr(CategoryContention, "", "input holding %s was spent or locked since prepare", cid)
		}
		out = append(out, h)
		sum = sum.Add(h.Amount)
	}
	if sum.Cmp(amount) < 0 {
		return nil, money.Zero, newErr(CategoryContention, "", "input holdings no longer cover %s", amount)
	}
	return out, sum, nil
}

// view returns a copy of h with its catalog symbols filled in.
func (st *state) viewHolding(h *Holding) Holding {
	c := *h
	c.Lock = h.Lock.clone()
	c.Symbol, c.DisplaySymbol = st.symbols(h.Instrument)
	return c
}

// symbols returns an instrument's catalog and display symbols, or its raw registry id
// twice when it left the catalog (or was never in it).
func (st *state) symbols(instrument string) (string, string) {
	if in := st.instruments[instrument]; in != nil && in.Listed {
		return in.Symbol, in.DisplaySymbol
	}
	return instrument, instrument
}
