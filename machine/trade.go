package machine

import (
	"strconv"
	"strings"
	"time"
)

// Continuation kinds of the trade flow.
const (
	contTradePrepare ContKind = "trade.prepare" // a taker or fee allocation prepared or submitted
	contSettle       ContKind = "trade.settle"
)

// Deadline kinds for retrying a settle, or a taker or fee allocation, that the ledger could
// not take for a transient reason.
const (
	DLSettleRetry DeadlineKind = "trade.settle-retry"
	DLAllocRetry  DeadlineKind = "trade.allocate-retry"
)

// Failure reasons of trade.failed and the history rows.
const (
	reasonTakerFunds   = "the taker could not fund its leg"
	reasonWindow       = "the settlement window expired"
	reasonMakerGone    = "the maker's allocation is gone"
	reasonLedgerRefuse = "the ledger refused the settlement"
)

// tradeDTO renders a trade on the wire.
func (d *Desk) tradeDTO(t *Trade) TradeDTO {
	dto := TradeDTO{
		TradeID: t.ID, Taker: d.hintOf(t.Taker), Maker: d.hintOf(t.Maker), Direction: t.Direction,
		Qty: t.Amounts.Qty, Base: t.Base, Quote: t.QuoteSym, Price: t.Price, Fee: t.Amounts.Fee,
		Status: "settling", Ledger: LedgerProofDTO{UpdateID: t.UpdateID, ReceiptCids: append([]string{}, t.Receipts...)},
	}
	switch t.State {
	case TradeSettled:
		dto.Status = "settled"
		at := WireTime(t.SettledAt)
		dto.SettledAt = &at
	case TradeFailed:
		dto.Status = "failed"
	}
	return dto
}

// takerAllocations are the taker's allocations and the fee party's receipt: on SELL the
// taker sends the base and receives quoteAmount − fee; on BUY it receives the base and
// sends quoteAmount + fee.
func (d *Desk) takerAllocations(r *RFQ, am TradeAmounts) []AllocationRef {
	takerSendsBase := r.Direction == Sell
	takerQuote := am.QuoteAmount.Sub(am.Fee)
	if r.Direction == Buy {
		takerQuote = am.QuoteAmount.Add(am.Fee)
	}
	als := []AllocationRef{
		{LegID: legTakerBase, Owner: r.Taker, Send: takerSendsBase, Instrument: r.Base, Amount: am.Qty},
		{LegID: legTakerQuote, Owner: r.Taker, Send: !takerSendsBase, Instrument: r.Quote, Amount: takerQuote},
	}
	if am.Fee.Sign() > 0 {
		als = append(als, AllocationRef{LegID: legFee, Owner: d.Cfg.FeeParty, Instrument: r.Quote, Amount: am.Fee})
	}
	return als
}

// legs are the movements of a settled trade.
func (d *Desk) legs(t *Trade) []Leg {
	base, _ := d.Cfg.instrument(t.Base)
	quote, _ := d.Cfg.instrument(t.QuoteSym)
	am := t.Amounts
	var legs []Leg
	if t.Direction == Sell {
		legs = []Leg{
			{Sender: t.Taker, Receiver: t.Maker, Instrument: base.RegistryID, Amount: am.Qty},
			{Sender: t.Maker, Receiver: t.Taker, Instrument: quote.RegistryID, Amount: am.QuoteAmount.Sub(am.Fee)},
		}
		if am.Fee.Sign() > 0 {
			legs = append(legs, Leg{Sender: t.Maker, Receiver: d.Cfg.FeeParty, Instrument: quote.RegistryID, Amount: am.Fee})
		}
		return legs
	}
	legs = []Leg{
		{Sender: t.Maker, Receiver: t.Taker, Instrument: base.RegistryID, Amount: am.Qty},
		{Sender: t.Taker, Receiver: t.Maker, Instrument: quote.RegistryID, Amount: am.QuoteAmount},
	}
	if am.Fee.Sign() > 0 {
		legs = append(legs, Leg{Sender: t.Taker, Receiver: d.Cfg.FeeParty, Instrument: quote.RegistryID, Amount: am.Fee})
	}
	return legs
}

