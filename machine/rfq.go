package machine

import (
	"time"

	"github.com/deskco/rfqdesk/money"
)

// MaxInvited bounds the makers one RFQ may invite.
const MaxInvited = 100

// rfqDTO renders an RFQ on the wire (without quotes).
func (d *Desk) rfqDTO(r *RFQ) RfqDTO { return d.rfqDTOFrom(r, nil) }

// rfqDTOFrom is rfqDTO taking the invited makers' slice from strs when it is not nil.
func (d *Desk) rfqDTOFrom(r *RFQ, strs *stringArena) RfqDTO {
	invited := strs.take(len(r.Invited))
	for i, id := range r.Invited {
		invited[i] = d.hintOf(id)
	}
	return RfqDTO{
		RfqID: r.ID, Taker: d.hintOf(r.Taker), Direction: r.Direction, Qty: r.Qty,
		Base: r.Base, Quote: r.Quote, Deadline: WireTime(r.Deadline), InvitedMakers: invited,
		FeeBps: r.FeeBps, Open: r.State == RFQOpen,
	}
}

// invited reports whether party is among the RFQ's invited makers.
func (r *RFQ) invited(party string) bool {
	for _, id := range r.Invited {
		if id == party {
			return true
		}
	}
	return false
}

// createRFQ is POST /rfq.
func (a *applier) createRFQ(taker *Party, c CreateRFQ) {
	cfg := &a.d.Cfg
	if c.Direction != Sell && c.Direction != Buy {
		a.refuse(badRequest("direction must be SELL or BUY"))
		return
	}
	if c.Qty.Sign() <= 0 {
		a.refuse(badRequest("qty must be positive"))
		return
	}
	base, ok := cfg.instrument(c.Base)
	if !ok {
		a.refuse(badRequest("%s", cfg.unknownInstrument(c.Base)))
		return
	}
	quote, ok := cfg.instrument(c.Quote)
	if !ok {
		a.refuse(badRequest("%s", cfg.unknownInstrument(c.Quote)))
		return
	}
	if base.Symbol == quote.Symbol {
		a.refuse(badRequest("base and quote must be different instruments"))
		return
	}
	ttl := time.Duration(c.TTLSeconds) * time.Second
	if c.TTLSeconds < int64(cfg.MinTTL/time.Second) || c.TTLSeconds > int64(cfg.MaxTTL/time.Second) {
		a.refuse(badRequest("ttlSeconds must be between %d and %d", int64(cfg.MinTTL/time.Second), int64(cfg.MaxTTL/time.Second)))
		return
	}
	if len(c.InvitedMakers) == 0 || len(c.InvitedMakers) > MaxInvited {
		a.refuse(badRequest("invite 1 to %d makers", MaxInvited))
		return
	}
	invited := make([]string, 0, len(c.InvitedMakers))
	seen := map[string]bool{}
	for _, hint := range c.InvitedMakers {
		p, ok := a.d.partyByHint(hint)
		switch {
		case !ok:
			a.refuse(badRequest("unknown maker %q", hint))
			return
		case p.ID == taker.ID:
			a.refuse(badRequest("an RFQ cannot invite its own taker"))
			return
		case seen[p.ID]:
			a.refuse(badRequest("maker %q is listed twice", hint))
			return
		case p.Online == 0:
			a.refuse(badRequest("maker %q is not reachable (no open stream)", hint))
			return
		}
		seen[p.ID] = true
		invited = append(invited, p.ID)
	}
	// Truncated, never rounded up: a ticket worth 9.99999999998 USD is under a minimum of
	// 10, and a truncation at 10 digits compares with any minimum of at most 10 digits
	// (the minimum notional, a tier's) exactly as the exact product does.
	notional := c.Qty.MulDown(base.USDPrice)
	if notional.Cmp(cfg.MinNotionalUSD) < 0 {
		a.refuse(apiErr(400, CodeBelowMinNotional, "the ticket is worth %s USD, under the desk minimum of %s", notional, cfg.MinNotionalUSD))
		return
	}
	r := &RFQ{
		ID: a.d.IDs.New(prefixRFQ), State: RFQOpen, Taker: taker.ID, Direction: c.Direction,
		Qty: c.Qty, Base: base.Symbol, Quote: quote.Symbol, Deadline: a.d.Now.Add(ttl),
		Invited: invited, FeeBps: cfg.feeBpsFor(notional), CreatedAt: a.d.Now,
		NotionalUSD: notional,
	}
	a.d.RFQs[r.ID] = r
	a.d.byParty.add(r)
	a.at(r.Deadline, DLRFQDeadline, r.ID)
	a.scoreInvited(r)
	dto := a.d.rfqDTO(r) // also when quiet: events are numbered and retained
	for _, m := range r.Invited {
		a.emit(m, EvRfqCreated, dto)
	}
	a.reply(200, dto)
}

