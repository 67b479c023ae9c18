package ledgersim

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"
)

// TestDeadlinesUseRecordTime: an allocation's deadlines are checked against the ledger's
// own clock when the transaction commits, never against a time the desk supplies or the
// time it was prepared at.
//
// Canton's sources it follows: the CIP-56 token standard, hyperledger-labs/splice,
// token-standard/splice-api-token-allocation-v1/daml/Splice/Api/Token/AllocationV1.daml
// (SettlementInfo: `allocateBefore` and `settleBefore` are exclusive bounds, checked by
// the registry's choices against the transaction's ledger time), and Canton's time model
// (docs "Time on Daml ledgers": the executing participant picks ledger time within the
// prepared transaction's bounds, and it must lie within a tolerance of the sequencer's
// record time). The ledger simulator has one clock for both, and a simulation skews it
// from the desk's.
func TestDeadlinesUseRecordTime(t *testing.T) {
	e, maker, a := allocating(t, "maker-quote", "40")
	a.AllocateBefore = t0.Add(time.Second)
	p, err := e.prepare(maker, a, "alloc-1")
	if err != nil {
		t.Fatalf("prepare before allocateBefore: %v", err)
	}
	// Record time reaches allocateBefore between prepare and execute: refused, and
	// allocateBefore is exclusive.
	e.clk.Set(t0.Add(time.Second))
	_, err = e.l.Execute(p.ID, ed25519.Sign(e.keys[maker], p.Hash[:]))
	wantCat(t, err, CategoryExpired)
	if !strings.Contains(err.Error(), "allocateBefore") {
		t.Fatalf("refused for another reason: %v", err)
	}
	e.wantFree(maker, "USDCx", "100")

	// One nanosecond earlier on the ledger's clock the same allocation commits.
	e2, maker2, a2 := allocating(t, "maker-quote", "40")
	a2.AllocateBefore = t0.Add(time.Second)
	p2, err := e2.prepare(maker2, a2, "alloc-1")
	if err != nil {
		t.Fatal(err)
	}
	e2.clk.Set(t0.Add(time.Second - time.Nanosecond))
	if _, err := e2.l.Execute(p2.ID, ed25519.Sign(e2.keys[maker2], p2.Hash[:])); err != nil {
		t.Fatalf("execute a nanosecond before allocateBefore: %v", err)
	}
	e2.wantFree(maker2, "USDCx", "60")

	// settleBefore likewise, with no allocateBefore.
	e3, maker3, a3 := allocating(t, "maker-quote", "40")
	a3.SettleBefore = t0.Add(time.Second)
	p3, err := e3.prepare(maker3, a3, "alloc-1")
	if err != nil {
		t.Fatal(err)
	}
	e3.clk.Set(t0.Add(time.Second))
	_, err = e3.l.Execute(p3.ID, ed25519.Sign(e3.keys[maker3], p3.Hash[:]))
	wantCat(t, err, CategoryExpired)
	if !strings.Contains(err.Error(), "settleBefore") {
		t.Fatalf("refused for another reason: %v", err)
	}
	e.check()
	e2.check()
	e3.check()
}