// acceptQuote is POST /quote/{id}/accept. The RFQ is locked at once; the reply waits for
// the taker's allocations to be prepared, which is the funding check.
func (a *applier) acceptQuote(taker *Party, c AcceptQuote) {
	q, ok := a.d.Quotes[c.QuoteID]
	if !ok {
		a.refuse(notFound("unknown quote %q", c.QuoteID))
		return
	}
	r := a.d.RFQs[q.RFQ]
	switch {
	case r == nil || r.Taker != taker.ID:
		if r != nil && !q.Anchored {
			a.refuse(notFound("unknown quote %q", c.QuoteID))
			return
		}
		a.refuse(forbidden("not a quote on your RFQ"))
		return
	case !q.Anchored:
		a.refuse(notFound("unknown quote %q", c.QuoteID))
		return
	case q.State == QuoteSettling || r.SettlingTrade != "":
		a.refuse(conflict("a settlement is already in flight on this RFQ"))
		return
	case q.State != QuoteLive:
		a.refuse(conflict("quote %s is no longer available (%s)", q.ID, q.wireStatus()))
		return
	case r.State != RFQOpen || !r.Deadline.After(a.d.Now):
		a.refuse(conflict("the RFQ's deadline has passed"))
		return
	case !q.ValidUntil.After(a.d.Now):
		a.refuse(conflict("the quote's validUntil has passed"))
		return
	}
	t := &Trade{
		ID: a.d.IDs.New(prefixTrade), State: TradeAllocating, RFQ: r.ID, Quote: q.ID,
		Taker: taker.ID, Maker: q.Maker, Direction: r.Direction, Base: r.Base, QuoteSym: r.Quote,
		Price: q.Price, Amounts: q.Amounts, AcceptedAt: a.d.Now,
		WindowEnds: a.d.settlementWindowEnd(q.ValidUntil), Allocations: a.d.takerAllocations(r, q.Amounts),
	}
	a.d.continueAttempts(q.ID, t.Allocations)
	a.d.Trades[t.ID] = t
	r.SettlingTrade = t.ID
	a.d.Held[a.seq] = &HeldReply{Seq: a.seq, Kind: contTradePrepare, Entity: t.ID, Waiting: 2}
	for i := range t.Allocations[:2] {
		a.allocateForTrade(t, &t.Allocations[i], a.seq)
	}
}

// continueAttempts numbers a new trade's allocations after the attempts of an earlier
// accept of the same quote whose calls are still in flight. Its command ids are
// quote:leg:attempt like any allocation's, and an accept that was undone (a leg refused,
// or a restart) leaves its other calls with the ledger, each pending under its id so that
// what it makes is released (tradePrepared). Numbered from 1 again, the new accept took
// over that id: the old call's answer went to the new trade or to nobody, and the
// allocation it made stayed on the ledger with nothing to release it (seeds 56 and 96).
func (d *Desk) continueAttempts(settlement string, als []AllocationRef) {
	for id, c := range d.Pending {
		if c.Kind != contTradePrepare || c.Call.Command == nil || c.Call.Command.Allocate == nil ||
			c.Call.Command.Allocate.SettlementID != settlement {
			continue
		}
		al := allocationByLeg(als, c.Call.Command.Allocate.LegID)
		if al == nil {
			continue
		}
		rest, ok := strings.CutPrefix(id, settlement+":"+al.LegID+":")
		if n, err := strconv.Atoi(rest); ok && err == nil && n > al.Attempt {
			al.Attempt = n
		}
	}
}

// allocateForTrade prepares (or submits) one taker or fee allocation of a trade.
func (a *applier) allocateForTrade(t *Trade, al *AllocationRef, seq uint64) {
	owner := a.d.Parties[al.Owner] // nil for the fee party: desk-signed
	a.allocate(al, t.Quote, t.WindowEnds, t.WindowEnds, owner,
		&Continuation{Kind: contTradePrepare, ReqSeq: seq, Entity: t.ID, LegID: al.LegID})
}