// cancelRFQ is DELETE /rfq/{id}.
func (a *applier) cancelRFQ(taker *Party, c CancelRFQ) {
	r, ok := a.d.RFQs[c.RFQID]
	switch {
	case !ok:
		a.refuse(notFound("unknown RFQ %q", c.RFQID))
		return
	case r.Taker != taker.ID:
		a.refuse(forbidden("not your RFQ"))
		return
	case r.State != RFQOpen:
		a.refuse(notFound("RFQ %s is already closed", r.ID))
		return
	case r.SettlingTrade != "":
		a.refuse(conflict("a settlement is in flight on RFQ %s", r.ID))
		return
	}
	a.endRFQ(r, TrigCancel, EvRfqClosed, TrigRFQCancelled, "cancelled", "cancelled by the taker")
	a.reply(204, nil)
}

// endRFQ ends an open RFQ with no trade, by trig (the taker's cancel or the deadline): it
// closes, its audience hears ev, every pending quote on it ends by quoteTrig, and the
// taker's history records it as kind, for reason. The audience hears first, so that a
// maker hears the RFQ is closed before the end of its quote on it, and does not re-quote
// a closed RFQ.
func (a *applier) endRFQ(r *RFQ, trig Trigger, ev string, quoteTrig Trigger, kind, reason string) {
	a.d.m().rfq.must(r, trig)
	a.closeRFQ(r)
	for _, m := range a.rfqAudience(r) {
		a.emit(m, ev, RfqIDPayload{RfqID: r.ID})
	}
	for _, qid := range r.Quotes {
		if q := a.d.Quotes[qid]; q != nil && q.pending() {
			a.endQuote(q, quoteTrig)
		}
	}
	a.recordHistory(r, kind, reason, "")
}

// rfqAudience is who hears of an RFQ's end: every invited maker, then the taker.
func (a *applier) rfqAudience(r *RFQ) []string {
	return append(append([]string(nil), r.Invited...), r.Taker)
}

// closeRFQ stamps the closing time and keeps the RFQ readable for the retention period.
func (a *applier) closeRFQ(r *RFQ) {
	r.ClosedAt = a.d.Now
	a.at(housekeepingAt(a.d.Now.Add(a.d.Cfg.ClosedRetention)), DLRFQRetention, r.ID)
}

// rfqDeadline expires an open RFQ whose deadline passed with no trade. With a settlement
// in flight the RFQ waits for its outcome: a fill closes it, a failure expires it then.
func (a *applier) rfqDeadline(id string) {
	r, ok := a.d.RFQs[id]
	if !ok || !a.d.m().rfq.can(r, TrigExpire) || r.SettlingTrade != "" || r.Deadline.After(a.d.Now) {
		return
	}
	a.endRFQ(r, TrigExpire, EvRfqExpired, TrigExpire, "expired", "the deadline passed with no trade")
}

// rfqForget drops a closed RFQ and its quotes once its readability period is over.
func (a *applier) rfqForget(id string) {
	r, ok := a.d.RFQs[id]
	if !ok || r.State == RFQOpen || r.SettlingTrade != "" {
		return
	}
	for _, qid := range r.Quotes {
		delete(a.d.Quotes, qid)
	}
	delete(a.d.RFQs, id)
	a.d.byParty.remove(r)
}

