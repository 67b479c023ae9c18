package ledgersim

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

// The input holdings of a transfer or an allocation are named by the submitter, as
// the CIP-56 token standard's factories take them: TransferFactory_Transfer and
// AllocationFactory_Allocate carry `inputHoldingCids` (hyperledger-labs/splice,
// token-standard/splice-api-token-transfer-instruction-v1 and
// splice-api-token-allocation-instruction-v1, Daml sources), and Amulet's
// implementation (splice-amulet, Splice/ExternalPartyAmuletRules.daml,
// AmuletRules.daml `transferPreprocessing`) fetches each, checks its owner, and
// archives it in the transaction. The participant reserves nothing at prepare
// (canton, InteractiveSubmissionService: prepare only interprets); a second
// transaction spending an input that one committed since meets INACTIVE_CONTRACTS
// (canton, ConsistencyErrors.InactiveContracts).

// TestNamedInputsValidated: prepare and submit check the named inputs, each refusal in
// its category, and change nothing.
func TestNamedInputsValidated(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice := e.external("alice")
	bob := e.external("bob")
	e.fund(alice, "USDCx", "30")
	e.fund(alice, "USDCx", "20")
	e.fund(alice, "CBTC", "0.5")
	e.fund(bob, "USDCx", "5")
	usdc := cidsOf2(e.l.FreeHoldings(alice, "USDCx"))
	cbtc := cidsOf2(e.l.FreeHoldings(alice, "CBTC"))
	bobs := cidsOf2(e.l.FreeHoldings(bob, "USDCx"))
	if len(usdc) != 2 || len(cbtc) != 1 || len(bobs) != 1 {
		t.Fatalf("free holdings %v %v %v", usdc, cbtc, bobs)
	}
	ref := SettlementRef{Executor: e.op, ID: "s"}
	alloc := func(amount string, in ...string) Allocate {
		return Allocate{Settlement: ref, LegID: "l", Side: SideSend, Instrument: "USDCx", Amount: d(amount), SettleBefore: t0.Add(time.Hour), Inputs: in}
	}
	cases := []struct {
		name string
		cmd  Command
		want Category
		msg  string
	}{
		{"none named", alloc("1"), CategoryInvalid, "no input holdings named"},
		{"empty list", alloc("1", []string{}...), CategoryInvalid, "no input holdings named"},
		{"unknown", alloc("1", "00"+strings.Repeat("ab", 32)), CategoryNotFound, "no live holding"},
		{"named twice", alloc("40", usdc[0], usdc[0]), CategoryInvalid, "named twice"},
		{"another owner's", alloc("1", bobs[0]), CategoryInvalid, "is not"},
		{"another instrument", alloc("0.1", cbtc[0]), CategoryInvalid, "not USDCx"},
		{"short", alloc("31", usdc[0]), CategoryInsufficientFunds, "30 USDCx, 31 needed"},
		{"short of both", alloc("50.0000000001", usdc...), CategoryInsufficientFunds, "50 USDCx"},
		{"receive names inputs", Allocate{Settlement: ref, LegID: "r", Side: SideReceive, Instrument: "USDCx", Amount: d("1"), SettleBefore: t0.Add(time.Hour), Inputs: usdc[:1]}, CategoryInvalid, "receive allocation"},
		{"transfer short", Transfer{Receiver: bob, Instrument: "USDCx", Amount: d("21"), Inputs: usdc[1:]}, CategoryInsufficientFunds, "needed"},
	}
	for _, tc := range cases {
		dg := e.l.Digest()
		_, err := e.l.Prepare(alice, tc.cmd, "c-"+tc.name)
		if CategoryOf(err) != tc.want || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want %s (%q)", tc.name, err, tc.want, tc.msg)
		}
		if e.l.Digest() != dg {
			t.Errorf("%s: a refused prepare changed the state", tc.name)
		}
	}
	// A locked holding: lock the 20 in a live allocation, then name it.
	lock := alloc("20", usdc[1])
	lock.LegID = "lock"
	e.must(alice, lock)
	locked := e.l.Allocations(alice)[0].Locked
	_, err := e.l.Prepare(alice, alloc("1", locked), "c-locked")
	wantCat(t, err, CategoryInvalid)
	// Over the input limit.
	e2 := newEnvTuned(t, ProfileTestnet, func(c *Config) { c.Limits.MaxInputs = 1 })
	carol := e2.external("carol")
	e2.fund(carol, "USDCx", "1")
	e2.fund(carol, "USDCx", "1")
	two := cidsOf2(e2.l.FreeHoldings(carol, "USDCx"))
	_, err = e2.l.Prepare(carol, Transfer{Receiver: e2.house, Instrument: "USDCx", Amount: d("2"), Inputs: two}, "c-limit")
	wantCat(t, err, CategoryInsufficientFunds)
	if sf, ok := ShortfallOf(err); !ok || sf.MaxInputs != 1 {
		t.Fatalf("limit shortfall %+v %v", sf, ok)
	}
	e.check()
}

