package machine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Continuation kinds of the wallet flows.
const (
	contDeposit  ContKind = "deposit"  // a transfer accept prepared or submitted
	contWithdraw ContKind = "withdraw" // a withdrawal prepared or submitted
	contFaucet   ContKind = "faucet"   // one faucet transfer submitted
)

// withdrawalKey names the one withdrawal a party may have awaiting signature per instrument.
func withdrawalKey(party, symbol string) string { return party + "|" + symbol }

// acceptIncoming is POST /wallet/incoming/{cid}/accept. A party that signs itself gets a
// transfer-accept action (202); a desk-signed party's accept is submitted at once (200).
// Re-accepting returns the action already pending.
func (a *applier) acceptIncoming(p *Party, c AcceptIncoming) {
	if c.CID == "" || len(c.CID) > 256 {
		a.refuse(notFound("unknown transfer %q", c.CID))
		return
	}
	if id, ok := a.d.Deposits[c.CID]; ok {
		x, live := a.d.Actions[id]
		switch {
		case live && x.Party != p.ID:
			// Another party's deposit: the caller has no such transfer.
			a.refuse(notFound("unknown transfer %q", c.CID))
			return
		case id == "":
			a.refuse(apiErr(409, CodeRetryLater, "the deposit is being accepted"))
			return
		case live:
			a.reply(202, ActionsDTO{Actions: []SignActionDTO{x.dto()}})
			return
		}
	}
	a.d.Deposits[c.CID] = ""
	op := OpPrepare
	if p.deskSigned() {
		op = OpSubmit
	}
	a.d.Held[a.seq] = &HeldReply{Seq: a.seq, Kind: contDeposit, Entity: c.CID, Party: p.ID, Waiting: 1}
	a.call(LedgerCall{
		CommandID: fmt.Sprintf("accept:%s:%d", c.CID, a.seq), Op: op, ActAs: p.ID,
		Command: &Command{AcceptTransfer: &AcceptTransferCmd{InstructionCID: c.CID}},
	}, &Continuation{Kind: contDeposit, ReqSeq: a.seq, Entity: c.CID, Aux: p.ID})
}

// depositPrepared handles the ledger's answer to a deposit accept.
func (a *applier) depositPrepared(cont *Continuation, res LedgerResult) {
	if a.d.Deposits[cont.Entity] == "" {
		delete(a.d.Deposits, cont.Entity)
	}
	if res.Failure != nil {
		refusal := ledgerRefusal(res.Failure)
		if res.Failure.Category == LedgerForbidden {
			refusal = notFound("unknown transfer %q", cont.Entity) // not addressed to the caller
		}
		a.refuseTo(cont.ReqSeq, refusal)
		return
	}
	if res.PreparedID == "" { // desk-signed: accepted already
		a.replyTo(cont.ReqSeq, 200, ActionsDTO{Actions: []SignActionDTO{}})
		return
	}
	x := a.newAction(actionSpec{
		Party: cont.Aux, Purpose: PurposeTransferAccept,
		Description: fmt.Sprintf("Accept the incoming transfer %s", cont.Entity),
		Flow:        FlowDeposit, FlowID: cont.Entity,
	}, res)
	a.d.Deposits[cont.Entity] = x.ID
	a.replyTo(cont.ReqSeq, 202, ActionsDTO{Actions: []SignActionDTO{x.dto()}})
}

func (a *applier) depositAccepted(x *Action)   { delete(a.d.Deposits, x.FlowID) }
func (a *applier) depositActionGone(x *Action) { delete(a.d.Deposits, x.FlowID) }

