package machine

import (
	"fmt"
	"strconv"
	"time"
)

// Continuation kinds of the action queue.
const (
	contExecute ContKind = "execute"
	// contExecuteAsk is an execute sent to learn whether an earlier attempt ran: its
	// outcome was unknown, or a restart issued it again while the attempt before the
	// restart may still be in flight on the ledger. Only the ledger's "it ran" or "it
	// cannot" settles it for an action whose flow ended; a failure that says only "not
	// this time" (retryable) does not, since the earlier attempt may still land.
	contExecuteAsk ContKind = "execute.ask"
)

// MaxBatch is the largest batch POST /tx/execute takes.
const MaxBatch = 50

// actionSpec describes an action to create once its transaction is prepared.
type actionSpec struct {
	Party       string
	Purpose     string
	Description string
	ExpiresAt   time.Time // capped at the action lifetime
	Flow        FlowKind
	FlowID      string
	LegID       string
	TradeID     string
}

// newAction records a prepared transaction as an action waiting on spec.Party's signature,
// announces it with sign.requested and schedules its expiry.
func (a *applier) newAction(spec actionSpec, res LedgerResult) *Action {
	expires := a.d.Now.Add(a.d.Cfg.ActionLifetime)
	if !spec.ExpiresAt.IsZero() && spec.ExpiresAt.Before(expires) {
		expires = spec.ExpiresAt
	}
	if !res.ExpiresAt.IsZero() && res.ExpiresAt.Before(expires) {
		expires = res.ExpiresAt
	}
	x := &Action{
		ID:          a.d.IDs.New(prefixAction),
		State:       ActionPending,
		Party:       spec.Party,
		Purpose:     spec.Purpose,
		Description: spec.Description,
		Hash:        append([]byte(nil), res.Hash...),
		PreparedID:  res.PreparedID,
		CreatedAt:   a.d.Now,
		ExpiresAt:   expires,
		Flow:        spec.Flow,
		FlowID:      spec.FlowID,
		LegID:       spec.LegID,
		TradeID:     spec.TradeID,
		Order:       a.d.IDs.Counter,
		Prepared:    res.Prepared,
		Inputs:      res.Inputs,
	}
	a.d.Actions[x.ID] = x
	a.d.indexReserving(x, true) // coinsel.go
	a.at(x.ExpiresAt, DLAction, x.ID)
	a.emit(x.Party, EvSignRequested, x.dto()) // also when quiet: events are numbered and retained
	return x
}

// dto renders an action on the wire.
func (x *Action) dto() SignActionDTO {
	return SignActionDTO{
		ID: x.ID, Kind: "hash", Purpose: x.Purpose, Description: x.Description, Hash: x.Hash,
		TradeID: x.TradeID, CreatedAt: WireTime(x.CreatedAt), ExpiresAt: WireTime(x.ExpiresAt),
	}
}

// actionDTOs renders the named actions that are still waiting.
func (d *Desk) actionDTOs(ids []string) []SignActionDTO {
	out := []SignActionDTO{}
	for _, id := range ids {
		if x, ok := d.Actions[id]; ok {
			out = append(out, x.dto())
		}
	}
	return out
}

// finishAction takes an action out of the queue with its outcome, remembers it for a
// blind resend until its expiry, and sends sign.completed.
func (a *applier) finishAction(x *Action, t Trigger) {
	if err := a.d.m().action.fire(x, t); err != nil {
		return
	}
	delete(a.d.Actions, x.ID)
	a.d.indexReserving(x, false) // coinsel.go
	until := x.ExpiresAt
	if !until.After(a.d.Now) {
		until = a.d.Now.Add(time.Minute)
	}
	until = housekeepingAt(until)
	a.d.DoneActions[x.ID] = &DoneAction{ID: x.ID, Party: x.Party, Outcome: x.State, Until: until}
	a.at(until, DLDoneAction, x.ID)
	a.emit(x.Party, EvSignCompleted, ActionIDPayload{ActionID: x.ID})
}

