package ledgersim

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestOnboarding(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	k := testKey("alice")
	pub := k.Public().(ed25519.PublicKey)
	ob, err := e.l.OnboardExternal("alice", pub)
	wantCat(t, err, CategoryNone)
	if ob.PartyID != PartyID("alice", pub) || !strings.HasPrefix(ob.PartyID, "alice::1220") || len(ob.PartyID) != len("alice::1220")+64 {
		t.Fatalf("party id %s", ob.PartyID)
	}
	if len(ob.Topology) != 3 {
		t.Fatalf("topology %d", len(ob.Topology))
	}
	for _, tx := range ob.Topology {
		if len(tx.Hash) != 34 || tx.Hash[0] != 0x12 || tx.Hash[1] != 0x20 || tx.Description == "" {
			t.Fatalf("topology hash %x", tx.Hash)
		}
	}
	again, err := e.l.OnboardExternal("alice", pub)
	wantCat(t, err, CategoryNone)
	if string(again.Topology[0].Hash) != string(ob.Topology[0].Hash) {
		t.Fatal("onboarding not idempotent while pending")
	}
	if _, err := e.l.Party(ob.PartyID); !errors.Is(err, ErrNotFound) {
		t.Fatal("party allocated before completion")
	}
	sign := func(key ed25519.PrivateKey) [][]byte {
		var s [][]byte
		for _, tx := range ob.Topology {
			s = append(s, ed25519.Sign(key, tx.Hash))
		}
		return s
	}
	wantCat(t, e.l.CompleteOnboarding(ob.PartyID, sign(k)[:2]), CategoryBadSignature)
	wantCat(t, e.l.CompleteOnboarding(ob.PartyID, sign(testKey("mallory"))), CategoryBadSignature)
	bad := sign(k)
	bad[1], bad[2] = bad[2], bad[1]
	wantCat(t, e.l.CompleteOnboarding(ob.PartyID, bad), CategoryBadSignature)
	wantCat(t, e.l.CompleteOnboarding("bob::1220", sign(k)), CategoryNotFound)
	wantCat(t, e.l.CompleteOnboarding(ob.PartyID, sign(k)), CategoryNone)
	p, err := e.l.Party(ob.PartyID)
	if err != nil || !p.External || !p.PublicKey.Equal(pub) || p.Hint != "alice" {
		t.Fatalf("party %+v %v", p, err)
	}
	wantCat(t, e.l.CompleteOnboarding(ob.PartyID, sign(k)), CategoryNone) // retry after a lost answer
	_, err = e.l.OnboardExternal("alice", pub)
	wantCat(t, err, CategoryAlreadyExists)
	_, err = e.l.OnboardExternal("bad hint!", pub)
	wantCat(t, err, CategoryInvalid)
	_, err = e.l.OnboardExternal("bob", pub[:10])
	wantCat(t, err, CategoryInvalid)

	// Expiry of a pending onboarding.
	kb := testKey("bob")
	obb, _ := e.l.OnboardExternal("bob", kb.Public().(ed25519.PublicKey))
	e.clk.Advance(31 * time.Minute)
	var sb [][]byte
	for _, tx := range obb.Topology {
		sb = append(sb, ed25519.Sign(kb, tx.Hash))
	}
	wantCat(t, e.l.CompleteOnboarding(obb.PartyID, sb), CategoryExpired)
	e.check()
}

func TestInternalParties(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	id, err := e.l.AllocateInternal("house-taker")
	wantCat(t, err, CategoryNone)
	id2, _ := e.l.AllocateInternal("house-taker")
	if id != id2 || !strings.HasPrefix(id, "house-taker::1220") {
		t.Fatalf("internal ids %s %s", id, id2)
	}
	// Same seed → same id in another ledger.
	other, _ := New(testConfig(ProfileTestnet, NewManualClock(t0)))
	id3, _ := other.AllocateInternal("house-taker")
	if id3 != id {
		t.Fatal("internal party id not deterministic")
	}
	_, err = e.l.AllocateInternal("")
	wantCat(t, err, CategoryInvalid)
	// Internal parties cannot Prepare; external ones cannot Submit.
	_, err = e.prepare(id, CreatePreapproval{}, "x")
	wantCat(t, err, CategoryInvalid)
	ext := e.external("ext")
	_, err = e.submit(ext, CreatePreapproval{}, "y")
	wantCat(t, err, CategoryForbidden)
	_, err = e.submit("ghost::1220", CreatePreapproval{}, "z")
	wantCat(t, err, CategoryNotFound)
}

