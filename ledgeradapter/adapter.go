// Package ledgeradapter connects the desk core to the embedded ledger simulator: it turns
// the machine's ledger calls (data with deterministic command ids) into ledgersim calls and
// their outcomes into the LedgerResult inputs the machine expects, and it builds the
// embedded ledger's genesis (the desk's internal parties, the catalog, the faucet reservoir)
// from the desk's catalog.
//
// The machine may not import ledgersim and ledgersim knows nothing of the desk; this
// package is the one place that knows both. A real participant would get an adapter of its
// own with the same three methods.
package ledgeradapter

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// Adapter executes machine ledger calls against an embedded ledger.
//
// Like a Canton client it learns what a repeated call did only from the ledger's
// completion stream: before a call's first attempt it records the ledger's end, and when
// an attempt is refused (a duplicate of a command that took effect, or any refusal of a
// call that may have taken effect before) it reads the party's completions from that
// offset for the call's submission (completion.go).
type Adapter struct {
	// L is the ledger; its queries may be used directly.
	L *ledgersim.Ledger
	// Retries is how many times a call that failed transiently (unavailable, internal,
	// unknown outcome) is sent again under the same command id before its failure is
	// reported; the ledger deduplicates, so a retry never takes effect twice.
	Retries int
	// Backoff is slept before retry n (1-based); nil means no pause (simulation).
	Backoff func(n int)

	sent  sentOffsets
	locks partyLocks
	// pages counts the completion pages read (CompletionPages).
	pages atomic.Int64
}

// Do runs one call to completion, with retries of transient failures. A command that
// already took effect answers with its first update whatever a repeated attempt met (a
// lost answer, then a refusal of the retry): a command id has one outcome, as the ledger's
// deduplication promises, and the desk must never fail a trade the ledger settled.
func (a *Adapter) Do(ctx context.Context, call machine.LedgerCall) machine.LedgerResult {
	var res machine.LedgerResult
	since, known := a.noteSince(call)
	for attempt := 0; ; attempt++ {
		var err error
		res, err = a.once(call)
		if err != nil {
			if u, ok := a.tookEffect(call, since, known, err); ok {
				res = machine.LedgerResult{CommandID: call.CommandID}
				fill(&res, u)
				res.Offset = a.L.Offset()
				return res
			}
		}
		if res.Failure == nil {
			res.Offset = a.L.Offset()
		}
		if res.Failure == nil || !transient(res.Failure.Category) || attempt >= a.Retries || ctx.Err() != nil {
			return res
		}
		if a.Backoff != nil {
			a.Backoff(attempt + 1)
		}
	}
}

// tookEffect finds the update of a submit or execute that committed in an earlier attempt.
//
// Only a refusal that can follow an earlier effect sends it to the completions: a
// duplicate, or a refusal that says nothing about the command (unavailable, internal,
// unknown outcome, contention, rejected); the ledger checks deduplication before the
// command, so any other refusal (insufficient funds, a bad signature, ...) means that no
// attempt took effect. The completions are read from the offset recorded before the
// call's first attempt (known): the one the desk journaled with the call
// (LedgerCall.Since), or else the one this adapter noted before the first attempt it
// saw; if that misses, from the ledger's pruning offset. A call with neither (an older
// desk's re-issue after a restart) is read from the pruning offset at once. A duplicate
// that names another submission (an earlier prepared transaction of the same command) is
// read from the pruning offset too.
func (a *Adapter) tookEffect(call machine.LedgerCall, since int64, known bool, err error) (ledgersim.Update, bool) {
	submission, ok := submissionOf(call)
	if !ok {
		return ledgersim.Update{}, false
	}
	earlier, dup := ledgersim.DuplicateOf(err)
	switch {
	case dup && earlier != "" && earlier != submission:
		submission, known = earlier, false
	case dup:
	case !mayFollowAnEffect(ledgersim.CategoryOf(err)):
		return ledgersim.Update{}, false
	}
	oldest := a.L.PruningOffset()
	if !known {
		since = oldest
	}
	if u, ok := a.completed(call.ActAs, submission, since); ok || since <= oldest {
		return u, ok
	}
	// The offset this adapter recorded is only where its own first attempt began: an
	// earlier one (sent before the desk restarted, while this adapter lived on, as in the
	// simulator) may have committed before it, or the ledger, recovered after a crash that
	// lost its unsynced tail, may have numbered the commit below it. Read the whole
	// retained window then.
	return a.completed(call.ActAs, submission, oldest)
}