// dropAction removes an action whose flow died (quote revoked, trade failed, withdrawal
// superseded). Nothing happens to an action that already left the queue.
func (a *applier) dropAction(id string) {
	if x, ok := a.d.Actions[id]; ok {
		a.askBeforeLeaving(x)
		a.finishAction(x, TrigDrop)
	}
}

func (a *applier) forgetDoneAction(id string) {
	if done, ok := a.d.DoneActions[id]; ok && !done.Until.After(a.d.Now) {
		delete(a.d.DoneActions, id)
	}
}

// expireAction ends an action whose lifetime passed unsigned. One whose execute is with the
// ledger is left to the ledger's answer.
func (a *applier) expireAction(id string) {
	x, ok := a.d.Actions[id]
	if !ok || !a.d.m().action.can(x, TrigExecute) || x.ExpiresAt.After(a.d.Now) || (plantedBuild && plantedOn("expired-executes")) {
		return
	}
	a.finishAction(x, TrigExpire)
	a.actionLost(x, LedgerExpired, "the action expired unsigned")
}

// executeActions is POST /tx/execute in both forms. Entries that can be refused at once are;
// the others go to the ledger and the reply waits for their outcomes (at most ExecuteWait,
// after which the batch form reports them in-flight).
func (a *applier) executeActions(caller *Party, c ExecuteActions) {
	if len(c.Entries) == 0 || len(c.Entries) > MaxBatch {
		a.refuse(badRequest("a batch holds 1 to %d signatures, got %d", MaxBatch, len(c.Entries)))
		return
	}
	held := &HeldReply{Seq: a.seq, Kind: contExecute, Party: caller.ID, Batch: c.Batch, Entries: make([]ExecEntry, len(c.Entries))}
	seen := map[string]bool{}
	for i, e := range c.Entries {
		held.Entries[i].ActionID = e.ActionID
		if seen[e.ActionID] {
			held.Entries[i].fail(badRequest("action %q appears twice in the batch", e.ActionID), false)
			continue
		}
		seen[e.ActionID] = true
		if refusal, retry := a.checkExecutable(caller, e); refusal != nil {
			held.Entries[i].fail(refusal, retry)
			continue
		}
		x := a.d.Actions[e.ActionID]
		a.d.m().action.must(x, TrigExecute)
		held.Waiting++
		x.Execute = &LedgerCall{Op: OpExecute, ActAs: x.Party, PreparedID: x.PreparedID, Signature: append([]byte(nil), e.Signature...), Prepared: x.Prepared,
			Since: a.d.LedgerEnd} // kept by every attempt: the first may be the one that commits
		a.sendExecute(x, &Continuation{Kind: contExecute, ReqSeq: a.seq, Entity: x.ID, Aux: strconv.Itoa(i)})
	}
	if held.Waiting == 0 {
		a.answerExecute(held)
		return
	}
	a.d.Held[a.seq] = held
	a.d.Deadlines.add(a.d.Now.Add(a.d.Cfg.ExecuteWait), DLExecuteWait, "", a.seq)
}

// sendExecute issues the action's execute under a fresh command id. The ledger deduplicates
// on the prepared transaction, so sending it again never executes it twice.
func (a *applier) sendExecute(x *Action, cont *Continuation) {
	x.Attempt++
	c := *x.Execute
	c.CommandID = execCommandID(x)
	a.call(c, cont)
}

// execCommandID is the command id of the action's current execute: id:exec:attempt.
func execCommandID(x *Action) string { return x.ID + ":exec:" + strconv.Itoa(x.Attempt) }

// executeRetryDelay spaces the retries of an execute whose outcome is unknown.
const executeRetryDelay = 2 * time.Second