func TestTransfers(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice, bob := e.external("alice"), e.external("bob")
	// Faucet: reservoir transfers land in the inbox.
	var tis []string
	for _, tr := range e.l.FaucetTransfers(alice, time.Time{}) {
		tis = append(tis, e.must(e.res, tr).TransferInstruction)
	}
	inbox := e.l.PendingTransfers(alice)
	if len(inbox) != 3 || inbox[0].CID != tis[0] || inbox[0].Symbol != "cc" || inbox[0].DisplaySymbol != "CC" {
		t.Fatalf("inbox %+v", inbox)
	}
	e.wantFree(alice, "Amulet", "0")
	_, err := e.run(bob, AcceptTransfer{Instruction: tis[0]}, "steal")
	wantCat(t, err, CategoryForbidden)
	u := e.must(alice, AcceptTransfer{Instruction: tis[0]})
	if len(u.Receipts) != 1 {
		t.Fatalf("accept receipts %v", u.Receipts)
	}
	e.wantFree(alice, "Amulet", "100")
	// Reject returns the funds to the reservoir.
	resBefore := e.free(e.res, "USDCx")
	e.must(alice, RejectTransfer{Instruction: tis[1]})
	if got := e.free(e.res, "USDCx"); !got.Equal(resBefore.Add(d("1000"))) {
		t.Fatalf("reject did not return funds: %s", got)
	}
	// Withdraw by the sender only.
	_, err = e.run(alice, WithdrawTransfer{Instruction: tis[2]}, "w")
	wantCat(t, err, CategoryForbidden)
	e.must(e.res, WithdrawTransfer{Instruction: tis[2]})
	_, err = e.run(alice, AcceptTransfer{Instruction: tis[2]}, "late")
	wantCat(t, err, CategoryNotFound)
	// Alice → Bob, locked until accepted.
	u = e.must(alice, Transfer{Receiver: bob, Instrument: "Amulet", Amount: d("30")})
	e.wantFree(alice, "Amulet", "70")
	if got := e.locked(alice, "Amulet"); !got.Equal(d("30")) {
		t.Fatalf("locked %s", got)
	}
	if out := e.l.OutgoingTransfers(alice); len(out) != 1 {
		t.Fatalf("outgoing %v", out)
	}
	e.must(bob, AcceptTransfer{Instruction: u.TransferInstruction})
	e.wantFree(bob, "Amulet", "30")
	// Errors.
	cases := []struct {
		name string
		tr   Transfer
		want Category
	}{
		{"self", Transfer{Receiver: alice, Instrument: "Amulet", Amount: d("1")}, CategoryInvalid},
		{"unknown receiver", Transfer{Receiver: "x::1220", Instrument: "Amulet", Amount: d("1")}, CategoryNotFound},
		{"unknown instrument", Transfer{Receiver: bob, Instrument: "X", Amount: d("1")}, CategoryNotFound},
		{"insufficient", Transfer{Receiver: bob, Instrument: "Amulet", Amount: d("71")}, CategoryInsufficientFunds},
		{"expired", Transfer{Receiver: bob, Instrument: "Amulet", Amount: d("1"), ExecuteBefore: t0}, CategoryExpired},
		{"native without preapproval", Transfer{Receiver: e.op, Instrument: "Amulet", Amount: d("1")}, CategoryPreapprovalRequired},
	}
	for _, tc := range cases {
		_, err := e.prepare(alice, tc.tr, "tr-"+tc.name)
		if CategoryOf(err) != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
	}
	// A non-native instrument needs no preapproval.
	e.fund(alice, "USDCx", "10")
	e.must(alice, Transfer{Receiver: e.op, Instrument: "USDCx", Amount: d("1")})
	e.check()
}