// withdraw is POST /wallet/withdraw.
func (a *applier) withdraw(p *Party, c Withdraw) {
	if !a.d.Cfg.Network.WithdrawWorks() {
		a.refuse(notImplemented("withdrawals do not work on the local sandbox"))
		return
	}
	inst, ok := a.d.Cfg.instrument(c.Symbol)
	if !ok {
		a.refuse(notFound("%s", a.d.Cfg.unknownInstrument(c.Symbol)))
		return
	}
	if c.Amount.Sign() <= 0 {
		a.refuse(badRequest("amount must be positive"))
		return
	}
	if !strings.Contains(c.Receiver, "::") || len(c.Receiver) > 256 {
		a.refuse(badRequest("receiver must be a full party id (hint::fingerprint)"))
		return
	}
	key := withdrawalKey(p.ID, inst.Symbol)
	if id, waiting := a.d.Withdrawals[key]; waiting {
		// SPEC: a second withdrawal while one awaits signature is a plain 409; one that is
		// being prepared or executing is the transient RETRY_LATER.
		if x, ok := a.d.Actions[id]; ok && x.State == ActionPending {
			a.refuse(conflict("a withdrawal of %s already awaits signature", inst.Symbol))
		} else {
			a.refuse(apiErr(409, CodeRetryLater, "a withdrawal of %s is executing", inst.Symbol))
		}
		return
	}
	if a.d.settlingIn(p.ID, inst.Symbol) {
		a.refuse(apiErr(409, CodeRetryLater, "a trade of yours is settling in %s", inst.Symbol))
		return
	}
	a.d.Withdrawals[key] = ""
	op := OpPrepare
	if p.deskSigned() {
		op = OpSubmit
	}
	a.d.Held[a.seq] = &HeldReply{Seq: a.seq, Kind: contWithdraw, Entity: key, Party: p.ID, Waiting: 1}
	a.call(LedgerCall{
		CommandID: fmt.Sprintf("withdraw:%s:%d", p.ID, a.seq), Op: op, ActAs: p.ID,
		Command: &Command{Transfer: &TransferCmd{Sender: p.ID, Receiver: c.Receiver, Instrument: inst.RegistryID, Amount: c.Amount}},
	}, &Continuation{Kind: contWithdraw, ReqSeq: a.seq, Entity: key, Aux: fmt.Sprintf("%s %s to %s", c.Amount, inst.Symbol, c.Receiver)})
}

// settlingIn reports whether a trade of the party is settling in the instrument.
// The answer is whether any trade matches, so the map's order does not matter.
func (d *Desk) settlingIn(party, symbol string) bool {
	for _, t := range d.Trades {
		if (t.State == TradeAllocating || t.State == TradeSettling) && (t.Taker == party || t.Maker == party) &&
			(t.Base == symbol || t.QuoteSym == symbol) {
			return true
		}
	}
	return false
}

// withdrawalPrepared handles the ledger's answer to a withdrawal.
func (a *applier) withdrawalPrepared(cont *Continuation, res LedgerResult) {
	held := a.d.Held[cont.ReqSeq]
	if res.Failure != nil || res.PreparedID == "" {
		delete(a.d.Withdrawals, cont.Entity)
	}
	party := cont.Entity[:strings.LastIndex(cont.Entity, "|")]
	if held == nil {
		// Nobody waits any more (a restart came between): a prepared withdrawal still
		// becomes an action, which the party finds in GET /tx/pending, and the answer the
		// flow reaches is still recorded for the request's Idempotency-Key, if it had one
		// (replyTo and refuseTo send nothing for a request no longer held).
		held = &HeldReply{Party: party}
	}
	if f := res.Failure; f != nil {
		refusal := ledgerRefusal(f)
		if f.Category == LedgerNotFound {
			refusal = badRequest("unknown receiver: %s", f.Message)
		}
		a.refuseTo(cont.ReqSeq, refusal)
		return
	}
	if res.PreparedID == "" { // desk-signed: sent already
		a.replyTo(cont.ReqSeq, 200, ActionsDTO{Actions: []SignActionDTO{}})
		return
	}
	// A trade in the instrument was accepted while the withdrawal was prepared: it is
	// blocked as if it had arrived after the accept (and would be dropped by it anyway).
	if sym := cont.Entity[len(party)+1:]; a.d.settlingIn(held.Party, sym) {
		delete(a.d.Withdrawals, cont.Entity)
		a.refuseTo(cont.ReqSeq, apiErr(409, CodeRetryLater, "a trade of yours is settling in %s", sym))
		return
	}
	x := a.newAction(actionSpec{
		Party: held.Party, Purpose: PurposeTransferOut, Description: "Withdraw " + cont.Aux,
		Flow: FlowWithdraw, FlowID: cont.Entity,
	}, res)
	a.d.Withdrawals[cont.Entity] = x.ID
	a.replyTo(cont.ReqSeq, 202, ActionsDTO{Actions: []SignActionDTO{x.dto()}})
}