// executeRetry sends again an execute whose outcome the ledger could not tell, until it
// answers for sure: the action stays executing (never a fresh allocation beside one that
// may have landed), and the client sees it as in flight.
func (a *applier) executeRetry(id string) {
	x, ok := a.d.Actions[id]
	if !ok || !a.d.m().action.can(x, TrigExecuted) || x.Execute == nil {
		return
	}
	if _, inFlight := a.d.Pending[execCommandID(x)]; inFlight {
		return
	}
	// Sent after an unknown outcome: it asks, should the action's flow end meanwhile.
	a.sendExecute(x, &Continuation{Kind: contExecuteAsk, Entity: x.ID})
}

// errInFlight marks an execute entry whose outcome is not known yet.
var errInFlight = unavailable(CodeRetryLater, "the ledger has not told the outcome yet; the desk keeps asking, and the outcome will show in GET /tx/pending and the stream")

// checkExecutable refuses an entry that cannot go to the ledger: unknown, another party's,
// finished, expired, or already executing.
func (a *applier) checkExecutable(caller *Party, e SignedAction) (*APIError, bool) {
	x, ok := a.d.Actions[e.ActionID]
	if !ok || x.Party != caller.ID {
		if done, ok := a.d.DoneActions[e.ActionID]; ok && done.Party == caller.ID {
			switch done.Outcome {
			case ActionDone:
				return conflict("action %s already executed; it will not run again", e.ActionID), false
			case ActionExpired:
				return gone("action %s expired before it was signed", e.ActionID), false
			default:
				return conflict("action %s was cancelled with its flow", e.ActionID), false
			}
		}
		return notFound("unknown action %q", e.ActionID), false
	}
	if x.State == ActionExecuting {
		return apiErr(409, CodeRetryLater, "action %s is executing; check GET /tx/pending", x.ID), true
	}
	if !x.ExpiresAt.After(a.d.Now) && !(plantedBuild && plantedOn("expired-executes")) {
		return gone("action %s expired before it was signed", x.ID), false
	}
	if len(e.Signature) != 64 {
		return badRequest("signature must be a base64 64-byte Ed25519 signature"), false
	}
	return nil, false
}

// fail records a refusal on an entry.
func (e *ExecEntry) fail(err *APIError, retryable bool) {
	e.Status = "error"
	e.Error = err.Message
	e.Retryable = &retryable
	e.HTTPError = err
}

// executed handles the ledger's answer to one execute.
func (a *applier) executed(cont *Continuation, res LedgerResult) {
	x, ok := a.d.Actions[cont.Entity]
	var refusal *APIError
	retry := false
	switch {
	case !ok || !a.d.m().action.can(x, TrigExecuted):
		// The action left the queue while executing. If it left because it executed (a
		// duplicate answer of a retried execute), there is nothing to do; if its flow died,
		// a success still counts on the ledger and what it created is released.
		if ok {
			break
		}
		if done := a.d.DoneActions[cont.Entity]; done != nil && done.Outcome == ActionDone {
			break
		}
		if res.Failure == nil {
			a.lateExecution(cont.Entity, res)
		} else if res.Failure.Category == LedgerUnknownOutcome || cont.Kind == contExecuteAsk && res.Failure.retryable() {
			// It may have made an allocation: ask until sure (contExecuteAsk). A first
			// attempt answered "not this time" did not run, and nothing else is in flight.
			a.retryCallLater(asking(cont))
		}
		refusal = conflict("the action's flow ended while it executed")
	case res.Failure == nil:
		a.finishAction(x, TrigExecuted)
		a.actionExecuted(x, res)
	default:
		refusal, retry = a.executeFailed(x, res.Failure, cont.Kind == contExecuteAsk)
	}
	a.settleEntry(cont, refusal, retry)
}

// asking is cont as an execute sent to learn whether an earlier attempt ran.
func asking(cont *Continuation) *Continuation {
	c := *cont
	c.Kind = contExecuteAsk
	return &c
}