func TestTransferExpiryFreesFunds(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice, bob := e.external("alice"), e.external("bob")
	e.fund(alice, "USDCx", "50")
	u := e.must(alice, Transfer{Receiver: bob, Instrument: "USDCx", Amount: d("50"), ExecuteBefore: t0.Add(time.Minute)})
	e.wantFree(alice, "USDCx", "0")
	e.clk.Advance(2 * time.Minute)
	e.wantFree(alice, "USDCx", "50") // the lapsed lock counts as free
	if len(e.l.PendingTransfers(bob)) != 0 {
		t.Fatal("an expired transfer is still pending")
	}
	_, err := e.run(bob, AcceptTransfer{Instruction: u.TransferInstruction}, "late")
	wantCat(t, err, CategoryExpired)
	// The owner may spend the holding whose lock lapsed.
	e.must(alice, Allocate{Settlement: SettlementRef{Executor: e.op, ID: "s"}, LegID: "l", Side: SideSend, Instrument: "USDCx", Amount: d("50"), SettleBefore: e.clk.Now().Add(time.Hour)})
	// Rejecting the dead instruction releases nothing.
	ru := e.must(bob, RejectTransfer{Instruction: u.TransferInstruction})
	if len(ru.Released) != 0 {
		t.Fatalf("released %v", ru.Released)
	}
	e.check()
}

func TestProfiles(t *testing.T) {
	for _, tc := range []struct {
		p                             Profile
		faucet, withdraw, preapproval bool
	}{
		{ProfileTestnet, true, true, true},
		{ProfileSandbox, false, false, false},
		{ProfileMainnet, false, true, true},
	} {
		if tc.p.FaucetEnabled() != tc.faucet || tc.p.WithdrawEnabled() != tc.withdraw || tc.p.PreapprovalRequired() != tc.preapproval {
			t.Errorf("%s: wrong behaviour", tc.p)
		}
	}
	if p, err := ParseProfile(""); err != nil || p != ProfileTestnet {
		t.Fatal("default profile")
	}
	if _, err := ParseProfile("devnet"); err == nil {
		t.Fatal("unknown profile accepted")
	}

	// Sandbox: no faucet, no withdraw, preapproval is a no-op; internal transfers work.
	e := newEnv(t, ProfileSandbox)
	alice := e.external("alice")
	if e.l.HasPreapproval(alice) {
		t.Fatal("sandbox created a preapproval")
	}
	if len(e.l.FaucetTransfers(alice, time.Time{})) != 0 {
		t.Fatal("sandbox faucet")
	}
	_, err := e.submit(e.res, Transfer{Receiver: alice, Instrument: "USDCx", Amount: d("1")}, "f")
	wantCat(t, err, CategoryNotSupported)
	e.must(e.house, Transfer{Receiver: alice, Instrument: "Amulet", Amount: d("1")}.withInstrument("USDCx"))
	e.must(alice, AcceptTransfer{Instruction: e.l.PendingTransfers(alice)[0].CID})
	_, err = e.prepare(alice, Transfer{Receiver: e.house, Instrument: "USDCx", Amount: d("1")}, "w")
	wantCat(t, err, CategoryNotSupported)

	// Mainnet: no faucet, withdraw works.
	m := newEnv(t, ProfileMainnet)
	bob := m.external("bob")
	_, err = m.submit(m.res, Transfer{Receiver: bob, Instrument: "USDCx", Amount: d("1")}, "f")
	wantCat(t, err, CategoryNotSupported)
	m.must(m.house, Transfer{Receiver: bob, Instrument: "USDCx", Amount: d("5")})
	m.must(bob, AcceptTransfer{Instruction: m.l.PendingTransfers(bob)[0].CID})
	m.must(bob, Transfer{Receiver: m.house, Instrument: "USDCx", Amount: d("2")})
	if !m.l.HasPreapproval(bob) {
		t.Fatal("mainnet preapproval missing")
	}
	// Preapproval is idempotent.
	u := m.must(bob, CreatePreapproval{})
	if u.Preapproval == "" || len(u.Created) != 0 {
		t.Fatalf("second preapproval %+v", u)
	}
}

func (t Transfer) withInstrument(id string) Transfer { t.Instrument = id; return t }

