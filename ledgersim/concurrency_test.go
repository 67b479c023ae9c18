package ledgersim

import (
	"crypto/ed25519"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentExecutes runs ledger workers in parallel (meaningful under -race): each
// worker's party allocates and cancels, while readers query and digest.
func TestConcurrentExecutes(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	var parties []string
	for i := 0; i < 4; i++ {
		p := e.external(fmt.Sprintf("w%d", i))
		e.fund(p, "USDCx", "100")
		parties = append(parties, p)
	}
	e.l.cfg.Recorder = nil
	var wg sync.WaitGroup
	for w, p := range parties {
		wg.Add(1)
		go func(w int, p string, k ed25519.PrivateKey) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				a := Allocate{Settlement: SettlementRef{Executor: e.op, ID: "s"}, LegID: fmt.Sprintf("%d-%d", w, i), Side: SideSend,
					Instrument: "USDCx", Amount: d("1"), SettleBefore: t0.Add(time.Hour)}
				pr, err := e.prepare(p, a, fmt.Sprintf("w%d-%d", w, i))
				if err != nil {
					t.Error(err)
					return
				}
				u, err := e.l.Execute(pr.Blob, ed25519.Sign(k, pr.Hash[:]))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := e.submit(e.op, CancelAllocation{Allocation: u.Allocation}, fmt.Sprintf("c%d-%d", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}(w, p, e.keys[p])
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			_ = e.l.Digest()
			_ = e.l.Balances(parties[0])
		}
	}()
	wg.Wait()
	for _, p := range parties {
		e.wantFree(p, "USDCx", "100")
	}
	e.check()
}