// executeFailed decides what a failed execute means for the action and its flow. asking
// says an earlier attempt may have run (contExecuteAsk): then a failure that says only
// "not this time" settles nothing either, and the desk asks again as for an unknown
// outcome, never putting the action back to be signed beside an attempt that may land.
func (a *applier) executeFailed(x *Action, f *LedgerFailure, asking bool) (*APIError, bool) {
	if asking && f.retryable() {
		f = &LedgerFailure{Category: LedgerUnknownOutcome, Message: f.Message}
	}
	switch f.Category {
	case LedgerBadSignature:
		a.backToPending(x)
		return badRequest("the signature does not verify over the action's hash with the party key"), false
	case LedgerUnknownOutcome:
		// It may have executed: only the same execute, sent again, can tell.
		a.at(a.d.Now.Add(executeRetryDelay), DLExecuteRetry, x.ID)
		return errInFlight, true
	case LedgerUnavailable, LedgerInternal:
		a.backToPending(x)
		return unavailable(CodeRetryLater, "the ledger is unavailable or busy: %s", f.Message), true
	case LedgerExpired:
		a.finishAction(x, TrigExpire)
		a.actionLost(x, f.Category, f.Message)
		return gone("the action expired on the ledger: %s", f.Message), false
	default:
		// contention, insufficient funds, a spent contract, a refused command: the action
		// cannot run any more, so it leaves the queue and its flow decides what follows.
		a.finishAction(x, TrigDrop)
		a.actionLost(x, f.Category, f.Message)
		if f.Category == LedgerInsufficientFunds {
			return apiErr(409, CodeInsufficientFunds, "free holdings no longer cover the action: %s", f.Message), false
		}
		if f.Category == LedgerRejected || f.Category == LedgerForbidden {
			return badGateway("the ledger rejected the command: %s", f.Message), false
		}
		return conflict("the action's contract is spent or contended: %s", f.Message), false
	}
}

// backToPending puts an action whose execute did not take back in the queue to be signed
// again, or expires it at once if its lifetime passed while it executed (its expiry
// deadline, which skips an executing action, has fired already).
func (a *applier) backToPending(x *Action) {
	a.d.m().action.must(x, TrigExecuteRejected)
	if !x.ExpiresAt.After(a.d.Now) {
		a.expireAction(x.ID)
	}
}

// settleEntry records one entry's outcome and answers the request once all are known.
func (a *applier) settleEntry(cont *Continuation, refusal *APIError, retry bool) {
	held, ok := a.d.Held[cont.ReqSeq]
	if !ok {
		return
	}
	idx, ok := entryIndex(cont.Aux)
	if !ok || idx < 0 || idx >= len(held.Entries) {
		return
	}
	e := &held.Entries[idx]
	if e.Status != "" {
		return
	}
	switch {
	case refusal == errInFlight:
		e.Status, e.HTTPError = "in-flight", refusal
	case refusal != nil:
		e.fail(refusal, retry)
	default:
		e.Status = "executed"
	}
	held.Waiting--
	if held.Waiting == 0 {
		a.answerExecute(held)
	}
}

// entryIndex reads the entry index an execute's continuation carries in Aux (written by
// strconv.Itoa). Plain decimal digits without a leading zero are read directly; anything
// else goes through fmt.Sscan as it always did (which reads "010" as octal, for one).
func entryIndex(aux string) (int, bool) {
	if n, ok := plainIndex(aux); ok {
		return n, true
	}
	var idx int
	if _, err := fmt.Sscan(aux, &idx); err != nil {
		return 0, false
	}
	return idx, true
}

