package ledgeradapter_test

import (
	"fmt"
	"testing"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// TestDuplicateAnswersFromCompletions: with no fault at all, a repeated submit or execute
// is refused by the ledger as a duplicate, and the adapter answers it with the first
// update it finds in the completion stream, both in the process that sent it (from the
// offset it recorded) and in a fresh one, as after a restart (from the pruning offset).
func TestDuplicateAnswersFromCompletions(t *testing.T) {
	a, ps := embedded(t)
	party, priv := onboard(t, a, "maker")
	pre := machine.LedgerCall{CommandID: "pre", Op: machine.OpSubmit, ActAs: ps.Operator,
		Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: party}}}
	first := do(t, a, pre)
	drip, prep := dripped(t, a, ps, party)
	exec := signedExecute("x1", party, priv, prep)
	executed := do(t, a, exec)
	for _, r := range []machine.LedgerResult{first, drip, prep, executed} {
		if r.Failure != nil {
			t.Fatalf("setup: %+v", r.Failure)
		}
	}
	if _, err := a.L.Submit(ps.Operator, ledgersim.CreatePreapproval{Receiver: party}, "pre"); ledgersim.CategoryOf(err) != ledgersim.CategoryDuplicate {
		t.Fatalf("the ledger answers a repeat %v, want a duplicate", err)
	}
	restarted := &ledgeradapter.Adapter{L: a.L}
	for name, ad := range map[string]*ledgeradapter.Adapter{"same process": a, "after a restart": restarted} {
		if again := do(t, ad, pre); again.Failure != nil || again.UpdateID != first.UpdateID {
			t.Errorf("%s: repeated submit %+v, want update %s", name, again, first.UpdateID)
		}
		if again := do(t, ad, exec); again.Failure != nil || again.UpdateID != executed.UpdateID || again.CommandID != exec.CommandID {
			t.Errorf("%s: repeated execute %+v, want update %s", name, again, executed.UpdateID)
		}
	}
}

// TestCompletionsArePaged: the submission is found past the first page of the stream.
func TestCompletionsArePaged(t *testing.T) {
	a, ps := embedded(t)
	call := func(i int) machine.LedgerCall {
		return machine.LedgerCall{CommandID: fmt.Sprintf("t%d", i), Op: machine.OpSubmit, ActAs: ps.Reservoir,
			Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: ps.Operator, Instrument: "usdcx-registry", Amount: money.MustParse("0.01")}}}
	}
	n := ledgersim.MaxCompletionsPage + 5
	var last machine.LedgerResult
	for i := range n {
		if last = do(t, a, call(i)); last.Failure != nil {
			t.Fatalf("transfer %d: %+v", i, last.Failure)
		}
	}
	if again := do(t, &ledgeradapter.Adapter{L: a.L}, call(n-1)); again.Failure != nil || again.UpdateID != last.UpdateID {
		t.Fatalf("the last of %d transfers repeated after a restart: %+v, want update %s", n, again, last.UpdateID)
	}
}

// TestInactiveAndRefusalsNeedNoCompletions: an execute whose input another one spent is
// inactive (not contention), and a refusal that cannot follow an effect is answered as it
// is.
func TestInactiveAndRefusalsNeedNoCompletions(t *testing.T) {
	a, ps := embedded(t)
	party, priv := onboard(t, a, "maker")
	do(t, a, machine.LedgerCall{CommandID: "pre", Op: machine.OpSubmit, ActAs: ps.Operator,
		Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: party}}})
	_, prep := dripped(t, a, ps, party)
	if r := do(t, a, signedExecute("x", party, priv, prep)); r.Failure != nil {
		t.Fatal(r.Failure)
	}
	// Two transfers of the party's single holding, prepared before either runs.
	send := func(id, amount string) machine.LedgerResult {
		return do(t, a, machine.LedgerCall{CommandID: id, Op: machine.OpPrepare, ActAs: party,
			Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: party, Receiver: ps.Operator, Instrument: "usdcx-registry", Amount: money.MustParse(amount)}}})
	}
	p1, p2 := send("s1", "6"), send("s2", "6")
	if p1.Failure != nil || p2.Failure != nil {
		t.Fatalf("prepares: %+v %+v", p1.Failure, p2.Failure)
	}
	exec := func(p machine.LedgerResult, id string) machine.LedgerResult {
		return do(t, a, signedExecute(id, party, priv, p))
	}
	if r := exec(p1, "e1"); r.Failure != nil {
		t.Fatal(r.Failure)
	}
	if r := exec(p2, "e2"); r.Failure == nil || r.Failure.Category != machine.LedgerInactive {
		t.Fatalf("the second transfer of one holding: %+v, want %s", r.Failure, machine.LedgerInactive)
	}
	// A bad signature is answered as such, never mistaken for an earlier effect.
	p3 := send("s3", "1")
	if p3.Failure != nil {
		t.Fatal(p3.Failure)
	}
	if r := do(t, a, machine.LedgerCall{CommandID: "e3", Op: machine.OpExecute, ActAs: party, PreparedID: p3.PreparedID, Prepared: p3.Prepared, Signature: make([]byte, 64)}); r.Failure == nil || r.Failure.Category != machine.LedgerBadSignature {
		t.Fatalf("a bad signature: %+v", r.Failure)
	}
}