// mayFollowAnEffect reports whether a refusal of this category may answer the repeat of
// a call that took effect before (an injected fault, or the ledger unable to say).
func mayFollowAnEffect(c ledgersim.Category) bool {
	switch c {
	case ledgersim.CategoryUnavailable, ledgersim.CategoryInternal, ledgersim.CategoryUnknownOutcome,
		ledgersim.CategoryContention, ledgersim.CategoryRejected:
		return true
	}
	return false
}

// transient reports failures that a retry of the same call may cure here. Contention
// (an input locked by a transaction in flight) is left to the machine, which decides
// between waiting and a fresh prepare.
func transient(category string) bool {
	switch category {
	case machine.LedgerUnavailable, machine.LedgerInternal, machine.LedgerUnknownOutcome:
		return true
	}
	return false
}

// once runs one attempt of a call; err is the ledger's refusal, as it said it.
func (a *Adapter) once(call machine.LedgerCall) (machine.LedgerResult, error) {
	res := machine.LedgerResult{CommandID: call.CommandID}
	fail := func(e error) (machine.LedgerResult, error) {
		res.Failure = failure(e)
		if sf, ok := ledgersim.ShortfallOf(e); ok {
			res.Failure.Message = a.shortfallText(sf)
		}
		return res, e
	}
	switch call.Op {
	case machine.OpOnboard:
		ob, err := a.L.OnboardExternal(call.Hint, ed25519.PublicKey(call.PublicKey))
		if err != nil {
			return fail(err)
		}
		res.PartyID = ob.PartyID
		for _, t := range ob.Topology {
			res.Topology = append(res.Topology, machine.TopologyTx{Hash: t.Hash, Description: t.Description})
		}
	case machine.OpCompleteOnboarding:
		if err := a.L.CompleteOnboarding(call.PartyID, call.Signatures); err != nil {
			return fail(err)
		}
	case machine.OpPrepare:
		cmd, err := command(call)
		if err != nil {
			return fail(err)
		}
		var p ledgersim.Prepared
		inputs, sf, err := a.spend(call, cmd, func(cmd ledgersim.Command) (err error) {
			p, err = a.L.Prepare(call.ActAs, cmd, call.CommandID)
			return err
		})
		if err != nil {
			return a.refused(res, err, inputs, sf)
		}
		if len(p.Blob) > machine.MaxPreparedBytes {
			// Beyond what the desk keeps per action: never handed to the machine.
			return fail(&ledgersim.Error{Category: ledgersim.CategoryRejected, Op: "prepare",
				Msg: fmt.Sprintf("prepared transaction of %d bytes, more than the desk keeps (%d)", len(p.Blob), machine.MaxPreparedBytes)})
		}
		res.PreparedID, res.Hash, res.ExpiresAt = p.ID, append([]byte(nil), p.Hash[:]...), p.ExpiresAt
		res.Prepared = p.Blob
		res.Inputs = inputs
	case machine.OpExecute:
		u, err := a.L.Execute(call.Prepared, call.Signature)
		if err != nil {
			return fail(err)
		}
		fill(&res, u)
	case machine.OpSubmit:
		cmd, err := command(call)
		if err != nil {
			return fail(err)
		}
		var u ledgersim.Update
		inputs, sf, err := a.spend(call, cmd, func(cmd ledgersim.Command) (err error) {
			u, err = a.L.Submit(call.ActAs, cmd, call.CommandID)
			return err
		})
		if err != nil {
			return a.refused(res, err, inputs, sf)
		}
		fill(&res, u)
		res.Inputs = inputs
	default:
		return fail(fmt.Errorf("unknown ledger operation %q", call.Op))
	}
	return res, nil
}

// fill copies an update's outcome into a result.
func fill(res *machine.LedgerResult, u ledgersim.Update) {
	res.UpdateID = u.UpdateID
	res.AllocationCID = u.Allocation
	res.InstructionCID = u.TransferInstruction
	res.Receipts = append([]string(nil), u.Receipts...)
}

