package ledgersim

import (
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"
)

// baseline times one Ed25519 verification of a 32-byte hash; the benchmarks call it
// once per verification they make, interleaved with the ledger's calls, so that the
// ratio compares work done under the same machine load.
type baseline struct {
	pub ed25519.PublicKey
	msg []byte
	sig []byte
	d   time.Duration
}

func newBaseline() *baseline {
	k := testKey("bench-verify")
	msg := make([]byte, 32)
	return &baseline{pub: k.Public().(ed25519.PublicKey), msg: msg, sig: ed25519.Sign(k, msg)}
}

func (bl *baseline) once(b *testing.B) {
	start := time.Now()
	ok := ed25519.Verify(bl.pub, bl.msg, bl.sig)
	bl.d += time.Since(start)
	if !ok {
		b.Fatal("verify")
	}
}

// BenchmarkVerifyOnly is the baseline: one Ed25519 verification of a 32-byte hash.
func BenchmarkVerifyOnly(b *testing.B) {
	k := testKey("bench-verify")
	pub := k.Public().(ed25519.PublicKey)
	msg := make([]byte, 32)
	sig := ed25519.Sign(k, msg)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("verify")
		}
	}
}

func benchLedger(b *testing.B) *env {
	e := newEnv(b, ProfileTestnet)
	e.l.cfg.Recorder = func(Input) {} // journal-ready: inputs are built and handed over
	e.l.cfg.Limits.MaxRetainedUpdates = 1 << 30
	e.l.cfg.Limits.MaxPrepared = 1 << 30
	return e
}

// BenchmarkPrepareExecuteAllocation prepares and executes one Send allocation of an
// external party, signature verification included. ns/op also contains the party's
// signing (client work); the ledger's calls are timed on their own as ledger-ns/op, and
// overhead-ratio = (ledger-ns − verify-ns) / verify-ns, verify-ns measured in the same run.
func BenchmarkPrepareExecuteAllocation(b *testing.B) {
	e := benchLedger(b)
	maker := e.external("maker")
	e.fund(maker, "USDCx", "1000000")
	k := e.keys[maker]
	ref := SettlementRef{Executor: e.op, ID: "bench"}
	sb := t0.Add(24 * time.Hour)
	cmds := make([]Allocate, b.N)
	ids := make([]string, b.N)
	for i := range cmds {
		cmds[i] = Allocate{Settlement: ref, LegID: fmt.Sprintf("leg-%d", i), Side: SideSend, Instrument: "USDCx", Amount: d("0.01"), SettleBefore: sb}
		ids[i] = fmt.Sprintf("alloc-%d", i)
	}
	bl := newBaseline()
	b.ReportAllocs()
	b.ResetTimer()
	var ledger time.Duration
	for i := 0; i < b.N; i++ {
		bl.once(b)
		start := time.Now()
		p, err := e.l.Prepare(maker, cmds[i], ids[i])
		if err != nil {
			b.Fatal(err)
		}
		ledger += time.Since(start)
		sig := ed25519.Sign(k, p.Hash[:])
		start = time.Now()
		if _, err := e.l.Execute(p.ID, sig); err != nil {
			b.Fatal(err)
		}
		ledger += time.Since(start)
	}
	b.StopTimer()
	perOp := float64(ledger.Nanoseconds()) / float64(b.N)
	base := float64(bl.d.Nanoseconds()) / float64(b.N)
	b.ReportMetric(base, "verify-ns")
	b.ReportMetric(perOp, "ledger-ns/op")
	b.ReportMetric((perOp-base)/base, "overhead-ratio")
}

// BenchmarkSettleTrade runs one SELL trade end to end: four external allocations
// (prepare + execute, four verifications), the fee party's allocation (Submit) and the
// atomic settlement (Submit). As above, ledger-ns/op times the ledger's calls only and
// overhead-ratio = (ledger-ns − 4 × verify-ns) / (4 × verify-ns).
func BenchmarkSettleTrade(b *testing.B) {
	e := benchLedger(b)
	maker, taker := e.external("maker"), e.external("taker")
	e.fund(maker, "USDCx", "1000000")
	e.fund(taker, "CBTC", "100")
	bl := newBaseline()
	b.ReportAllocs()
	b.ResetTimer()
	var ledger time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < 4; j++ {
			bl.once(b)
		}
		tr := sellTrade(e, fmt.Sprintf("t_%d", i), maker, taker, "CBTC", "USDCx", d("0.001"), d("1000.5"), 25)
		cids := make([]string, 0, 5)
		for j, a := range tr.allocs {
			id := fmt.Sprintf("t%d-a%d", i, j)
			var u Update
			var err error
			start := time.Now()
			if k, ext := e.keys[a.party]; ext {
				var p Prepared
				if p, err = e.l.Prepare(a.party, a.a, id); err != nil {
					b.Fatal(err)
				}
				ledger += time.Since(start)
				sig := ed25519.Sign(k, p.Hash[:])
				start = time.Now()
				u, err = e.l.Execute(p.ID, sig)
			} else {
				u, err = e.l.Submit(a.party, a.a, id)
			}
			ledger += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			cids = append(cids, u.Allocation)
		}
		start := time.Now()
		if _, err := e.l.Submit(e.op, Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: cids}, fmt.Sprintf("t%d-settle", i)); err != nil {
			b.Fatal(err)
		}
		ledger += time.Since(start)
	}
	b.StopTimer()
	perOp := float64(ledger.Nanoseconds()) / float64(b.N)
	base := float64(bl.d.Nanoseconds()) / float64(4*b.N)
	b.ReportMetric(base, "verify-ns")
	b.ReportMetric(perOp, "ledger-ns/op")
	b.ReportMetric((perOp-4*base)/(4*base), "overhead-ratio")
}

// BenchmarkDigest measures Digest, meant to be called after every input.
func BenchmarkDigest(b *testing.B) {
	e := benchLedger(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = e.l.Digest()
	}
}