// tradePrepared handles a taker allocation prepared (or submitted), during the accept or
// when a fresh action replaces a lost one, and the fee allocation's submit.
func (a *applier) tradePrepared(cont *Continuation, res LedgerResult) {
	t, ok := a.d.Trades[cont.Entity]
	if !ok || t.State != TradeAllocating {
		if res.Failure == nil && res.AllocationCID != "" {
			a.cancelAllocation(res.AllocationCID, cont.Entity+":"+cont.LegID+":late")
		} else if res.Failure != nil && res.Failure.Category == LedgerUnknownOutcome && cont.Call.Op == OpSubmit {
			// A submit may have made the allocation all the same: ask again under its
			// command id until the ledger says, and release what it made.
			a.retryCallLater(cont)
		}
		return
	}
	al := allocationByLeg(t.Allocations, cont.LegID)
	held, accepting := a.d.Held[cont.ReqSeq]
	accepting = accepting && cont.ReqSeq != 0 && held.Entity == t.ID
	if res.Failure != nil {
		if res.Failure.Category == LedgerUnknownOutcome {
			// The allocation may have been made, or may still be: ask again under the same
			// command id, which the ledger deduplicates and answers with what happened.
			// Refusing the accept here left an allocation nobody would release.
			if t.WindowEnds.After(a.d.Now) {
				a.retryCallLater(cont)
				return
			}
			if cont.Call.Op == OpSubmit {
				// Too late for the trade, which ends below; the answer to the call asked
				// again releases what it made (the trade is then gone or failed).
				a.retryCallLater(cont)
			}
		}
		if accepting {
			a.acceptRefused(t, held, ledgerRefusal(res.Failure))
			return
		}
		// A transient failure (the ledger busy or unavailable) is retried while the window
		// is open; it says nothing about the taker's funds.
		if res.Failure.retryable() && t.WindowEnds.After(a.d.Now) {
			a.at(a.d.Now.Add(settleRetryDelay), DLAllocRetry, t.ID+"|"+cont.LegID)
			return
		}
		if res.Failure.Category == LedgerInsufficientFunds || cont.LegID == legFee {
			a.tradeFailed(t, reasonTakerFunds)
			return
		}
		// The wire reason stays the documented one; the ledger's words are for the logs.
		a.tradeFailed(t, reasonTakerFunds)
		return
	}
	if res.AllocationCID != "" {
		al.CID = res.AllocationCID
	} else {
		al.PreparedID, al.Hash, al.PrepExpires, al.Prepared = res.PreparedID, res.Hash, res.ExpiresAt, res.Prepared
		al.Inputs = res.Inputs
		if !accepting {
			a.newTradeAction(t, al)
		}
	}
	if accepting {
		held.Waiting--
		if held.Waiting == 0 {
			a.acceptFunded(t)
		}
		return
	}
	a.maybeSettle(t)
}

// acceptRefused undoes an accept whose taker allocations could not be prepared: nothing
// is recorded and the RFQ is free again.
func (a *applier) acceptRefused(t *Trade, held *HeldReply, refusal *APIError) {
	a.undoAccept(t)
	a.refuseTo(held.Seq, refusal)
	if r := a.d.RFQs[t.RFQ]; r != nil {
		a.rfqDeadline(r.ID) // the deadline may have passed while the accept was with the ledger
	}
}

// undoAccept forgets an accept that was never answered: its actions and allocations go and
// the RFQ is free again.
func (a *applier) undoAccept(t *Trade) {
	for _, id := range t.Actions {
		a.dropAction(id)
	}
	a.cancelLanded(t.Allocations, t.ID, "")
	if r := a.d.RFQs[t.RFQ]; r != nil && r.SettlingTrade == t.ID {
		r.SettlingTrade = ""
	}
	delete(a.d.Trades, t.ID)
	if r := a.d.RFQs[t.RFQ]; r != nil {
		a.rfqDeadline(r.ID) // the deadline may have passed while the accept was with the ledger
	}
}

// acceptFunded completes an accept: the quote is locked, the taker gets its actions, the
// fee receipt is allocated, and the parties' unsigned withdrawals in the trade's
// instruments are dropped.
func (a *applier) acceptFunded(t *Trade) {
	q := a.d.Quotes[t.Quote]
	if q == nil || !a.d.m().quote.can(q, TrigAccept) {
		// The quote died while the taker's allocations were prepared.
		a.acceptRefused(t, a.d.Held[a.d.heldFor(t.ID)], conflict("the quote is no longer available"))
		return
	}
	a.d.m().quote.must(q, TrigAccept)
	q.Trade = t.ID
	a.scoreAccepted(q)
	seq := a.d.heldFor(t.ID)
	for _, party := range []string{t.Taker, t.Maker} {
		for _, sym := range []string{t.Base, t.QuoteSym} {
			if id, ok := a.d.Withdrawals[withdrawalKey(party, sym)]; ok && id != "" {
				// The withdrawal flow ends with its action: forget it too, or the party
				// could never withdraw that instrument again.
				if x := a.d.Actions[id]; x != nil && x.State == ActionPending {
					a.dropAction(id)
					a.forgetWithdrawal(x)
				}
			}
		}
	}
	for i := range t.Allocations[:2] {
		if al := &t.Allocations[i]; al.CID == "" {
			a.newTradeAction(t, al)
		}
	}
	if fee := allocationByLeg(t.Allocations, legFee); fee != nil {
		a.allocateForTrade(t, fee, 0)
	}
	a.at(t.WindowEnds, DLTradeWindow, t.ID)
	var body any
	if !a.quiet || a.idemWants(seq) {
		body = TradeWithActionsDTO{TradeDTO: a.d.tradeDTO(t), Actions: a.d.actionDTOs(t.Actions)}
	}
	a.replyTo(seq, 202, body)
	a.protectionFill(t)
	a.maybeSettle(t)
}