func (a *applier) withdrawalSent(x *Action)       { a.forgetWithdrawal(x) }
func (a *applier) withdrawalActionGone(x *Action) { a.forgetWithdrawal(x) }

func (a *applier) forgetWithdrawal(x *Action) {
	if a.d.Withdrawals[x.FlowID] == x.ID {
		delete(a.d.Withdrawals, x.FlowID)
	}
}

// faucetInstruments are the catalog entries a draw offers, in catalog order.
func (d *Desk) faucetInstruments() []*Instrument {
	var out []*Instrument
	for i := range d.Cfg.Instruments {
		if d.Cfg.Instruments[i].FaucetAmount.Sign() > 0 {
			out = append(out, &d.Cfg.Instruments[i])
		}
	}
	return out
}

// faucetArmed reports whether a faucet runs here: the test network with a reservoir and
// something to offer.
func (d *Desk) faucetArmed() bool {
	return d.Cfg.Network.FaucetRuns() && d.Cfg.Reservoir != "" && len(d.faucetInstruments()) > 0
}

// retryAfter is how long the party must wait before drawing again, in whole seconds.
func (d *Desk) retryAfter(party string) int {
	next, ok := d.FaucetNext[party]
	if !ok || !next.After(d.Now) {
		return 0
	}
	return int((next.Sub(d.Now) + time.Second - 1) / time.Second)
}

// faucetDraw is POST /faucet: one transfer per offered token from the reservoir. The
// cooldown starts only if something went out.
func (a *applier) faucetDraw(p *Party) {
	if !a.d.faucetArmed() {
		a.refuse(notImplemented("no faucet runs on this desk"))
		return
	}
	insts := a.d.faucetInstruments()
	if wait := a.d.retryAfter(p.ID); wait > 0 {
		ans := FaucetAnswer{Sent: []FaucetSent{}, Skipped: []FaucetSkipped{}, RetryAfterSeconds: wait}
		for _, in := range insts {
			ans.Skipped = append(ans.Skipped, FaucetSkipped{Symbol: in.Symbol, Reason: "cooldown"})
		}
		a.reply(200, ans)
		return
	}
	// Hold the cooldown while the transfers are out, so a second draw cannot race this one.
	a.d.FaucetNext[p.ID] = a.d.Now.Add(a.d.Cfg.FaucetCooldown)
	a.d.Held[a.seq] = &HeldReply{Seq: a.seq, Kind: contFaucet, Party: p.ID, Waiting: len(insts),
		Faucet: &FaucetAnswer{Sent: []FaucetSent{}, Skipped: []FaucetSkipped{}}}
	for _, in := range insts {
		a.call(LedgerCall{
			CommandID: fmt.Sprintf("faucet:%s:%d:%s", p.ID, a.seq, in.Symbol), Op: OpSubmit, ActAs: a.d.Cfg.Reservoir,
			Command: &Command{Transfer: &TransferCmd{Sender: a.d.Cfg.Reservoir, Receiver: p.ID, Instrument: in.RegistryID, Amount: in.FaucetAmount}},
		}, &Continuation{Kind: contFaucet, ReqSeq: a.seq, Entity: in.Symbol, Aux: p.ID})
	}
}

