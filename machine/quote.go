package machine

import (
	"strconv"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Continuation kinds of the quote and allocation flows.
const (
	contQuotePrepare ContKind = "quote.prepare" // a maker allocation prepared or submitted
	contCancelAlloc  ContKind = "allocation.cancel"
)

// Leg ids of a trade's allocations.
const (
	legMakerBase  = "maker-base"
	legMakerQuote = "maker-quote"
	legTakerBase  = "taker-base"
	legTakerQuote = "taker-quote"
	legFee        = "fee-quote"
)

// pending reports whether the quote shows as pending on the wire.
func (q *Quote) pending() bool {
	return q.State == QuoteFunding || q.State == QuoteLive || q.State == QuoteSettling
}

// everLive reports whether the taker ever saw the quote.
func (q *Quote) everLive() bool { return q.Anchored }

// wireStatus is the quote status of SPEC.md.
func (q *Quote) wireStatus() string {
	if q.pending() {
		return "pending"
	}
	return string(q.State)
}

// quoteDTO renders a quote on the wire.
func (d *Desk) quoteDTO(q *Quote) QuoteDTO { return d.quoteDTOFrom(q, nil) }

// quoteDTOFrom is quoteDTO taking the anchors' slice from strs when it is not nil.
func (d *Desk) quoteDTOFrom(q *Quote, strs *stringArena) QuoteDTO {
	var anchors []string
	if q.Anchored {
		anchors = strs.take(len(q.Allocations))
		for i, al := range q.Allocations {
			anchors[i] = al.CID
		}
	} else {
		anchors = strs.take(0)
	}
	return QuoteDTO{
		QuoteID: q.ID, RfqID: q.RFQ, Maker: d.hintOf(q.Maker), Price: q.Price,
		ValidUntil: WireTime(q.ValidUntil), Status: q.wireStatus(),
		Settling: q.State == QuoteSettling, AnchorCids: anchors,
	}
}

// tradeAmounts fixes the exact amounts of a trade at price, or refuses a dust trade.
func tradeAmounts(r *RFQ, price money.Decimal) (TradeAmounts, *APIError) {
	q := r.Qty.MulHalfEven(price)
	fee := money.Fee(q, r.FeeBps)
	amounts := TradeAmounts{Qty: r.Qty, QuoteAmount: q, Fee: fee}
	switch {
	case q.Sign() <= 0:
		return amounts, apiErr(409, CodeDustTrade, "qty × price rounds to zero at 10 decimals")
	case r.FeeBps > 0 && fee.Sign() <= 0:
		return amounts, apiErr(409, CodeDustTrade, "the fee rounds to zero at 10 decimals")
	case r.Direction == Sell && q.Sub(fee).Sign() <= 0:
		return amounts, apiErr(409, CodeDustTrade, "the taker's proceeds round to zero")
	}
	return amounts, nil
}

// settlementWindowEnd is when an accepted trade on a quote fails if still unsettled.
func (d *Desk) settlementWindowEnd(validUntil time.Time) time.Time {
	return validUntil.Add(d.Cfg.ActionLifetime + d.Cfg.SettlementGrace)
}

// makerAllocations are the maker's two allocations: it sends one instrument and receives
// the other (on a SELL RFQ the maker buys the base).
func makerAllocations(r *RFQ, maker string, am TradeAmounts) []AllocationRef {
	makerSendsBase := r.Direction == Buy
	return []AllocationRef{
		{LegID: legMakerBase, Owner: maker, Send: makerSendsBase, Instrument: r.Base, Amount: am.Qty},
		{LegID: legMakerQuote, Owner: maker, Send: !makerSendsBase, Instrument: r.Quote, Amount: am.QuoteAmount},
	}
}

// openRFQFor finds the RFQ a maker acts on (a quote, a decline), or refuses the request:
// an unknown RFQ is 404, one the maker is not invited to 403, a closed one 404.
func (a *applier) openRFQFor(maker *Party, id string) *RFQ {
	r, ok := a.d.RFQs[id]
	switch {
	case !ok:
		a.refuse(notFound("unknown RFQ %q", id))
	case !r.invited(maker.ID):
		a.refuse(forbidden("not invited to RFQ %s", r.ID))
	case r.State != RFQOpen:
		a.refuse(notFound("RFQ %s is closed", r.ID))
	default:
		return r
	}
	return nil
}

// submitQuote is POST /maker/quotes.
func (a *applier) submitQuote(maker *Party, c SubmitQuote) {
	if a.protectionFrozen(maker) {
		return
	}
	r := a.openRFQFor(maker, c.RFQID)
	switch {
	case r == nil:
		return
	case !r.Deadline.After(a.d.Now):
		a.refuse(conflict("the RFQ's deadline has passed"))
		return
	}
	validUntil := a.d.Now.Add(a.d.Cfg.QuoteLifetime)
	if validUntil.After(r.Deadline) {
		validUntil = r.Deadline
	}
	if c.ValidUntil != nil {
		validUntil = c.ValidUntil.UTC()
		if !validUntil.After(a.d.Now) {
			a.refuse(conflict("validUntil is in the past"))
			return
		}
		if validUntil.After(r.Deadline) {
			a.refuse(conflict("validUntil is after the RFQ's deadline"))
			return
		}
	}
	if c.Price.Sign() <= 0 {
		a.refuse(apiErr(409, CodeDustTrade, "a zero price makes a zero leg"))
		return
	}
	if r.SettlingTrade != "" {
		if t := a.d.Trades[r.SettlingTrade]; t != nil && t.Maker == maker.ID {
			a.refuse(conflict("your previous quote on this RFQ is settling"))
		} else {
			a.refuse(conflict("a settlement is in flight on this RFQ"))
		}
		return
	}
	amounts, refusal := tradeAmounts(r, c.Price)
	if refusal != nil {
		a.refuse(refusal)
		return
	}
	q := &Quote{
		ID: a.d.IDs.New(prefixQuote), State: QuoteFunding, RFQ: r.ID, Maker: maker.ID,
		Price: c.Price, ValidUntil: validUntil, CreatedAt: a.d.Now, Amounts: amounts,
		Allocations: makerAllocations(r, maker.ID, amounts), ReqSeq: a.seq,
	}
	// A second quote replaces the first: the old one is revoked and its allocations are
	// cancelled on the ledger before the new ones are funded.
	if old := a.d.makerQuoteOn(r, maker.ID); old != nil && old.pending() {
		q.PendingCancels = a.endQuoteThen(old, TrigRevoke, q.ID)
		if plantedBuild && plantedOn("replace-funds-first") {
			q.PendingCancels = 0 // planted bug: fund the replacement before the cancels landed
		}
	}
	a.d.Quotes[q.ID] = q
	r.Quotes = append(r.Quotes, q.ID)
	a.d.Held[a.seq] = &HeldReply{Seq: a.seq, Kind: contQuotePrepare, Entity: q.ID, Waiting: len(q.Allocations)}
	a.at(q.ValidUntil, DLQuoteValid, q.ID)
	if q.PendingCancels == 0 {
		a.fundQuote(q, r)
	}
}

// makerQuoteOn returns the maker's newest quote on an RFQ, if any.
func (d *Desk) makerQuoteOn(r *RFQ, maker string) *Quote {
	for i := len(r.Quotes) - 1; i >= 0; i-- {
		if q := d.Quotes[r.Quotes[i]]; q != nil && q.Maker == maker {
			return q
		}
	}
	return nil
}

// fundQuote prepares the maker's allocations (or submits them for a desk-signed maker).
func (a *applier) fundQuote(q *Quote, r *RFQ) {
	maker := a.d.Parties[q.Maker]
	for i := range q.Allocations {
		al := &q.Allocations[i]
		a.allocate(al, q.ID, a.d.settlementWindowEnd(q.ValidUntil), q.ValidUntil, maker,
			&Continuation{Kind: contQuotePrepare, ReqSeq: q.ReqSeq, Entity: q.ID, LegID: al.LegID})
	}
}

// allocate issues the ledger call that makes one allocation of settlement: a prepare for a
// party that signs itself, a submit for a desk-signed one.
func (a *applier) allocate(al *AllocationRef, settlement string, settleBefore, allocateBefore time.Time, owner *Party, cont *Continuation) {
	inst, _ := a.d.Cfg.instrument(al.Instrument)
	al.Attempt++
	cmd := &Command{Allocate: &AllocateCmd{
		Executor: a.d.Cfg.Operator, SettlementID: settlement, LegID: al.LegID, Owner: al.Owner,
		Send: al.Send, Instrument: inst.RegistryID, Amount: al.Amount,
		AllocateBefore: allocateBefore, SettleBefore: settleBefore,
	}}
	op := OpPrepare
	if owner == nil || owner.deskSigned() {
		op = OpSubmit
	}
	a.call(LedgerCall{CommandID: allocCommandID(settlement, al.LegID, al.Attempt), Op: op, ActAs: al.Owner, Command: cmd}, cont)
}

// allocCommandID is the command id of an allocation's attempt: settlement:leg:attempt.
func allocCommandID(settlement, leg string, attempt int) string {
	return settlement + ":" + leg + ":" + strconv.Itoa(attempt)
}

// allocationByLeg finds an allocation by leg id.
func allocationByLeg(als []AllocationRef, leg string) *AllocationRef {
	for i := range als {
		if als[i].LegID == leg {
			return &als[i]
		}
	}
	return nil
}

// quotePrepared handles one maker allocation prepared (or, desk-signed, submitted).
func (a *applier) quotePrepared(cont *Continuation, res LedgerResult) {
	q, ok := a.d.Quotes[cont.Entity]
	if !ok || q.State != QuoteFunding || q.ReqSeq != cont.ReqSeq {
		// The quote died or was refused meanwhile: an allocation that landed is released.
		if res.Failure == nil && res.AllocationCID != "" {
			a.cancelAllocation(res.AllocationCID, cont.Entity+":"+cont.LegID+":late")
		}
		return
	}
	al := allocationByLeg(q.Allocations, cont.LegID)
	if res.Failure != nil {
		a.quoteFundingRefused(q, ledgerRefusal(res.Failure))
		return
	}
	if res.AllocationCID != "" { // desk-signed: the allocation landed already
		al.CID = res.AllocationCID
	} else {
		al.PreparedID, al.Hash, al.PrepExpires, al.Prepared = res.PreparedID, res.Hash, res.ExpiresAt, res.Prepared
		al.Inputs = res.Inputs
	}
	held, ok := a.d.Held[q.ReqSeq]
	if !ok {
		return
	}
	held.Waiting--
	if held.Waiting > 0 {
		return
	}
	// Every allocation is prepared: the quote is recorded and its actions handed out.
	maker := a.d.Parties[q.Maker]
	a.emit(maker.ID, EvQuoteCreated, a.d.quoteDTO(q)) // also when quiet: events are numbered and retained
	for i := range q.Allocations {
		al := &q.Allocations[i]
		if al.CID != "" {
			continue
		}
		x := a.newAction(actionSpec{
			Party: maker.ID, Purpose: PurposeAllocate, ExpiresAt: q.ValidUntil,
			Description: allocationDescription(al, q.RFQ),
			Flow:        FlowQuote, FlowID: q.ID, LegID: al.LegID,
		}, LedgerResult{PreparedID: al.PreparedID, Hash: al.Hash, ExpiresAt: al.PrepExpires, Prepared: al.Prepared, Inputs: al.Inputs})
		al.Prepared = nil // the action keeps it
		q.Actions = append(q.Actions, x.ID)
	}
	var body any
	if !a.quiet || a.idemWants(q.ReqSeq) {
		body = QuoteWithActionsDTO{QuoteDTO: a.d.quoteDTO(q), Actions: a.d.actionDTOs(q.Actions)}
	}
	a.replyTo(q.ReqSeq, 200, body)
	q.ReqSeq = 0
	a.maybeAnchor(q)
}

// allocationDescription says in words what signing an allocation does.
func allocationDescription(al *AllocationRef, rfq string) string {
	if al.Send {
		return "Allocate " + al.Amount.String() + " " + al.Instrument + " to send for " + rfq
	}
	return "Allocate to receive " + al.Amount.String() + " " + al.Instrument + " for " + rfq
}

// quoteFundingRefused ends a quote whose allocations could not be prepared while its
// request still waits: nothing is recorded, and the request gets the refusal.
func (a *applier) quoteFundingRefused(q *Quote, refusal *APIError) {
	a.quoteFundingRefusedThen(q, refusal, "")
}

// quoteFundingRefusedThen is quoteFundingRefused whose allocation cancels, once done, let
// quote `then` be funded. It returns how many cancels it issued.
func (a *applier) quoteFundingRefusedThen(q *Quote, refusal *APIError, then string) int {
	seq := q.ReqSeq
	for _, id := range q.Actions {
		a.dropAction(id)
	}
	n := a.cancelLanded(q.Allocations, q.ID, then)
	if r := a.d.RFQs[q.RFQ]; r != nil {
		for i, id := range r.Quotes {
			if id == q.ID {
				r.Quotes = append(r.Quotes[:i:i], r.Quotes[i+1:]...)
				break
			}
		}
	}
	delete(a.d.Quotes, q.ID)
	// Answers still due for its other allocations find no quote: quotePrepared releases
	// whatever of them landed.
	if _, ok := a.d.Held[seq]; ok && refusal != nil {
		a.refuseTo(seq, refusal)
	}
	return n
}

// quoteAllocationLanded records an executed maker allocation and anchors the quote once
// all landed. An allocation landing on a dead quote is cancelled at once.
func (a *applier) quoteAllocationLanded(quoteID, leg, cid string) {
	q, ok := a.d.Quotes[quoteID]
	if !ok || q.State != QuoteFunding {
		if cid != "" {
			a.cancelAllocation(cid, quoteID+":"+leg+":dead")
		}
		return
	}
	if al := allocationByLeg(q.Allocations, leg); al != nil {
		al.CID = cid
	}
	a.maybeAnchor(q)
}

// maybeAnchor makes a funding quote live once every allocation landed.
func (a *applier) maybeAnchor(q *Quote) {
	if !a.d.m().quote.can(q, TrigAnchored) || q.ReqSeq != 0 {
		return
	}
	for _, al := range q.Allocations {
		if al.CID == "" {
			return
		}
	}
	a.d.m().quote.must(q, TrigAnchored)
	q.Anchored = true
	a.scoreQuoted(q)
	r := a.d.RFQs[q.RFQ] // the frames are built also when quiet: events are numbered and retained
	dto := a.d.quoteDTO(q)
	a.emit(q.Maker, EvQuoteAnchored, QuoteAnchoredPayload{QuoteID: q.ID, RfqID: q.RFQ, AnchorCids: dto.AnchorCids})
	a.emit(r.Taker, EvQuoteCreated, dto)
}

// quoteFundingLost ends a funding quote whose allocate action expired or can no longer run.
func (a *applier) quoteFundingLost(quoteID, category, why string) {
	q, ok := a.d.Quotes[quoteID]
	if !ok || q.State != QuoteFunding {
		return
	}
	if q.ReqSeq != 0 {
		a.quoteFundingRefused(q, ledgerRefusal(&LedgerFailure{Category: category, Message: why}))
		return
	}
	a.endQuote(q, TrigRevoke)
}

// quoteValidUntil ends a quote at its validUntil: revoked if its allocations never all
// landed, expired if it was live. A settling quote is governed by its trade's window.
func (a *applier) quoteValidUntil(id string) {
	q, ok := a.d.Quotes[id]
	if !ok || q.ValidUntil.After(a.d.Now) {
		return
	}
	switch q.State {
	case QuoteFunding:
		if q.ReqSeq != 0 {
			a.quoteFundingRefused(q, conflict("the quote's validUntil passed before its allocations were prepared"))
			return
		}
		a.endQuote(q, TrigRevoke)
	case QuoteLive:
		// A quote valid until its RFQ's deadline (the default lifetime's cap) meets it in
		// the same Tick: the RFQ expires first, and its rfq.expired goes before the
		// quote's expiry, so that a maker never re-quotes an RFQ that looks open to it.
		if r := a.d.RFQs[q.RFQ]; r != nil && !r.Deadline.After(a.d.Now) {
			if a.rfqDeadline(r.ID); q.State != QuoteLive {
				return
			}
		}
		a.endQuote(q, TrigExpire)
	}
}

// deleteQuote is DELETE /maker/quotes/{id}.
func (a *applier) deleteQuote(maker *Party, c DeleteQuote) {
	q, ok := a.d.Quotes[c.QuoteID]
	switch {
	case !ok:
		a.refuse(notFound("unknown quote %q", c.QuoteID))
	case q.Maker != maker.ID:
		a.refuse(forbidden("not your quote"))
	case q.State == QuoteSettling:
		a.refuse(conflict("the quote is accepted and settling"))
	case !q.pending() || q.ReqSeq != 0:
		a.refuse(notFound("quote %s is no longer pending", q.ID))
	default:
		a.endQuote(q, TrigRevoke)
		a.reply(204, nil)
	}
}

// endQuote moves a pending quote to a final state, removes its unsigned actions, releases
// its allocations on the ledger and tells the maker (and the taker, who saw it if it was live).
func (a *applier) endQuote(q *Quote, t Trigger) { a.endQuoteThen(q, t, "") }

// endQuoteThen is endQuote whose allocation cancels, once done, let quote `then` be funded.
// It returns how many cancels it issued.
func (a *applier) endQuoteThen(q *Quote, t Trigger, then string) int {
	if q.State == QuoteFunding && q.ReqSeq != 0 {
		// The quote was never recorded: its POST /maker/quotes still waits on the prepares.
		// Ending it must answer that request (a held reply is never left behind), and the
		// quote goes as if refused: no quote.created was sent, so no quote.status follows.
		return a.quoteFundingRefusedThen(q, endedBeforeRecorded(t), then)
	}
	if err := a.d.m().quote.fire(q, t); err != nil {
		return 0
	}
	a.scoreRevoked(q, t, then != "")
	for _, id := range q.Actions {
		a.dropAction(id)
	}
	n := a.cancelLanded(q.Allocations, q.ID, then)
	status := QuoteStatusPayload{QuoteID: q.ID, RfqID: q.RFQ, Status: q.wireStatus()}
	mine := status
	if q.State == QuoteRevoked {
		mine.Reason = q.RevokeReason
	}
	a.emit(q.Maker, EvQuoteStatus, mine)
	if r := a.d.RFQs[q.RFQ]; r != nil && q.Anchored {
		a.emit(r.Taker, EvQuoteStatus, status)
	}
	return n
}

// endedBeforeRecorded is the refusal of a quote submission whose quote ended by t before
// its allocations were prepared.
func endedBeforeRecorded(t Trigger) *APIError {
	switch t {
	case TrigRevoke:
		return conflict("the quote was replaced by a newer quote before it was recorded")
	case TrigRFQCancelled, TrigLose:
		return notFound("the RFQ closed before the quote was recorded")
	default:
		return conflict("the RFQ's deadline passed before the quote was recorded")
	}
}

// cancelLanded cancels every landed, not yet cancelled allocation; see endQuoteThen.
func (a *applier) cancelLanded(als []AllocationRef, owner, then string) int {
	n := 0
	for i := range als {
		if als[i].CID != "" && !als[i].Cancelled {
			als[i].Cancelled = true
			if plantedBuild && plantedOn("forget-cancel") && then == "" {
				continue // planted bug: the allocation is marked cancelled but no cancel is sent
			}
			if a.cancelAllocationThen(als[i].CID, owner+":"+als[i].LegID, then) {
				n++
			}
		}
	}
	return n
}

// cancelAllocation releases an allocation on the ledger; the executor may always do so.
func (a *applier) cancelAllocation(cid, why string) { a.cancelAllocationThen(cid, why, "") }

// cancelAllocationThen issues the cancel and reports whether it did (a cancel of that
// allocation already in flight is not issued twice); `then` names who waits for its answer.

func (a *applier) cancelAllocationThen(cid, why, then string) bool {
	if _, inFlight := a.d.Pending["cancel:"+cid]; inFlight {
		return false
	}
	a.call(LedgerCall{
		CommandID: "cancel:" + cid, Op: OpSubmit, ActAs: a.d.Cfg.Operator,
		Command: &Command{CancelAllocation: &CancelAllocationCmd{AllocationCID: cid}},
	}, &Continuation{Kind: contCancelAlloc, Entity: cid, Aux: then, LegID: why})
	return true
}

// allocationCancelled handles a cancel's answer. Whatever the answer (a cancel of an
// allocation already consumed or expired fails harmlessly), a replacement waiting for it
// goes on.
func (a *applier) allocationCancelled(cont *Continuation, res LedgerResult) {
	if retryableCleanup(res.Failure) && !(plantedBuild && plantedOn("cancel-gives-up")) {
		a.retryCallLater(cont) // the allocation may still be live: never leave it behind
		return
	}
	if cont.Aux == "" {
		return
	}
	if id, ok := strings.CutPrefix(cont.Aux, tradeReleasePrefix); ok {
		a.tradeAllocationReleased(id, res.Failure == nil)
		return
	}
	q, ok := a.d.Quotes[cont.Aux]
	if !ok || q.State != QuoteFunding || q.PendingCancels == 0 {
		return
	}
	q.PendingCancels--
	if q.PendingCancels == 0 {
		a.fundQuote(q, a.d.RFQs[q.RFQ])
	}
}