func TestPreparedExecute(t *testing.T) {
	e, alice, k, cmd := aliceAllocating(t)
	p, err := e.prepare(alice, cmd, "c1")
	wantCat(t, err, CategoryNone)
	if p.Hash != HashPrepared("ledgersim", p) || !p.ExpiresAt.Equal(p.PreparedAt.Add(10*time.Minute)) || len(p.Inputs) != 1 {
		t.Fatalf("prepared %+v", p)
	}
	if got, err := e.l.PreparedTransaction(p.ID); err != nil || got.Hash != p.Hash {
		t.Fatal("PreparedTransaction lookup")
	}
	_, err = e.l.Execute(p.Blob, ed25519.Sign(testKey("mallory"), p.Hash[:]))
	wantCat(t, err, CategoryBadSignature)
	_, err = e.l.Execute(p.Blob, []byte("short"))
	wantCat(t, err, CategoryBadSignature)
	_, err = e.l.Execute([]byte("prep-nope"), ed25519.Sign(k, p.Hash[:]))
	wantCat(t, err, CategoryInvalid)
	u, err := e.l.Execute(p.Blob, ed25519.Sign(k, p.Hash[:]))
	wantCat(t, err, CategoryNone)
	// Dedup: the same prepared id is a duplicate of its command, naming the submission
	// the completion stream reports; a fresh prepare of the same command id is refused.
	_, err = e.l.Execute(p.Blob, ed25519.Sign(k, p.Hash[:]))
	wantCat(t, err, CategoryDuplicate)
	var dup *Error
	if !errors.As(err, &dup) || dup.SubmissionID == "" || dup.UpdateID != "" {
		t.Fatalf("a duplicate names the earlier submission, not its update: %#v", err)
	}
	cs, cerr := e.l.Completions(alice, u.Offset-1, 0)
	if cerr != nil || len(cs) == 0 || cs[0].CommandID != "c1" || cs[0].SubmissionID != dup.SubmissionID || cs[0].UpdateID != u.UpdateID {
		t.Fatalf("completions from before c1: %v %v", cs, cerr)
	}
	_, err = e.prepare(alice, cmd, "c1")
	wantCat(t, err, CategoryAlreadyExecuted)
	var le *Error
	if !errors.As(err, &le) || le.UpdateID != u.UpdateID {
		t.Fatalf("already executed carries no update id: %v", err)
	}
	if r, ok := e.l.CommandResult(alice, "c1"); !ok || r.UpdateID != u.UpdateID {
		t.Fatal("CommandResult")
	}
	e.wantFree(alice, "USDCx", "90")

	// Expiry.
	cmd.LegID = "b"
	p, _ = e.prepare(alice, cmd, "c2")
	e.clk.Advance(10 * time.Minute)
	_, err = e.l.Execute(p.Blob, ed25519.Sign(k, p.Hash[:]))
	wantCat(t, err, CategoryExpired)
	e.must(alice, CreatePreapproval{}) // a later input prunes it
	_, err = e.l.Execute(p.Blob, ed25519.Sign(k, p.Hash[:]))
	wantCat(t, err, CategoryExpired)

	// Inactive: two prepared transactions spending the same single holding; the second's
	// input was archived by the first. Canton answers it LOCAL_VERDICT_INACTIVE_CONTRACTS
	// (digital-asset/canton, community/base/src/main/scala/com/digitalasset/canton/
	// protocol/LocalRejectError.scala, ConsistencyRejections.InactiveContracts: category
	// "resource missing", gRPC NOT_FOUND, not retryable: the same transaction can never
	// commit), not LOCAL_VERDICT_LOCKED_CONTRACTS (an input in use by a transaction still
	// in flight: contention, ABORTED, retry), which only the fault plan makes here.
	bob := e.external("bob")
	p1, p2, kb := twoOnOneHolding(t, e, bob, alice, "0.6")
	_, err = e.l.Execute(p1.Blob, ed25519.Sign(kb, p1.Hash[:]))
	wantCat(t, err, CategoryNone)
	_, err = e.l.Execute(p2.Blob, ed25519.Sign(kb, p2.Hash[:]))
	wantCat(t, err, CategoryInactive)
	if Retryable(err) {
		t.Fatal("an archived input is not retryable: the prepared transaction can never commit")
	}
	// The failed command id may be retried.
	_, err = e.run(bob, Transfer{Receiver: alice, Instrument: "CBTC", Amount: d("0.4")}, "x2")
	wantCat(t, err, CategoryNone)
	e.check()
}

