package sim

import "github.com/deskco/rfqdesk/machine"

// checkAllocationSide asserts, from the documents rather than from the desk's arithmetic,
// which way an allocation of a quote's settlement points: on a BUY RFQ the taker buys the
// base instrument, so the maker sends base and receives the quote instrument, and the taker
// the reverse; on a SELL RFQ every side flips. An allocation for the wrong side would lock
// the wrong holding and make a settlement the ledger refuses as mismatched, a trade that
// fails for no reason the contract knows.
func (s *Sim) checkAllocationSide(c machine.LedgerCall) {
	if c.Command == nil || c.Command.Allocate == nil {
		return
	}
	al := c.Command.Allocate
	q := s.desk.Quotes[al.SettlementID]
	if q == nil {
		return
	}
	r := s.desk.RFQs[q.RFQ]
	if r == nil {
		return
	}
	var makerSide bool
	switch al.Owner {
	case s.cfg.FeeParty:
		// The fee is taken in the quote instrument, by the desk's fee party, which only
		// receives.
		if al.Send || al.Instrument != s.registryID(r.Quote) {
			s.failf(Safety, "quote %s on %s/%s: the fee party's allocation is not one to receive %s (send %t, instrument %s)",
				q.ID, r.Base, r.Quote, r.Quote, al.Send, al.Instrument)
		}
		return
	case q.Maker:
		makerSide = true
	case r.Taker:
	default:
		s.failf(Safety, "quote %s: an allocation of its settlement is owned by %s, neither its maker %s, the taker %s nor the fee party",
			q.ID, al.Owner, q.Maker, r.Taker)
		return
	}
	var isBase bool
	switch al.Instrument {
	case s.registryID(r.Base):
		isBase = true
	case s.registryID(r.Quote):
	default:
		s.failf(Safety, "quote %s on %s/%s: an allocation of %s in instrument %s, neither of the pair",
			q.ID, r.Base, r.Quote, al.Owner, al.Instrument)
		return
	}
	// The party that sends base: the maker on BUY, the taker on SELL.
	sendsBase := makerSide == (r.Direction == machine.Buy)
	if al.Send != (isBase == sendsBase) {
		role, sym, way := "taker", r.Quote, "receive"
		if makerSide {
			role = "maker"
		}
		if isBase {
			sym = r.Base
		}
		if al.Send {
			way = "send"
		}
		s.failf(Safety, "quote %s on a %s RFQ %s: the %s %s allocates %s %s to %s",
			q.ID, r.Direction, r.ID, role, al.Owner, al.Amount, sym, way)
	}
}

// registryID is the ledger's id of a catalog symbol, or "" for an unknown symbol.
func (s *Sim) registryID(symbol string) string {
	for _, in := range s.cfg.Instruments {
		if in.Symbol == symbol {
			return in.RegistryID
		}
	}
	return ""
}
