package ledgersim

import "github.com/deskco/rfqdesk/money"

// FreeHolding is a free holding as a submitter choosing input holdings sees it: its
// contract id and amount.
type FreeHolding struct {
	CID    string
	Amount money.Decimal
}

// FreeHoldings returns owner's free holdings of instrument (its active, unlocked holding
// contracts as of the ledger's latest update, as Canton's active-contract service lists
// them), largest first, ties by contract id. The ledger reserves nothing for a prepared
// transaction: a holding named by one is listed until a transaction that spends it
// commits, so a submitter with several transactions in flight excludes the holdings
// its own live prepared transactions name.
func (l *Ledger) FreeHoldings(owner, instrument string) []FreeHolding {
	// The write lock: walking the set sorts its unsorted tail in place.
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.st.spendable[ownerInst{owner, instrument}]
	if s == nil {
		return nil
	}
	out := make([]FreeHolding, 0, s.size())
	for cur := s.cursor(); ; {
		h := cur.next()
		if h == nil {
			return out
		}
		out = append(out, FreeHolding{CID: h.CID, Amount: h.Amount})
	}
}

// MaxInputs is the most input holdings one command may name (Config.Limits.MaxInputs).
func (l *Ledger) MaxInputs() int { return l.cfg.Limits.MaxInputs }