func TestDelist(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice := e.external("alice")
	e.fund(alice, "CBTC", "1")
	wantCat(t, e.l.Delist("CBTC"), CategoryNone)
	wantCat(t, e.l.Delist("CBTC"), CategoryNone)
	wantCat(t, e.l.Delist("nope"), CategoryNotFound)
	for _, in := range e.l.Instruments() {
		if in.ID == "CBTC" {
			t.Fatal("delisted instrument still listed")
		}
	}
	hs := e.l.Holdings(alice)
	var found bool
	for _, h := range hs {
		if h.Instrument == "CBTC" {
			found = true
			if h.Symbol != "CBTC" || h.DisplaySymbol != "CBTC" {
				t.Fatalf("delisted holding symbols %q %q", h.Symbol, h.DisplaySymbol)
			}
		}
	}
	if !found {
		t.Fatal("holding of delisted instrument vanished")
	}
	if in, err := e.l.Instrument("CBTC"); err != nil || in.Listed {
		t.Fatal("Instrument(delisted)")
	}
	e.check()
}

func TestQueriesAndErrors(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	if _, err := e.l.Contract("00ab"); !errors.Is(err, ErrNotFound) {
		t.Fatal("Contract unknown")
	}
	if _, err := e.l.Update("1220ab"); !errors.Is(err, ErrNotFound) {
		t.Fatal("Update unknown")
	}
	if _, err := e.l.Allocation("00ab"); !errors.Is(err, ErrNotFound) {
		t.Fatal("Allocation unknown")
	}
	if _, err := e.l.Supply("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatal("Supply unknown")
	}
	if s, _ := e.l.Supply("CBTC"); !s.Equal(d("102")) {
		t.Fatalf("supply %s", s)
	}
	hs := e.l.Holdings(e.res)
	if len(hs) != 3 || !strings.HasPrefix(hs[0].CID, "00") || len(hs[0].CID) != 66 {
		t.Fatalf("holdings %+v", hs)
	}
	c, err := e.l.Contract(hs[0].CID)
	if err != nil || c.Kind != ContractHolding || c.Holding.Owner != e.res {
		t.Fatal("Contract(holding)")
	}
	err = newErr(CategoryContention, "x", "y")
	if !errors.Is(err, ErrContention) || errors.Is(err, ErrExpired) || !Retryable(err) {
		t.Fatal("errors.Is")
	}
	if Retryable(ErrNotFound) || CategoryOf(errors.New("x")) != CategoryInternal || CategoryOf(nil) != CategoryNone {
		t.Fatal("CategoryOf")
	}
	if !strings.Contains(err.Error(), "contention") {
		t.Fatal(err.Error())
	}
	_, err = e.submit(e.op, nil, "nil")
	wantCat(t, err, CategoryInvalid)
	_, err = e.submit(e.op, CreatePreapproval{}, "")
	wantCat(t, err, CategoryInvalid)
	if _, err := New(Config{}); err == nil {
		t.Fatal("config without clock accepted")
	}
	bad := testConfig(ProfileTestnet, e.clk)
	bad.Parties[2].Funding[0].Instrument = "nope"
	if _, err := New(bad); err == nil {
		t.Fatal("funding of unknown instrument accepted")
	}
}

