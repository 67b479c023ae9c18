package ledgersim

import (
	"slices"

	"github.com/deskco/rfqdesk/money"
)

// SelectFree chooses, among owner's free holdings of instrument (as FreeHoldings lists
// them) leaving out reserved (sorted), the input holdings that cover amount: the
// smallest single holding that covers it, else the largest first until they cover it,
// at most maxInputs of them (the desk's rule, ledgeradapter.SelectInputs). ok is false
// when the unreserved holdings cannot cover amount so; the caller then reads
// FreeHoldings to say by how much. It reads the ledger's index of the party's holdings,
// which is kept in selection order, as a submitter reads its own index of the active
// contracts: a binary search and the few holdings it takes, not a copy of a set that
// grows with every holding the party receives.
func (l *Ledger) SelectFree(owner, instrument string, amount money.Decimal, reserved []string, maxInputs int) (inputs []string, ok bool) {
	// The write lock: walking the set sorts its unsorted tail in place.
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.st.spendable[ownerInst{owner, instrument}]
	if s == nil {
		return nil, money.Zero.Cmp(amount) >= 0
	}
	return s.selectFree(amount, reserved, maxInputs)
}

// selectFree is SelectFree on one set.
func (s *holdingSet) selectFree(amount money.Decimal, reserved []string, maxInputs int) ([]string, bool) {
	usable := func(h *Holding) bool {
		_, found := slices.BinarySearch(reserved, h.CID)
		return !found
	}
	cur := s.cursor() // sorts the tail
	// The smallest usable holding that covers amount: the first in storage order (the
	// array and the tail each run smallest first) at or after the first that covers it.
	var best *hEntry
	lo, hi := 0, len(s.hs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.hs[m].h.Amount.Cmp(amount) >= 0 {
			hi = m
		} else {
			lo = m + 1
		}
	}
	for i := lo; i < len(s.hs); i++ {
		if usable(s.hs[i].h) {
			best = &s.hs[i]
			break
		}
	}
	for i := range s.tail {
		if t := &s.tail[i]; t.h.Amount.Cmp(amount) >= 0 && usable(t.h) {
			if best == nil || best.before(*t) {
				best = t
			}
			break
		}
	}
	if best != nil {
		return []string{best.h.CID}, true
	}
	// Else the largest first.
	var out []string
	sum := money.Zero
	for len(out) < maxInputs && sum.Cmp(amount) < 0 {
		h := cur.next()
		if h == nil {
			break
		}
		if usable(h) {
			out = append(out, h.CID)
			sum = sum.Add(h.Amount)
		}
	}
	if sum.Cmp(amount) >= 0 {
		return out, true
	}
	return nil, false
}