// command translates the machine's command into ledgersim's.
func command(call machine.LedgerCall) (ledgersim.Command, error) {
	c := call.Command
	if c == nil {
		return nil, errors.New("ledger call without a command")
	}
	switch {
	case c.Allocate != nil:
		al := c.Allocate
		side := ledgersim.SideReceive
		if al.Send {
			side = ledgersim.SideSend
		}
		return ledgersim.Allocate{
			Settlement: ledgersim.SettlementRef{Executor: al.Executor, ID: al.SettlementID},
			LegID:      al.LegID, Side: side, Instrument: al.Instrument, Amount: al.Amount,
			AllocateBefore: al.AllocateBefore, SettleBefore: al.SettleBefore,
		}, nil
	case c.CancelAllocation != nil:
		return ledgersim.CancelAllocation{Allocation: c.CancelAllocation.AllocationCID}, nil
	case c.Settle != nil:
		s := c.Settle
		legs := make([]ledgersim.Leg, len(s.Legs))
		for i, l := range s.Legs {
			legs[i] = ledgersim.Leg{Sender: l.Sender, Receiver: l.Receiver, Instrument: l.Instrument, Amount: l.Amount}
		}
		return ledgersim.Settle{
			Settlement:  ledgersim.SettlementRef{Executor: s.Executor, ID: s.SettlementID},
			Legs:        legs,
			Allocations: append([]string(nil), s.Allocations...),
		}, nil
	case c.Transfer != nil:
		t := c.Transfer
		return ledgersim.Transfer{Receiver: t.Receiver, Instrument: t.Instrument, Amount: t.Amount}, nil
	case c.AcceptTransfer != nil:
		return ledgersim.AcceptTransfer{Instruction: c.AcceptTransfer.InstructionCID}, nil
	case c.CreatePreapproval != nil:
		// The desk's operator acts as provider for the receiver, a party it hosts.
		return ledgersim.CreatePreapproval{Receiver: c.CreatePreapproval.Receiver}, nil
	}
	return nil, errors.New("ledger command with no operation set")
}

// failure maps a ledgersim error to the machine's failure categories.
func failure(err error) *machine.LedgerFailure {
	cat := machine.LedgerInternal
	switch ledgersim.CategoryOf(err) {
	case ledgersim.CategoryContention:
		cat = machine.LedgerContention
	case ledgersim.CategoryInactive:
		cat = machine.LedgerInactive
	case ledgersim.CategoryAlreadyInFlight:
		// The same command is in flight (Canton's SUBMISSION_ALREADY_IN_FLIGHT): its
		// outcome is not known yet, and the call sent again learns it (a duplicate, read
		// from the completion stream).
		cat = machine.LedgerUnknownOutcome
	case ledgersim.CategoryDuplicate:
		// The command took effect, but its completion was not found (pruned since):
		// the machine keeps asking, as for an outcome it cannot know.
		cat = machine.LedgerUnknownOutcome
	case ledgersim.CategoryUnavailable:
		cat = machine.LedgerUnavailable
	case ledgersim.CategoryUnknownOutcome:
		cat = machine.LedgerUnknownOutcome
	case ledgersim.CategoryBadSignature:
		cat = machine.LedgerBadSignature
	case ledgersim.CategoryExpired:
		cat = machine.LedgerExpired
	case ledgersim.CategoryInsufficientFunds:
		cat = machine.LedgerInsufficientFunds
	case ledgersim.CategoryNotFound:
		cat = machine.LedgerNotFound
	case ledgersim.CategoryNotSupported:
		cat = machine.LedgerNotSupported
	case ledgersim.CategoryPreapprovalRequired:
		cat = machine.LedgerPreapprovalNeeded
	case ledgersim.CategoryForbidden:
		cat = machine.LedgerForbidden
	case ledgersim.CategoryRejected, ledgersim.CategoryInvalid, ledgersim.CategoryAlreadyExists,
		ledgersim.CategoryAlreadyExecuted, ledgersim.CategoryMismatch:
		cat = machine.LedgerRejected
	case ledgersim.CategoryInternal:
		cat = machine.LedgerInternal
	}
	return &machine.LedgerFailure{Category: cat, Message: err.Error()}
}

// Holdings reports a party's holdings, free or held by a live lock.
func (a *Adapter) Holdings(party string) []machine.LedgerHolding {
	now := a.L.Config().Clock.Now()
	hs := a.L.Holdings(party)
	out := make([]machine.LedgerHolding, 0, len(hs))
	for _, h := range hs {
		out = append(out, machine.LedgerHolding{Instrument: h.Instrument, Amount: h.Amount, Locked: !h.FreeAt(now)})
	}
	return out
}

// Incoming reports the transfer instructions waiting for a party's acceptance.
func (a *Adapter) Incoming(party string) []machine.LedgerTransfer {
	ts := a.L.PendingTransfers(party)
	out := make([]machine.LedgerTransfer, 0, len(ts))
	for _, t := range ts {
		out = append(out, machine.LedgerTransfer{CID: t.CID, Sender: t.Sender, Instrument: t.Instrument, Amount: t.Amount})
	}
	return out
}

// RealBackoff pauses 50 ms, 100 ms, 200 ms… between retries: for the real process.
func RealBackoff(n int) { time.Sleep(time.Duration(50<<min(n-1, 5)) * time.Millisecond) }