// heldFor finds the held request waiting on entity: the lowest sequence number among them,
// found in one pass without sorting the keys.
func (d *Desk) heldFor(entity string) uint64 {
	var best uint64
	for seq, h := range d.Held {
		if h.Entity == entity && (best == 0 || seq < best) {
			best = seq
		}
	}
	return best
}

// newTradeAction hands the taker a prepared allocation to sign.
func (a *applier) newTradeAction(t *Trade, al *AllocationRef) {
	x := a.newAction(actionSpec{
		Party: t.Taker, Purpose: PurposeAllocate, Description: allocationDescription(al, t.RFQ),
		Flow: FlowTrade, FlowID: t.ID, LegID: al.LegID, TradeID: t.ID,
	}, LedgerResult{PreparedID: al.PreparedID, Hash: al.Hash, ExpiresAt: al.PrepExpires, Prepared: al.Prepared, Inputs: al.Inputs})
	al.Prepared = nil // the action keeps it
	t.Actions = append(t.Actions, x.ID)
}

// tradeAllocationLanded records an executed taker allocation.
func (a *applier) tradeAllocationLanded(tradeID, leg, cid string) {
	t, ok := a.d.Trades[tradeID]
	if !ok || t.State != TradeAllocating {
		if cid != "" {
			a.cancelAllocation(cid, tradeID+":"+leg+":dead")
		}
		return
	}
	if al := allocationByLeg(t.Allocations, leg); al != nil {
		al.CID = cid
	}
	a.maybeSettle(t)
}

// tradeActionLost handles a taker action that left the queue unexecuted. While the window
// is open a fresh action replaces an expired or contended one; a taker that cannot fund
// its leg fails the trade.
func (a *applier) tradeActionLost(tradeID, leg, category, why string) {
	t, ok := a.d.Trades[tradeID]
	if !ok || t.State != TradeAllocating {
		return
	}
	if category == LedgerInsufficientFunds {
		a.tradeFailed(t, reasonTakerFunds)
		return
	}
	if !t.WindowEnds.After(a.d.Now) {
		a.tradeFailed(t, reasonWindow)
		return
	}
	if al := allocationByLeg(t.Allocations, leg); al != nil && al.CID == "" {
		a.allocateForTrade(t, al, 0)
	}
}

// maybeSettle sends the atomic settle once every allocation of the trade landed.
func (a *applier) maybeSettle(t *Trade) {
	if !a.d.m().trade.can(t, TrigAllocated) || a.d.heldFor(t.ID) != 0 {
		return
	}
	q := a.d.Quotes[t.Quote]
	if !allLanded(q.Allocations) || !allLanded(t.Allocations) {
		return
	}
	a.d.m().trade.must(t, TrigAllocated)
	// Also when quiet: events are numbered and retained.
	step := TradeStepPayload{TradeID: t.ID, RfqID: t.RFQ, Step: "allocated", Refs: allocationCIDs(q.Allocations, t.Allocations)}
	a.emit(t.Taker, EvTradeStep, step)
	a.emit(t.Maker, EvTradeStep, step)
	a.sendSettle(t)
}

// allLanded reports whether every allocation landed and none was cancelled.
func allLanded(als []AllocationRef) bool {
	for i := range als {
		if als[i].CID == "" || als[i].Cancelled {
			return false
		}
	}
	return true
}

// allocationCIDs lists the contract ids of the maker's allocations, then the trade's.
func allocationCIDs(maker, trade []AllocationRef) []string {
	cids := make([]string, 0, len(maker)+len(trade))
	for i := range maker {
		cids = append(cids, maker[i].CID)
	}
	for i := range trade {
		cids = append(cids, trade[i].CID)
	}
	return cids
}