// rfqIndex maps a party id to the retained RFQs it takes or is invited to, by RFQ id, so
// that a party's reads and its stream snapshot walk its own RFQs rather than every
// retained one. It is derived from Desk.RFQs: built on first use (also after a snapshot
// is restored), kept in step where an RFQ is created and forgotten, never encoded. Its
// maps are only collected from; what is read is then sorted by a total order.
type rfqIndex map[string]map[string]*RFQ

// rfqsOf returns the retained RFQs of a party, as taker or invited maker. The map is the
// index's own: callers only read it.
func (d *Desk) rfqsOf(party string) map[string]*RFQ {
	if d.byParty == nil {
		d.byParty = rfqIndex{}
		for _, r := range d.RFQs {
			d.byParty.add(r)
		}
	}
	return d.byParty[party]
}

// add files r under its taker and each invited maker; a nil index (not built yet) is left
// to be built from RFQs.
func (ix rfqIndex) add(r *RFQ) {
	if ix == nil {
		return
	}
	ix.file(r.Taker, r)
	for _, m := range r.Invited {
		ix.file(m, r)
	}
}

func (ix rfqIndex) file(party string, r *RFQ) {
	m := ix[party]
	if m == nil {
		m = map[string]*RFQ{}
		ix[party] = m
	}
	m[r.ID] = r
}

// remove drops r from the index.
func (ix rfqIndex) remove(r *RFQ) {
	if ix == nil {
		return
	}
	ix.unfile(r.Taker, r.ID)
	for _, m := range r.Invited {
		ix.unfile(m, r.ID)
	}
}

func (ix rfqIndex) unfile(party, id string) {
	if m := ix[party]; m != nil {
		delete(m, id)
		if len(m) == 0 {
			delete(ix, party)
		}
	}
}

// recordHistory adds a history row to the taker's bounded history and tells the taker.
func (a *applier) recordHistory(r *RFQ, kind, reason, makerHint string) {
	row := HistoryRow{
		ID: a.d.IDs.New(prefixHistory), RFQ: r.ID, Direction: r.Direction, Qty: r.Qty,
		Base: r.Base, Quote: r.Quote, Kind: kind, Maker: makerHint, Reason: reason, At: a.d.Now,
	}
	row.QuoteCount, row.BestPrice, row.HasBest = a.quoteStats(r)
	taker, ok := a.d.Parties[r.Taker]
	if !ok {
		return
	}
	taker.History = appendBounded(taker.History, row, a.d.Cfg.HistoryRetention)
	a.emit(taker.ID, EvHistoryRecorded, row.dto()) // also when quiet: events are numbered and retained
}

// quoteStats counts the quotes the taker saw on an RFQ and finds the best price among them:
// the highest when the taker sells, the lowest when it buys.
func (a *applier) quoteStats(r *RFQ) (int, money.Decimal, bool) {
	n := 0
	var best money.Decimal
	for _, qid := range r.Quotes {
		q, ok := a.d.Quotes[qid]
		if !ok || !q.everLive() {
			continue
		}
		n++
		better := q.Price.Cmp(best) > 0
		if r.Direction == Buy {
			better = q.Price.Cmp(best) < 0
		}
		if n == 1 || better {
			best = q.Price
		}
	}
	return n, best, n > 0
}

// dto renders a history row on the wire.
func (h HistoryRow) dto() RfqHistoryDTO {
	out := RfqHistoryDTO{
		ID: h.ID, RfqID: h.RFQ, Direction: h.Direction, Qty: h.Qty, Base: h.Base, Quote: h.Quote,
		Kind: h.Kind, QuoteCount: h.QuoteCount, Maker: h.Maker, Reason: h.Reason, At: WireTime(h.At),
	}
	if h.HasBest {
		best := h.BestPrice
		out.BestPrice = &best
	}
	return out
}

// appendBounded appends v and keeps at most limit newest elements. Dropping the oldest
// reslices rather than copies, so an append costs O(1) amortised; append reallocates the
// backing array, copying only the kept elements, once its capacity is used up.
func appendBounded[T any](s []T, v T, limit int) []T {
	s = append(s, v)
	if len(s) > limit {
		s = s[len(s)-limit:]
	}
	return s
}
