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
	allocateBefore := func(a *Allocate) { a.AllocateBefore = t0.Add(time.Second) }
	// Record time reaches allocateBefore between prepare and execute: refused, and
	// allocateBefore is exclusive.
	e, maker, err := executedAt(t, allocateBefore, t0.Add(time.Second))
	wantCat(t, err, CategoryExpired)
	if !strings.Contains(err.Error(), "allocateBefore") {
		t.Fatalf("refused for another reason: %v", err)
	}
	e.wantFree(maker, "USDCx", "100")

	// One nanosecond earlier on the ledger's clock the same allocation commits.
	e2, maker2, err := executedAt(t, allocateBefore, t0.Add(time.Second-time.Nanosecond))
	if err != nil {
		t.Fatalf("execute a nanosecond before allocateBefore: %v", err)
	}
	e2.wantFree(maker2, "USDCx", "60")

	// settleBefore likewise, with no allocateBefore.
	e3, _, err := executedAt(t, func(a *Allocate) { a.SettleBefore = t0.Add(time.Second) }, t0.Add(time.Second))
	wantCat(t, err, CategoryExpired)
	if !strings.Contains(err.Error(), "settleBefore") {
		t.Fatalf("refused for another reason: %v", err)
	}
	e.check()
	e2.check()
	e3.check()
}

// executedAt prepares a maker's allocation of 40 USDCx with the deadline deadline sets,
// then executes it with the ledger's clock at at; it returns the ledger, the maker and
// the execute's error.
func executedAt(t *testing.T, deadline func(*Allocate), at time.Time) (*env, string, error) {
	t.Helper()
	e, maker, a := allocating(t, "maker-quote", "40")
	deadline(&a)
	p, err := e.prepare(maker, a, "alloc-1")
	if err != nil {
		t.Fatalf("prepare before the deadline: %v", err)
	}
	e.clk.Set(at)
	_, err = e.l.Execute(p.Blob, ed25519.Sign(e.keys[maker], p.Hash[:]))
	return e, maker, err
}
