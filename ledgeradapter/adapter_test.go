package ledgeradapter_test

import (
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

var catalog = []machine.Instrument{
	{Symbol: "cc", Display: "CC", Decimals: 10, USDPrice: money.MustParse("0.2"), FaucetAmount: money.MustParse("100"), Native: true, RegistryID: "cc-registry"},
	{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("10"), RegistryID: "usdcx-registry"},
}

// embedded is an embedded ledger on testnet with the test catalog, seed 1 and a manual
// clock at 2026-01-01.
func embedded(t *testing.T) (*ledgeradapter.Adapter, ledgeradapter.Parties) {
	t.Helper()
	return embeddedWith(t, ledgeradapter.Embedded{})
}

// embeddedWith is embedded with e's other settings (its network, seed, clock and catalog
// are embedded's).
func embeddedWith(t *testing.T, e ledgeradapter.Embedded) (*ledgeradapter.Adapter, ledgeradapter.Parties) {
	t.Helper()
	e.Network, e.Seed, e.Catalog = machine.Testnet, 1, catalog
	e.Clock = ledgersim.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, ps, err := ledgeradapter.NewEmbedded(e)
	if err != nil {
		t.Fatal(err)
	}
	return a, ps
}

func do(t *testing.T, a *ledgeradapter.Adapter, c machine.LedgerCall) machine.LedgerResult {
	t.Helper()
	return a.Do(context.Background(), c)
}

// onboard makes an external party through the adapter, as register/start and complete do.
func onboard(t *testing.T, a *ledgeradapter.Adapter, hint string) (string, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(nil)
	res := do(t, a, machine.LedgerCall{CommandID: hint + ":onboard", Op: machine.OpOnboard, Hint: hint, PublicKey: pub})
	if res.Failure != nil || res.PartyID == "" || len(res.Topology) == 0 {
		t.Fatalf("onboard: %+v", res)
	}
	sigs := make([][]byte, len(res.Topology))
	for i, tx := range res.Topology {
		sigs[i] = ed25519.Sign(priv, tx.Hash)
	}
	if r := do(t, a, machine.LedgerCall{CommandID: hint + ":complete", Op: machine.OpCompleteOnboarding, PartyID: res.PartyID, Signatures: sigs}); r.Failure != nil {
		t.Fatalf("complete: %+v", r.Failure)
	}
	return res.PartyID, priv
}

// TestNativeCoinNeedsTheDesksPreapproval: on testnet the native coin reaches an external
// party only after the desk's operator made its preapproval, which needs no party signature.
func TestNativeCoinNeedsTheDesksPreapproval(t *testing.T) {
	a, ps := embedded(t)
	party, priv := onboard(t, a, "maker")
	faucet := func(id string) machine.LedgerResult {
		return do(t, a, machine.LedgerCall{CommandID: id, Op: machine.OpSubmit, ActAs: ps.Reservoir,
			Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: party, Instrument: "cc-registry", Amount: money.MustParse("100")}}})
	}
	if res := faucet("faucet-1"); res.Failure == nil || res.Failure.Category != machine.LedgerPreapprovalNeeded {
		t.Fatalf("native coin without a preapproval: %+v", res)
	}
	if res := do(t, a, machine.LedgerCall{CommandID: "pre", Op: machine.OpSubmit, ActAs: ps.Operator,
		Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: party}}}); res.Failure != nil {
		t.Fatalf("preapproval: %+v", res.Failure)
	}
	res := faucet("faucet-2")
	if res.Failure != nil || res.InstructionCID == "" {
		t.Fatalf("faucet after preapproval: %+v", res)
	}
	in := a.Incoming(party)
	if len(in) != 1 || in[0].CID != res.InstructionCID || in[0].Amount.String() != "100" {
		t.Fatalf("inbox %+v", in)
	}
	// The party accepts with its own signature: prepare, sign the raw hash, execute.
	prep := do(t, a, machine.LedgerCall{CommandID: "accept", Op: machine.OpPrepare, ActAs: party,
		Command: &machine.Command{AcceptTransfer: &machine.AcceptTransferCmd{InstructionCID: res.InstructionCID}}})
	if prep.Failure != nil || len(prep.Hash) != 32 {
		t.Fatalf("prepare accept: %+v", prep)
	}
	bad := do(t, a, machine.LedgerCall{CommandID: "x1", Op: machine.OpExecute, PreparedID: prep.PreparedID, Prepared: prep.Prepared, Signature: make([]byte, 64)})
	if bad.Failure == nil || bad.Failure.Category != machine.LedgerBadSignature {
		t.Fatalf("a bad signature: %+v", bad)
	}
	if ok := do(t, a, machine.LedgerCall{CommandID: "x2", Op: machine.OpExecute, PreparedID: prep.PreparedID, Prepared: prep.Prepared, Signature: ed25519.Sign(priv, prep.Hash)}); ok.Failure != nil {
		t.Fatalf("execute: %+v", ok.Failure)
	}
	hs := a.Holdings(party)
	if len(hs) != 1 || hs[0].Amount.String() != "100" || hs[0].Locked {
		t.Fatalf("holdings %+v", hs)
	}
}

