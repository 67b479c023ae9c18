package ledgeradapter_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// TestExecutesInFlight: on a ledger with a sequencing delay an execute is begun and
// finished later; meanwhile an execute naming its locked input is answered contention
// (the machine's LedgerContention: the flow prepares afresh), and the same execute sent
// again is answered as an unknown outcome, not a failure, whose repeat after the commit
// learns the update from the completion stream.
func TestExecutesInFlight(t *testing.T) {
	a, ps := embeddedWith(t, ledgeradapter.Embedded{SequencingDelay: time.Second})
	ctx := context.Background()
	party, priv := onboard(t, a, "maker")
	drip := do(t, a, machine.LedgerCall{CommandID: "drip", Op: machine.OpSubmit, ActAs: ps.Reservoir,
		Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: party, Instrument: "usdcx-registry", Amount: money.MustParse("100")}}})
	acc := do(t, a, machine.LedgerCall{CommandID: "accept", Op: machine.OpPrepare, ActAs: party,
		Command: &machine.Command{AcceptTransfer: &machine.AcceptTransferCmd{InstructionCID: drip.InstructionCID}}})
	if f, res := a.Begin(ctx, machine.LedgerCall{CommandID: "x0", Op: machine.OpExecute, ActAs: party, PreparedID: acc.PreparedID, Prepared: acc.Prepared, Signature: ed25519.Sign(priv, acc.Hash)}); f == nil {
		t.Fatalf("accept: %+v", res.Failure)
	} else if r := f.Finish(); r.Failure != nil {
		t.Fatalf("accept: %+v", r.Failure)
	}
	alloc := func(id, leg string) machine.LedgerResult {
		return do(t, a, machine.LedgerCall{CommandID: id, Op: machine.OpPrepare, ActAs: party, Command: &machine.Command{Allocate: &machine.AllocateCmd{
			Executor: ps.Operator, SettlementID: "s", LegID: leg, Owner: party, Send: true, Instrument: "usdcx-registry",
			Amount: money.MustParse("10"), SettleBefore: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}}})
	}
	p1, p2 := alloc("a1", "l1"), alloc("a2", "l2")
	exec := func(id string, p machine.LedgerResult) machine.LedgerCall {
		return machine.LedgerCall{CommandID: id, Op: machine.OpExecute, ActAs: party, PreparedID: p.PreparedID, Prepared: p.Prepared, Signature: ed25519.Sign(priv, p.Hash)}
	}
	f1, res := a.Begin(ctx, exec("x1", p1))
	if f1 == nil {
		t.Fatalf("first execute: %+v", res.Failure)
	}
	if f, res := a.Begin(ctx, exec("x2", p2)); f != nil || res.Failure == nil || res.Failure.Category != machine.LedgerContention {
		t.Fatalf("an execute naming a locked input: %+v, want contention", res.Failure)
	}
	if f, res := a.Begin(ctx, exec("x1b", p1)); f != nil || res.Failure == nil || res.Failure.Category != machine.LedgerUnknownOutcome {
		t.Fatalf("the same execute in flight: %+v, want unknown-outcome", res.Failure)
	}
	done := f1.Finish()
	if done.Failure != nil || done.AllocationCID == "" {
		t.Fatalf("commit: %+v", done.Failure)
	}
	if f, again := a.Begin(ctx, exec("x1c", p1)); f != nil || again.Failure != nil || again.UpdateID != done.UpdateID {
		t.Fatalf("the repeat after the commit: %+v, want update %s", again, done.UpdateID)
	}
}

// TestOversizedPreparedRefused: a prepared transaction larger than the desk keeps per
// action (machine.MaxPreparedBytes: here an allocation spending 80 small holdings, each
// carried in the blob as a full contract instance) is answered as a rejected prepare, so
// the machine never holds it.
func TestOversizedPreparedRefused(t *testing.T) {
	a, ps := embedded(t)
	party, priv := onboard(t, a, "maker")
	for i := range 80 {
		drip := do(t, a, machine.LedgerCall{CommandID: fmt.Sprintf("drip%d", i), Op: machine.OpSubmit, ActAs: ps.Reservoir,
			Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: party, Instrument: "usdcx-registry", Amount: money.MustParse("1")}}})
		acc := do(t, a, machine.LedgerCall{CommandID: fmt.Sprintf("accept%d", i), Op: machine.OpPrepare, ActAs: party,
			Command: &machine.Command{AcceptTransfer: &machine.AcceptTransferCmd{InstructionCID: drip.InstructionCID}}})
		if r := do(t, a, machine.LedgerCall{CommandID: fmt.Sprintf("x%d", i), Op: machine.OpExecute, ActAs: party, PreparedID: acc.PreparedID,
			Prepared: acc.Prepared, Signature: ed25519.Sign(priv, acc.Hash)}); r.Failure != nil {
			t.Fatalf("deposit %d: %+v", i, r.Failure)
		}
	}
	alloc := func(amount string) machine.LedgerResult {
		return do(t, a, machine.LedgerCall{CommandID: "big-" + amount, Op: machine.OpPrepare, ActAs: party, Command: &machine.Command{Allocate: &machine.AllocateCmd{
			Executor: ps.Operator, SettlementID: "s", LegID: "l-" + amount, Owner: party, Send: true, Instrument: "usdcx-registry",
			Amount: money.MustParse(amount), SettleBefore: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}}})
	}
	if small := alloc("2"); small.Failure != nil || len(small.Prepared) == 0 || len(small.Prepared) > machine.MaxPreparedBytes {
		t.Fatalf("a two-holding allocation: %d bytes, %+v", len(small.Prepared), small.Failure)
	}
	big := alloc("80")
	if big.Failure == nil || big.Failure.Category != machine.LedgerRejected || big.Prepared != nil {
		t.Fatalf("an allocation of 80 holdings: %d bytes, %+v; want rejected", len(big.Prepared), big.Failure)
	}
}