// TestRecordedOffsetIsOnlyAHint: the offset the adapter recorded at a call's first attempt
// may lie beyond the call's commit (a ledger recovered after a crash that lost its tail
// numbers its commits again from lower offsets): a repeat refused as a duplicate still
// finds its completion, from the pruning offset. The simulator met it (an allocation left
// live by a quote the desk had revoked).
func TestRecordedOffsetIsOnlyAHint(t *testing.T) {
	a, ps := embedded(t)
	b, _, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: machine.Testnet, Seed: 1,
		Clock: a.L.Config().Clock, Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	// Advance the first ledger, so that its end is well past where the second commits.
	for i := range 5 {
		do(t, a, machine.LedgerCall{CommandID: fmt.Sprintf("pad%d", i), Op: machine.OpSubmit, ActAs: ps.Reservoir,
			Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: ps.Operator, Instrument: "usdcx-registry", Amount: money.MustParse("0.01")}}})
	}
	call := machine.LedgerCall{CommandID: "pre", Op: machine.OpSubmit, ActAs: ps.Operator,
		Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: ps.FeeParty}}}
	// The first attempt the adapter sees is refused with no effect (a receiver the ledger
	// does not know): it records the first ledger's end for the call.
	if r := do(t, a, machine.LedgerCall{CommandID: "pre", Op: machine.OpSubmit, ActAs: ps.Operator,
		Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: "nobody::1220aa"}}}); r.Failure == nil {
		t.Fatal("the first attempt took effect")
	}
	a.L = b.L                                                                                    // the adapter lives on over a ledger whose offsets start lower
	u, err := b.L.Submit(ps.Operator, ledgersim.CreatePreapproval{Receiver: ps.FeeParty}, "pre") // an earlier process's attempt lands
	if err != nil {
		t.Fatal(err)
	}
	if again := do(t, a, call); again.Failure != nil || again.UpdateID != u.UpdateID {
		t.Fatalf("the repeat: %+v, want update %s (at offset %d)", again, u.UpdateID, u.Offset)
	}
}

// TestRestartBetweenSubmitAndAnswer: the desk sent a submit, the ledger committed it, and
// the process died before the answer (a crash, or an adapter that never answered). After
// the restart the desk issues the call again with the offset it journaled before the first
// attempt (LedgerCall.Since); the ledger refuses the repeat as a duplicate, and a fresh
// adapter finds the outcome in the completion stream read from that offset: one page,
// where reading from the pruning offset (the call without it, as before the desk journaled
// it) pages through every completion of the retained window. Canton's pattern: the
// completion stream from a recorded ledger end (ledger-api CommandCompletionService,
// CompletionStreamRequest.begin_exclusive).
func TestRestartBetweenSubmitAndAnswer(t *testing.T) {
	a, ps := embedded(t)
	transfer := func(id string) machine.LedgerCall {
		return machine.LedgerCall{CommandID: id, Op: machine.OpSubmit, ActAs: ps.Reservoir,
			Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: ps.Operator, Instrument: "usdcx-registry", Amount: money.MustParse("0.01")}}}
	}
	var last machine.LedgerResult
	for i := range 2*ledgersim.MaxCompletionsPage + 10 {
		if last = do(t, a, transfer(fmt.Sprintf("t%d", i))); last.Failure != nil {
			t.Fatalf("transfer %d: %+v", i, last.Failure)
		}
	}
	if last.Offset != a.L.Offset() || last.Offset == 0 {
		t.Fatalf("a result reports offset %d, the ledger's end is %d", last.Offset, a.L.Offset())
	}
	// The desk records the ledger end it knows with the call, then the process sends it
	// and dies before the answer.
	call := transfer("lost")
	call.Since = last.Offset
	largest := a.L.FreeHoldings(ps.Reservoir, "usdcx-registry")[0].CID // as the adapter would name it
	first, err := a.L.Submit(ps.Reservoir, ledgersim.Transfer{Receiver: ps.Operator, Instrument: "usdcx-registry", Amount: money.MustParse("0.01"),
		Inputs: []string{largest}}, "lost")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		since int64
		pages int64
	}{
		{"with the journaled offset", call.Since, 1},
		{"without it", 0, 3},
	} {
		restarted := &ledgeradapter.Adapter{L: a.L}
		c := call
		c.Since = tc.since
		got := do(t, restarted, c)
		if got.Failure != nil || got.UpdateID != first.UpdateID || got.InstructionCID != first.TransferInstruction {
			t.Fatalf("%s: the re-issued submit answered %+v, want update %s", tc.name, got, first.UpdateID)
		}
		if n := restarted.CompletionPages(); n != tc.pages {
			t.Errorf("%s: %d completion pages read, want %d", tc.name, n, tc.pages)
		}
	}
}