func TestFaults(t *testing.T) {
	var plan Fault
	var slept time.Duration
	e := newEnvTuned(t, ProfileTestnet, func(cfg *Config) {
		cfg.FaultPlan = FaultFunc(func(CallInfo) Fault { return plan })
		cfg.Sleep = func(d time.Duration) { slept += d }
	})
	l := e.l
	alice := e.external("alice")
	for _, c := range []Category{CategoryContention, CategoryUnavailable, CategoryRejected, CategoryInternal} {
		plan = Fault{Reject: c, Delay: time.Second}
		dg := l.Digest()
		_, err := e.submit(e.res, Transfer{Receiver: alice, Instrument: "USDCx", Amount: d("1")}, "f1")
		wantCat(t, err, c)
		if l.Digest() != dg {
			t.Fatal("a rejected call changed the state")
		}
	}
	if slept != 4*time.Second {
		t.Fatalf("slept %s", slept)
	}
	plan = Fault{LoseAnswer: true}
	_, err := e.submit(e.res, Transfer{Receiver: alice, Instrument: "USDCx", Amount: d("1")}, "f1")
	wantCat(t, err, CategoryUnknownOutcome)
	plan = Fault{}
	_, err = e.submit(e.res, Transfer{Receiver: alice, Instrument: "USDCx", Amount: d("1")}, "f1")
	wantCat(t, err, CategoryDuplicate)
	if len(l.PendingTransfers(alice)) != 1 {
		t.Fatal("a lost answer took effect twice")
	}

	// Seeded plans are deterministic.
	rates := FaultRates{Contention: 0.1, Unavailable: 0.1, Rejected: 0.05, Internal: 0.05, LoseAnswer: 0.2, Delay: 0.5, MaxDelay: time.Second}
	a, b := NewSeededFaults(7, rates), NewSeededFaults(7, rates)
	counts := map[Category]int{}
	for i := 0; i < 2000; i++ {
		fa, fb := a.Decide(CallInfo{}), b.Decide(CallInfo{})
		if fa != fb {
			t.Fatal("seeded faults differ")
		}
		counts[fa.Reject]++
		if fa.Delay < 0 || fa.Delay > time.Second+1 {
			t.Fatalf("delay %s", fa.Delay)
		}
	}
	for _, c := range []Category{CategoryNone, CategoryContention, CategoryUnavailable, CategoryRejected, CategoryInternal} {
		if counts[c] == 0 {
			t.Fatalf("category %s never drawn", c)
		}
	}
}

func TestCommandJSON(t *testing.T) {
	cmds := []Command{
		Allocate{Settlement: SettlementRef{"e", "s"}, LegID: "l", Side: SideSend, Instrument: "X", Amount: d("1.5"), SettleBefore: t0},
		CancelAllocation{"00a"}, WithdrawAllocation{"00b"},
		Settle{Settlement: SettlementRef{"e", "s"}, Legs: []Leg{{"a", "b", "X", d("2")}}, Allocations: []string{"00c"}},
		Transfer{Receiver: "r", Instrument: "X", Amount: d("3"), Reason: "why"},
		AcceptTransfer{"00d"}, RejectTransfer{"00e"}, WithdrawTransfer{"00f"}, CreatePreapproval{}, CreatePreapproval{Receiver: "r"},
	}
	for _, c := range cmds {
		b, err := MarshalCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		var env CommandEnvelope
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		back, err := env.Command()
		if err != nil {
			t.Fatal(err)
		}
		e1, e2 := encoder{}, encoder{}
		c.encode(&e1)
		back.encode(&e2)
		if string(e1.B) != string(e2.B) {
			t.Fatalf("%s does not round-trip: %s", c.Kind(), b)
		}
	}
	if _, err := (&CommandEnvelope{}).Command(); err == nil {
		t.Fatal("empty envelope accepted")
	}
	var s Side
	if err := s.UnmarshalText([]byte("sideways")); err == nil {
		t.Fatal("bad side accepted")
	}
}

