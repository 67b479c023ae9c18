package ledgersim

import (
	"crypto/ed25519"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLockedContracts: an execute naming an input that an execute in flight locked is
// rejected as contention, retryable, and runs once the first has ended: Canton's
// LOCAL_VERDICT_LOCKED_CONTRACTS (digital-asset/canton, community/base/src/main/scala/
// com/digitalasset/canton/protocol/LocalRejectError.scala,
// ConsistencyRejections.LockedContracts: category "contention", gRPC ABORTED, retryable)
// for an input in use by a transaction in flight, INACTIVE_CONTRACTS once it committed.
func TestLockedContracts(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	bob := e.external("bob")
	alice := e.external("alice")
	p1, p2, kb := twoOnOneHolding(t, e, bob, alice, "0.3")
	f1, err := e.l.BeginExecute(p1.Blob, ed25519.Sign(kb, p1.Hash[:]))
	wantCat(t, err, CategoryNone)
	before := e.l.Digest()
	_, err = e.l.BeginExecute(p2.Blob, ed25519.Sign(kb, p2.Hash[:]))
	wantCat(t, err, CategoryContention)
	if !Retryable(err) {
		t.Fatal("a locked input is contention: retryable")
	}
	_, err = e.l.Execute(p2.Blob, ed25519.Sign(kb, p2.Hash[:]))
	wantCat(t, err, CategoryContention)
	if e.l.Digest() != before || e.l.InFlight() != 1 {
		t.Fatal("a refused execute changed the ledger")
	}
	if _, err := f1.Commit(); err != nil {
		t.Fatal(err)
	}
	if e.l.InFlight() != 0 {
		t.Fatal("a committed execute is still in flight")
	}
	_, err = e.l.Execute(p2.Blob, ed25519.Sign(kb, p2.Hash[:]))
	wantCat(t, err, CategoryInactive)

	// Abandoned (the process that sent it is gone): nothing committed, the input free.
	p3, _ := e.prepare(bob, Transfer{Receiver: alice, Instrument: "CBTC", Amount: d("0.1")}, "x3")
	p4, _ := e.prepare(bob, Transfer{Receiver: alice, Instrument: "CBTC", Amount: d("0.1")}, "x4")
	f3, err := e.l.BeginExecute(p3.Blob, ed25519.Sign(kb, p3.Hash[:]))
	wantCat(t, err, CategoryNone)
	f3.Abandon()
	if _, err := f3.Commit(); err == nil {
		t.Fatal("an abandoned flight committed")
	}
	if _, err := e.l.Execute(p4.Blob, ed25519.Sign(kb, p4.Hash[:])); err != nil {
		t.Fatalf("after an abandoned flight: %v", err)
	}
	e.check()
}

// twoOnOneHolding funds from with a single holding of 1 CBTC and prepares the same
// transfer of amount to to twice (commands x1 and x2), both naming that holding; it
// returns them and from's key.
func twoOnOneHolding(t *testing.T, e *env, from, to, amount string) (Prepared, Prepared, ed25519.PrivateKey) {
	t.Helper()
	e.fund(from, "CBTC", "1")
	t1 := Transfer{Receiver: to, Instrument: "CBTC", Amount: d(amount)}
	p1, _ := e.prepare(from, t1, "x1")
	p2, _ := e.prepare(from, t1, "x2")
	if p1.Inputs[0] != p2.Inputs[0] {
		t.Fatal("expected the same input (only one holding)")
	}
	return p1, p2, e.keys[from]
}

// aliceAllocating is a testnet ledger with alice funded 100 USDCx, her key, and an
// Allocate of 10 of it (settlement "s", leg "a") for her to send.
func aliceAllocating(t *testing.T) (*env, string, ed25519.PrivateKey, Allocate) {
	t.Helper()
	e := newEnv(t, ProfileTestnet)
	alice := e.external("alice")
	e.fund(alice, "USDCx", "100")
	cmd := Allocate{Settlement: SettlementRef{Executor: e.op, ID: "s"}, LegID: "a", Side: SideSend, Instrument: "USDCx", Amount: d("10"), SettleBefore: t0.Add(time.Hour)}
	return e, alice, e.keys[alice], cmd
}

// TestSubmissionAlreadyInFlight: a second execute of the same command (the same prepared
// transaction, or another prepared under the same command id) while the first is in
// flight is refused SUBMISSION_ALREADY_IN_FLIGHT (digital-asset/canton,
// community/ledger/ledger-common/src/main/scala/com/digitalasset/canton/ledger/error/
// groups/ConsistencyErrors.scala, SubmissionAlreadyInFlight: ABORTED, retryable); once
// the first committed the repeat is a duplicate, whose outcome the completion stream tells.
func TestSubmissionAlreadyInFlight(t *testing.T) {
	e, alice, k, cmd := aliceAllocating(t)
	p, err := e.prepare(alice, cmd, "c1")
	wantCat(t, err, CategoryNone)
	sig := ed25519.Sign(k, p.Hash[:])
	f, err := e.l.BeginExecute(p.Blob, sig)
	wantCat(t, err, CategoryNone)
	_, err = e.l.BeginExecute(p.Blob, sig)
	wantCat(t, err, CategoryAlreadyInFlight)
	if !Retryable(err) {
		t.Fatal("a submission in flight is retryable")
	}
	u, err := f.Commit()
	wantCat(t, err, CategoryNone)
	_, err = e.l.Execute(p.Blob, sig)
	wantCat(t, err, CategoryDuplicate)
	cs, err := e.l.Completions(alice, 0, 10)
	if err != nil || len(cs) == 0 || cs[len(cs)-1].UpdateID != u.UpdateID || cs[len(cs)-1].SubmissionID != p.ID {
		t.Fatalf("completions %+v, %v; want the execute's last", cs, err)
	}
	e.check()
}

// TestSubmitMeetsAFlight: the desk's own submit (an internal party's, committed at once)
// naming a contract an external party's execute in flight locked is contention too.
func TestSubmitMeetsAFlight(t *testing.T) {
	e, alice, k, cmd := aliceAllocating(t)
	u := e.must(alice, cmd)
	p, err := e.prepare(alice, WithdrawAllocation{Allocation: u.Allocation}, "w1")
	wantCat(t, err, CategoryNone)
	f, err := e.l.BeginExecute(p.Blob, ed25519.Sign(k, p.Hash[:]))
	wantCat(t, err, CategoryNone)
	_, err = e.l.Submit(e.op, CancelAllocation{Allocation: u.Allocation}, "cancel")
	wantCat(t, err, CategoryContention)
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = e.l.Submit(e.op, CancelAllocation{Allocation: u.Allocation}, "cancel")
	wantCat(t, err, CategoryNotFound)
	e.check()
}

// TestSequencingDelay: with a sequencing delay the synchronous Execute holds its
// transaction in flight while Config.Sleep runs (outside the lock), so a concurrent
// execute of the same command meets it.
func TestSequencingDelay(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var armed atomic.Bool // the setup's own executes pass through
	e := newEnvTuned(t, ProfileTestnet, func(c *Config) {
		c.SequencingDelay = time.Second
		c.Sleep = func(time.Duration) {
			if armed.Load() {
				once.Do(func() {
					close(entered)
					<-release
				})
			}
		}
	})
	alice := e.external("alice")
	e.fund(alice, "USDCx", "100")
	k := e.keys[alice]
	cmd := Allocate{Settlement: SettlementRef{Executor: e.op, ID: "s"}, LegID: "a", Side: SideSend, Instrument: "USDCx", Amount: d("10"), SettleBefore: t0.Add(time.Hour)}
	p, _ := e.prepare(alice, cmd, "c1")
	sig := ed25519.Sign(k, p.Hash[:])
	armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := e.l.Execute(p.Blob, sig)
		done <- err
	}()
	<-entered
	_, err := e.l.Execute(p.Blob, sig)
	wantCat(t, err, CategoryAlreadyInFlight)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, err = e.l.Execute(p.Blob, sig)
	wantCat(t, err, CategoryDuplicate)
}