// plainIndex reads a short run of decimal digits without a leading zero (or "0").
func plainIndex(s string) (int, bool) {
	if s == "" || len(s) > 9 || (s[0] == '0' && s != "0") {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// executeWaitOver answers a POST /tx/execute whose ledger outcomes are not all known yet.
func (a *applier) executeWaitOver(seq uint64) {
	held, ok := a.d.Held[seq]
	if !ok || held.Kind != contExecute {
		return
	}
	for i := range held.Entries {
		if held.Entries[i].Status == "" {
			held.Entries[i].Status = "in-flight"
		}
	}
	a.answerExecute(held)
}

// answerExecute sends the answer of a POST /tx/execute.
func (a *applier) answerExecute(held *HeldReply) {
	delete(a.d.Held, held.Seq)
	if a.quiet && !a.idemWants(held.Seq) {
		return
	}
	var rep Reply
	if held.Batch {
		dto := ExecBatchDTO{Results: make([]ExecResultDTO, len(held.Entries))}
		for i, e := range held.Entries {
			dto.Results[i] = ExecResultDTO{ActionID: e.ActionID, Status: e.Status, Error: e.Error, Retryable: e.Retryable}
		}
		rep = Reply{Seq: held.Seq, Status: 200, Body: dto}
	} else {
		e := held.Entries[0]
		switch e.Status {
		case "executed":
			rep = Reply{Seq: held.Seq, Status: 200, Body: OKDTO{OK: true}}
		case "in-flight":
			err := unavailable(CodeRetryLater, "the ledger has not answered yet; the outcome will show in GET /tx/pending and the stream")
			rep = Reply{Seq: held.Seq, Status: err.Status, Err: err}
		default:
			rep = Reply{Seq: held.Seq, Status: e.HTTPError.Status, Err: e.HTTPError}
		}
	}
	if len(a.d.idemInFlight) > 0 {
		a.idemAnswered(rep.Seq, rep.Status, rep.Body, rep.Err)
	}
	if !a.quiet {
		a.out.Replies = append(a.out.Replies, rep)
	}
}

// ---- Flow hooks: what an action's outcome means to the flow it belongs to ----

// actionExecuted tells the action's flow that its transaction committed.
func (a *applier) actionExecuted(x *Action, res LedgerResult) {
	switch x.Flow {
	case FlowQuote:
		a.quoteAllocationLanded(x.FlowID, x.LegID, res.AllocationCID)
	case FlowTrade:
		a.tradeAllocationLanded(x.FlowID, x.LegID, res.AllocationCID)
	case FlowDeposit:
		a.depositAccepted(x)
	case FlowWithdraw:
		a.withdrawalSent(x)
	}
}

// actionLost tells the action's flow that the action left the queue without executing
// (expired, or its transaction can no longer run).
func (a *applier) actionLost(x *Action, category, why string) {
	switch x.Flow {
	case FlowQuote:
		a.quoteFundingLost(x.FlowID, category, why)
	case FlowTrade:
		a.tradeActionLost(x.FlowID, x.LegID, category, why)
	case FlowDeposit:
		a.depositActionGone(x)
	case FlowWithdraw:
		a.withdrawalActionGone(x)
	}
}

// lateExecution handles a transaction that committed after its action had left the queue
// (its flow died while the execute was with the ledger): whatever it locked is released.
func (a *applier) lateExecution(actionID string, res LedgerResult) {
	if res.AllocationCID != "" {
		a.cancelAllocation(res.AllocationCID, actionID+":late")
	}
}

// ---- Ledger results ----

// ledgerResult routes a ledger answer to the flow waiting for it. An answer nobody waits
// for (a duplicate after a restart) changes nothing.
func (a *applier) ledgerResult(res LedgerResult) {
	cont, ok := a.d.Pending[res.CommandID]
	if !ok {
		return
	}
	delete(a.d.Pending, res.CommandID)
	switch cont.Kind {
	case contOnboard:
		a.onboarded(cont, res)
	case contComplete:
		a.onboardingCompleted(cont, res)
	case contPreapproval:
		// Best effort by design: a failure shows only as funds not arriving.
	case contExecute, contExecuteAsk:
		a.executed(cont, res)
	default:
		a.flowResult(cont, res)
	}
	if spends(&cont.Call) {
		a.releaseDeferred(cont.Call.ActAs) // its inputs are reserved now (coinsel.go)
	}
}