// sendSettle issues the settle under its one command id; a retry reuses it.
func (a *applier) sendSettle(t *Trade) {
	q := a.d.Quotes[t.Quote]
	var cids []string // nil when there is no allocation at all, as before
	if len(q.Allocations)+len(t.Allocations) > 0 {
		cids = allocationCIDs(q.Allocations, t.Allocations)
	}
	legs := a.d.legs(t)
	if plantedBuild && plantedOn("no-fee") {
		legs = legs[:2] // planted bug: the settle moves no fee
	}
	a.call(LedgerCall{
		CommandID: t.ID + ":settle", Op: OpSubmit, ActAs: a.d.Cfg.Operator,
		Command: &Command{Settle: &SettleCmd{Executor: a.d.Cfg.Operator, SettlementID: t.Quote, Legs: legs, Allocations: cids}},
	}, &Continuation{Kind: contSettle, Entity: t.ID})
}

// settled handles the settle's answer.
func (a *applier) settled(cont *Continuation, res LedgerResult) {
	t, ok := a.d.Trades[cont.Entity]
	if !ok || !a.d.m().trade.can(t, TrigSettled) {
		return
	}
	if f := res.Failure; f != nil {
		if f.retryable() && t.WindowEnds.After(a.d.Now) {
			a.at(a.d.Now.Add(settleRetryDelay), DLSettleRetry, t.ID)
			return
		}
		reason := reasonMakerGone
		if f.Category == LedgerExpired {
			reason = reasonWindow
		} else if f.Category == LedgerRejected || f.Category == LedgerForbidden {
			reason = reasonLedgerRefuse
		}
		a.releaseBeforeFailing(t, reason)
		return
	}
	a.d.m().trade.must(t, TrigSettled)
	t.SettledAt, t.UpdateID, t.Receipts = a.d.Now, res.UpdateID, append([]string(nil), res.Receipts...)
	a.scoreSettled(t)
	r := a.d.RFQs[t.RFQ]
	r.SettlingTrade = ""
	winner := a.d.Quotes[t.Quote]
	a.d.m().quote.must(winner, TrigWin)
	a.d.m().rfq.must(r, TrigFill)
	a.closeRFQ(r)
	dto := a.d.tradeDTO(t) // also when quiet: events are numbered and retained
	for _, id := range []string{t.Taker, t.Maker} {
		if p := a.d.Parties[id]; p != nil {
			a.listTrade(p, t)
		}
		a.emit(id, EvTradeSettled, dto)
	}
	a.emit(t.Maker, EvQuoteStatus, QuoteStatusPayload{QuoteID: winner.ID, RfqID: r.ID, Status: winner.wireStatus()})
	// Everyone hears that the RFQ closed (the winner last, after its own news), then the
	// fate of a live quote they had on it: rfq.closed, then quote.status, for the losing
	// makers and for the taker alike.
	for _, m := range a.rfqAudience(r) {
		if m != t.Maker {
			a.emit(m, EvRfqClosed, RfqIDPayload{RfqID: r.ID})
		}
	}
	a.emit(t.Maker, EvRfqClosed, RfqIDPayload{RfqID: r.ID})
	for _, m := range r.Invited {
		if q := a.d.makerQuoteOn(r, m); q != nil && q.pending() {
			a.endQuote(q, TrigLose)
		}
	}
}

// releaseBeforeFailing handles a settle the ledger refused. Another submission of the same
// settle may still be on its way (one sent before a restart): the trade fails only once its
// allocations are released, after which no settle can move anything. If an allocation
// cannot be released because a settle consumed it, the settle is sent once more under its
// command id, and the ledger's deduplication answers with the settlement that happened.
func (a *applier) releaseBeforeFailing(t *Trade, reason string) {
	if t.Rechecked {
		a.tradeFailed(t, reason)
		return
	}
	t.FailReason = reason
	q := a.d.Quotes[t.Quote]
	t.PendingReleases = a.cancelLanded(t.Allocations, t.ID, tradeReleasePrefix+t.ID)
	if q != nil {
		t.PendingReleases += a.cancelLanded(q.Allocations, q.ID, tradeReleasePrefix+t.ID)
	}
	if t.PendingReleases == 0 {
		a.tradeFailed(t, reason)
	}
}

// tradeReleasePrefix marks allocation cancels that a failing trade waits for.
const tradeReleasePrefix = "trade-release:"