// faucetSent records one faucet transfer's outcome and answers once all are in.
func (a *applier) faucetSent(cont *Continuation, res LedgerResult) {
	held, ok := a.d.Held[cont.ReqSeq]
	if !ok || held.Faucet == nil {
		return
	}
	in, _ := a.d.Cfg.instrument(cont.Entity)
	switch {
	case res.Failure == nil:
		held.Faucet.Sent = append(held.Faucet.Sent, FaucetSent{Symbol: in.Symbol, DisplaySymbol: in.Display, Amount: in.FaucetAmount})
	case res.Failure.Category == LedgerInsufficientFunds:
		held.Faucet.Skipped = append(held.Faucet.Skipped, FaucetSkipped{Symbol: in.Symbol, Reason: "reservoir-empty"})
	case res.Failure.Category == LedgerPreapprovalNeeded:
		held.Faucet.Skipped = append(held.Faucet.Skipped, FaucetSkipped{Symbol: in.Symbol, Reason: "preapproval-required"})
	default:
		held.Faucet.Skipped = append(held.Faucet.Skipped, FaucetSkipped{Symbol: in.Symbol, Reason: "unavailable"})
	}
	held.Waiting--
	if held.Waiting > 0 {
		return
	}
	// Answer in catalog order whatever order the ledger answered in.
	order := map[string]int{}
	for i, in := range a.d.faucetInstruments() {
		order[in.Symbol] = i
	}
	sortBy(held.Faucet.Sent, func(s FaucetSent) int { return order[s.Symbol] })
	sortBy(held.Faucet.Skipped, func(s FaucetSkipped) int { return order[s.Symbol] })
	if len(held.Faucet.Sent) == 0 {
		delete(a.d.FaucetNext, held.Party)
	}
	held.Faucet.RetryAfterSeconds = a.d.retryAfter(held.Party)
	a.replyTo(held.Seq, 200, *held.Faucet)
}

// sortBy sorts s stably by key.
func sortBy[T any](s []T, key func(T) int) {
	sort.SliceStable(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
}

// flowResult routes the ledger answers of the RFQ, quote, trade and wallet flows.
func (a *applier) flowResult(cont *Continuation, res LedgerResult) {
	switch cont.Kind {
	case contQuotePrepare:
		a.quotePrepared(cont, res)
	case contCancelAlloc:
		a.allocationCancelled(cont, res)
	case contTradePrepare:
		a.tradePrepared(cont, res)
	case contSettle:
		a.settled(cont, res)
	case contDeposit:
		a.depositPrepared(cont, res)
	case contWithdraw:
		a.withdrawalPrepared(cont, res)
	case contFaucet:
		a.faucetSent(cont, res)
	}
}

// snapshot sends a newly opened socket the party's current state: rfq.created for every
// open RFQ it is invited to, then quote.created and quote.status for its live quote there.
func (a *applier) snapshot(p *Party, socket uint64) {
	rfqs := make([]*RFQ, 0)
	for _, r := range a.d.rfqsOf(p.ID) { // collected only: sortByTime is a total order
		if r.State == RFQOpen && r.invited(p.ID) {
			rfqs = append(rfqs, r)
		}
	}
	sortByTime(rfqs)
	for _, r := range rfqs {
		a.out.Events = append(a.out.Events, Event{Party: p.ID, Socket: socket, Type: EvRfqCreated, Payload: a.d.rfqDTO(r)})
		// Only a recorded quote: one whose submission still waits was never announced.
		if q := a.d.makerQuoteOn(r, p.ID); q != nil && q.pending() && q.ReqSeq == 0 {
			a.out.Events = append(a.out.Events,
				Event{Party: p.ID, Socket: socket, Type: EvQuoteCreated, Payload: a.d.quoteDTO(q)},
				Event{Party: p.ID, Socket: socket, Type: EvQuoteStatus, Payload: QuoteStatusPayload{QuoteID: q.ID, RfqID: r.ID, Status: q.wireStatus()}})
		}
	}
}

// sortByTime orders RFQs by creation, then id.
func sortByTime(rs []*RFQ) {
	slices.SortFunc(rs, func(a, b *RFQ) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