// TestPreapprovalOnBehalf covers the desk's register/complete path: the operator (an
// internal party) creates the preapproval of a hosted party, external ones included, and
// the party then receives the native coin with nothing signed.
func TestPreapprovalOnBehalf(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice := e.onboard("alice")
	faucet := Transfer{Receiver: alice, Instrument: "Amulet", Amount: d("100")}
	_, err := e.submit(e.res, faucet, "faucet-early")
	wantCat(t, err, CategoryPreapprovalRequired)

	signed := len(e.inputs)
	u, err := e.submit(e.op, CreatePreapproval{Receiver: alice}, "pre-alice")
	wantCat(t, err, CategoryNone)
	if u.Preapproval == "" || len(u.Created) != 1 || u.Created[0] != u.Preapproval || u.ActAs != e.op {
		t.Fatalf("preapproval update %+v", u)
	}
	for _, in := range e.inputs[signed:] {
		if in.Kind == InputPrepare || in.Kind == InputExecute {
			t.Fatalf("the party was asked to sign: %+v", in)
		}
	}
	if !e.l.HasPreapproval(alice) {
		t.Fatal("no preapproval")
	}
	c, err := e.l.Contract(u.Preapproval)
	if err != nil || c.Preapproval == nil || c.Preapproval.Receiver != alice || c.Preapproval.Provider != e.op {
		t.Fatalf("preapproval contract %+v %v", c, err)
	}

	// The native coin now reaches alice: faucet draw, accepted by her signature.
	tu := e.must(e.res, faucet)
	e.must(alice, AcceptTransfer{Instruction: tu.TransferInstruction})
	e.wantFree(alice, "Amulet", "100")

	// Idempotent: by command id (a duplicate), by receiver (operator again, or the party
	// itself).
	_, err = e.submit(e.op, CreatePreapproval{Receiver: alice}, "pre-alice")
	wantCat(t, err, CategoryDuplicate)
	u3 := e.must(e.op, CreatePreapproval{Receiver: alice})
	if u3.Preapproval != u.Preapproval || len(u3.Created) != 0 {
		t.Fatalf("second preapproval %+v", u3)
	}
	u4 := e.must(alice, CreatePreapproval{})
	if u4.Preapproval != u.Preapproval || len(u4.Created) != 0 {
		t.Fatalf("self after operator %+v", u4)
	}
	bob := e.external("bob") // preapproved itself
	u5 := e.must(e.op, CreatePreapproval{Receiver: bob})
	if len(u5.Created) != 0 || u5.Preapproval == "" {
		t.Fatalf("operator after self %+v", u5)
	}
	// Receiver equal to the acting party is the party's own preapproval.
	carol := e.onboard("carol")
	u6 := e.must(carol, CreatePreapproval{Receiver: carol})
	if c, _ := e.l.Contract(u6.Preapproval); c.Preapproval == nil || c.Preapproval.Provider != carol {
		t.Fatalf("self preapproval %+v", c)
	}

	cases := []struct {
		name  string
		actAs string
		run   func(e *env, actAs string, cmd Command) error
		cmd   CreatePreapproval
		want  Category
	}{
		{"unknown receiver", e.op, submit, CreatePreapproval{Receiver: "ghost::1220ab"}, CategoryNotFound},
		{"external for another", alice, prepare, CreatePreapproval{Receiver: bob}, CategoryForbidden},
		{"external for unknown", alice, prepare, CreatePreapproval{Receiver: "ghost::1220ab"}, CategoryForbidden},
		{"house for external", e.house, submit, CreatePreapproval{Receiver: e.onboard("dave")}, CategoryNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantCat(t, tc.run(e, tc.actAs, tc.cmd), tc.want)
		})
	}
	e.check()
	replayAll(t, e)

	// Sandbox: the parties are checked, then nothing happens.
	s := newEnv(t, ProfileSandbox)
	erin := s.onboard("erin")
	u7 := s.must(s.op, CreatePreapproval{Receiver: erin})
	if u7.Preapproval != "" || len(u7.Created) != 0 || s.l.HasPreapproval(erin) {
		t.Fatalf("sandbox preapproval %+v", u7)
	}
	_, err = s.l.Submit(s.op, CreatePreapproval{Receiver: "ghost::1220ab"}, "ghost")
	wantCat(t, err, CategoryNotFound)
}

func submit(e *env, actAs string, cmd Command) error {
	_, err := e.submit(actAs, cmd, e.cmdID())
	return err
}

func prepare(e *env, actAs string, cmd Command) error {
	_, err := e.prepare(actAs, cmd, e.cmdID())
	return err
}

// replayAll replays the env's recorded inputs into a fresh ledger and compares digests.
func replayAll(t *testing.T, e *env) {
	t.Helper()
	if r := replayInputs(t, e, nil); r.Digest() != e.l.Digest() {
		t.Fatal("replayed digest differs")
	}
}

// replayInputs replays the env's recorded inputs into a fresh ledger of the same
// configuration (without recorder or faults), calling after (nil: nothing) after each,
// and returns the ledger.
func replayInputs(t *testing.T, e *env, after func(*Ledger)) *Ledger {
	t.Helper()
	cfg := e.l.Config()
	cfg.Recorder, cfg.FaultPlan = nil, nil
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range e.inputs {
		if err := r.Replay(in); err != nil {
			t.Fatalf("replay input %d: %v", i, err)
		}
		if after != nil {
			after(r)
		}
	}
	return r
}