// tradeAllocationReleased counts one answered cancel of a failing trade's allocations.
func (a *applier) tradeAllocationReleased(tradeID string, released bool) {
	t, ok := a.d.Trades[tradeID]
	if !ok || t.State != TradeSettling || t.PendingReleases == 0 {
		return
	}
	if !released {
		t.ReleaseFailed = true
	}
	if t.PendingReleases--; t.PendingReleases > 0 {
		return
	}
	if t.ReleaseFailed {
		t.Rechecked = true
		a.sendSettle(t)
		return
	}
	a.tradeFailed(t, t.FailReason)
}

// settleRetryDelay spaces settle retries after a transient ledger failure.
const settleRetryDelay = 2 * time.Second

// settleRetry sends the settle again after a transient failure.
func (a *applier) settleRetry(id string) {
	if t, ok := a.d.Trades[id]; ok && t.State == TradeSettling {
		if _, inFlight := a.d.Pending[t.ID+":settle"]; !inFlight {
			a.sendSettle(t)
		}
	}
}

// allocRetry prepares again a trade allocation whose prepare failed transiently, unless
// it landed or has a live action or a prepare in flight meanwhile.
func (a *applier) allocRetry(id string) {
	i := strings.LastIndex(id, "|")
	if i < 0 {
		return
	}
	t, ok := a.d.Trades[id[:i]]
	if !ok || t.State != TradeAllocating {
		return
	}
	al := allocationByLeg(t.Allocations, id[i+1:])
	if al == nil || al.CID != "" {
		return
	}
	if _, inFlight := a.d.Pending[allocCommandID(t.Quote, al.LegID, al.Attempt)]; inFlight {
		return
	}
	for _, aid := range t.Actions {
		if x, live := a.d.Actions[aid]; live && x.LegID == al.LegID {
			return
		}
	}
	a.allocateForTrade(t, al, 0)
}

// tradeWindowClosed fails a trade whose allocations did not all land in time.
func (a *applier) tradeWindowClosed(id string) {
	if t, ok := a.d.Trades[id]; ok && t.State == TradeAllocating && !t.WindowEnds.After(a.d.Now) {
		a.tradeFailed(t, reasonWindow)
	}
}

// tradeFailed ends a trade with nothing moved: its actions go, every allocation is
// released, the quote is revoked, the taker gets a history row, and the RFQ stays open
// until its deadline (expiring now if that already passed).
func (a *applier) tradeFailed(t *Trade, reason string) {
	if err := a.d.m().trade.fire(t, TrigFail); err != nil {
		return
	}
	t.FailReason = reason
	a.scoreFailed(t, reason)
	for _, id := range t.Actions {
		a.dropAction(id)
	}
	a.cancelLanded(t.Allocations, t.ID, "")
	q := a.d.Quotes[t.Quote]
	r := a.d.RFQs[t.RFQ]
	r.SettlingTrade = ""
	payload := TradeFailedPayload{TradeID: t.ID, RfqID: t.RFQ, Reason: reason}
	a.emit(t.Taker, EvTradeFailed, payload)
	a.emit(t.Maker, EvTradeFailed, payload)
	if q != nil {
		a.endQuote(q, TrigSettleFailed)
	}
	a.recordHistory(r, "failed", reason, a.d.hintOf(t.Maker))
	a.rfqDeadline(r.ID)
	a.d.FailedTrades = append(a.d.FailedTrades, t.ID)
	if over := len(a.d.FailedTrades) - a.d.Cfg.HistoryRetention; over > 0 {
		for _, id := range a.d.FailedTrades[:over] {
			delete(a.d.Trades, id)
		}
		a.d.FailedTrades = a.d.FailedTrades[over:]
	}
}

// listTrade adds a settled trade to a party's bounded trade list. A trade that no list
// names any more is forgotten: the cost is constant per trade, whatever the desk's size.
func (a *applier) listTrade(p *Party, t *Trade) {
	p.Trades = append(p.Trades, t.ID)
	t.Lists++
	over := len(p.Trades) - a.d.Cfg.HistoryRetention
	if over <= 0 {
		return
	}
	for _, id := range p.Trades[:over] {
		if old, ok := a.d.Trades[id]; ok {
			if old.Lists--; old.Lists <= 0 {
				delete(a.d.Trades, id)
			}
		}
	}
	p.Trades = p.Trades[over:]
}