// TestFailureCategories: ledger refusals reach the machine in its own categories.
func TestFailureCategories(t *testing.T) {
	a, ps := embedded(t)
	cases := []struct {
		name string
		call machine.LedgerCall
		want string
	}{
		{"not a prepared transaction", machine.LedgerCall{CommandID: "e", Op: machine.OpExecute, PreparedID: "nope", Prepared: []byte("nope"), Signature: make([]byte, 64)}, machine.LedgerRejected},
		{"reservoir cannot cover", machine.LedgerCall{CommandID: "t", Op: machine.OpSubmit, ActAs: ps.FeeParty,
			Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.FeeParty, Receiver: ps.Operator, Instrument: "usdcx-registry", Amount: money.MustParse("1")}}}, machine.LedgerInsufficientFunds},
		{"no command", machine.LedgerCall{CommandID: "n", Op: machine.OpSubmit, ActAs: ps.Operator}, machine.LedgerInternal},
		{"unknown operation", machine.LedgerCall{CommandID: "u", Op: "teleport"}, machine.LedgerInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := do(t, a, c.call)
			if res.Failure == nil || res.Failure.Category != c.want {
				t.Fatalf("got %+v, want %s", res.Failure, c.want)
			}
		})
	}
}

// flaky fails the first n calls as unavailable.
type flaky struct{ n int }

func (f *flaky) Decide(ledgersim.CallInfo) ledgersim.Fault {
	if f.n > 0 {
		f.n--
		return ledgersim.Fault{Reject: ledgersim.CategoryUnavailable}
	}
	return ledgersim.Fault{}
}

// TestRetriesTransientFailures: an unavailable ledger is retried under the same command id.
func TestRetriesTransientFailures(t *testing.T) {
	for _, c := range []struct {
		failures, retries int
		ok                bool
	}{{2, 2, true}, {3, 2, false}, {1, 0, false}} {
		a, ps, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: machine.Testnet, Seed: 1,
			Clock: ledgersim.NewManualClock(time.Unix(0, 0)), Catalog: catalog, FaultPlan: &flaky{n: c.failures}})
		if err != nil {
			t.Fatal(err)
		}
		a.Retries = c.retries
		res := do(t, a, machine.LedgerCall{CommandID: "p", Op: machine.OpSubmit, ActAs: ps.Operator,
			Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: ps.FeeParty}}})
		if (res.Failure == nil) != c.ok {
			t.Errorf("%d failures, %d retries: %+v", c.failures, c.retries, res.Failure)
		}
		if !c.ok && res.Failure.Category != machine.LedgerUnavailable {
			t.Errorf("category %s", res.Failure.Category)
		}
	}
}

// switchable rejects every call while on.
type switchable struct{ on bool }

func (s *switchable) Decide(ledgersim.CallInfo) ledgersim.Fault {
	if s.on {
		return ledgersim.Fault{Reject: ledgersim.CategoryRejected}
	}
	return ledgersim.Fault{}
}

// TestARepeatedCommandAnswersItsFirstOutcome: a submit or an execute that committed answers
// with its first update when it is sent again and the ledger refuses the repeat (the
// simulator found a trade failed at the desk that the ledger had settled: the settle's
// answer was lost, and its re-issue after a restart was refused).
func TestARepeatedCommandAnswersItsFirstOutcome(t *testing.T) {
	faults := &switchable{}
	a, ps, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: machine.Testnet, Seed: 1,
		Clock: ledgersim.NewManualClock(time.Unix(0, 0)), Catalog: catalog, FaultPlan: faults})
	if err != nil {
		t.Fatal(err)
	}
	submit := machine.LedgerCall{CommandID: "pre", Op: machine.OpSubmit, ActAs: ps.Operator,
		Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: ps.FeeParty}}}
	first := do(t, a, submit)
	party, priv := onboard(t, a, "maker")
	faucet := do(t, a, machine.LedgerCall{CommandID: "pre2", Op: machine.OpSubmit, ActAs: ps.Operator,
		Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: party}}})
	tr, prep := dripped(t, a, ps, party)
	exec := signedExecute("x1", party, priv, prep)
	executed := do(t, a, exec)
	for _, r := range []machine.LedgerResult{first, faucet, tr, prep, executed} {
		if r.Failure != nil {
			t.Fatalf("setup: %+v", r.Failure)
		}
	}
	faults.on = true
	if again := do(t, a, submit); again.Failure != nil || again.UpdateID != first.UpdateID {
		t.Fatalf("repeated submit: %+v, want update %s", again, first.UpdateID)
	}
	exec.CommandID = "x2"
	if again := do(t, a, exec); again.Failure != nil || again.UpdateID != executed.UpdateID {
		t.Fatalf("repeated execute: %+v, want update %s", again, executed.UpdateID)
	}
	// A command that never took effect still gets its refusal.
	if fresh := do(t, a, machine.LedgerCall{CommandID: "new", Op: machine.OpSubmit, ActAs: ps.Operator,
		Command: &machine.Command{CreatePreapproval: &machine.CreatePreapprovalCmd{Receiver: ps.Operator}}}); fresh.Failure == nil {
		t.Fatal("a new command was not refused")
	}
}