// TestNoSteering: the ledger reserves nothing at prepare: two prepared transactions
// may name one holding (the ledger no longer steers the second to another), the first
// to execute spends it, and the second meets ErrInactive at execute.
func TestNoSteering(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	m := e.external("maker")
	e.fund(m, "USDCx", "100")
	e.fund(m, "USDCx", "100")
	free := cidsOf2(e.l.FreeHoldings(m, "USDCx"))
	ref := SettlementRef{Executor: e.op, ID: "s"}
	a := func(leg string) Allocate {
		return Allocate{Settlement: ref, LegID: leg, Side: SideSend, Instrument: "USDCx", Amount: d("50"), SettleBefore: t0.Add(time.Hour), Inputs: free[:1]}
	}
	p1, err := e.l.Prepare(m, a("q1"), "q1")
	wantCat(t, err, CategoryNone)
	p2, err := e.l.Prepare(m, a("q2"), "q2")
	wantCat(t, err, CategoryNone)
	if len(p1.Inputs) != 1 || p1.Inputs[0] != free[0] || len(p2.Inputs) != 1 || p2.Inputs[0] != free[0] {
		t.Fatalf("inputs %v %v, both want %s", p1.Inputs, p2.Inputs, free[0])
	}
	if got := len(e.l.FreeHoldings(m, "USDCx")); got != 2 {
		t.Fatalf("a prepare reserved a holding: %d free", got)
	}
	k := e.keys[m]
	if _, err := e.l.Execute(p2.Blob, ed25519.Sign(k, p2.Hash[:])); err != nil {
		t.Fatal(err)
	}
	_, err = e.l.Execute(p1.Blob, ed25519.Sign(k, p1.Hash[:]))
	wantCat(t, err, CategoryInactive)
	// The spent input is not found by a new prepare, the other still is.
	_, err = e.l.Prepare(m, a("q3"), "q3")
	wantCat(t, err, CategoryNotFound)
	b := a("q4")
	b.Inputs = free[1:]
	_, err = e.l.Prepare(m, b, "q4")
	wantCat(t, err, CategoryNone)
	e.check()
}

// TestNamedInputsInRecords: an Allocate's and a Transfer's named inputs survive the
// journal record (binary and JSON) and a snapshot of a live prepared transaction.
func TestNamedInputsInRecords(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	m := e.external("maker")
	e.fund(m, "USDCx", "100")
	free := cidsOf2(e.l.FreeHoldings(m, "USDCx"))
	p, err := e.l.Prepare(m, Transfer{Receiver: e.house, Instrument: "USDCx", Amount: d("1"), Inputs: free}, "tr")
	wantCat(t, err, CategoryNone)
	last := e.inputs[len(e.inputs)-1]
	b, err := last.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeInput(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Command.Transfer.Inputs; len(got) != 1 || got[0] != free[0] {
		t.Fatalf("binary record inputs %v, want %v", got, free)
	}
	snap, err := e.l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	l2, err := Restore(e.l.Config(), snap)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l2.PreparedTransaction(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tr, ok := got.Command.(Transfer); !ok || len(tr.Inputs) != 1 || tr.Inputs[0] != free[0] {
		t.Fatalf("restored command %+v", got.Command)
	}
}

func cidsOf2(hs []FreeHolding) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.CID
	}
	return out
}
