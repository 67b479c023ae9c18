package ledgersim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/cputime"
)

// meter accumulates the wall time and the process CPU time of measured segments. Every
// segment, the ledger's and the baseline's alike, pays for the same clock reads.
type meter struct {
	wall time.Duration
	cpu  int64
	on   bool // false during warm-up
	t    time.Time
	c    int64
}

func (m *meter) start() {
	m.c = cputime.Self().Nanoseconds()
	m.t = time.Now()
}

func (m *meter) stop() {
	w := time.Since(m.t)
	c := cputime.Self().Nanoseconds() - m.c
	if m.on {
		m.wall += w
		m.cpu += c
	}
}

// baseline times one Ed25519 verification of a 32-byte hash, as the ledger makes them:
// each call verifies the next of a pool of signatures by two keys over distinct
// hashes (verification time varies a little with the signature, so one fixed vector
// would be a biased sample). The benchmarks call it once per verification the ledger
// makes, right before the Execute that makes it (after the client signed), so that both
// run under the same machine load and the same cache state.
type baseline struct {
	pool []verifyCase
	next int
	m    meter
}

type verifyCase struct {
	pub      ed25519.PublicKey
	msg, sig []byte
}

func newBaseline() *baseline {
	bl := &baseline{}
	keys := []ed25519.PrivateKey{testKey("bench-verify-a"), testKey("bench-verify-b")}
	for i := range 256 {
		k := keys[i%2]
		msg := sha256.Sum256([]byte(fmt.Sprintf("bench hash %d", i)))
		bl.pool = append(bl.pool, verifyCase{pub: k.Public().(ed25519.PublicKey), msg: msg[:], sig: ed25519.Sign(k, msg[:])})
	}
	return bl
}

func (bl *baseline) once(b *testing.B) {
	c := &bl.pool[bl.next%len(bl.pool)]
	bl.next++
	bl.m.start()
	ok := ed25519.Verify(c.pub, c.msg, c.sig)
	bl.m.stop()
	if !ok {
		b.Fatal("verify")
	}
}

// empty measures an empty segment: the baseline takes as many segments per op as the
// ledger does (one per ledger call), so that the cost of reading the clocks, about a
// microsecond per segment for the CPU time, weighs the same on both sides of the ratio.
func (bl *baseline) empty() {
	bl.m.start()
	bl.m.stop()
}

// report writes the per-op metrics of a benchmark whose op makes verifies verifications:
// ledger-ns/op and ledger-cpu-ns/op, the baseline's verify-ns and verify-cpu-ns, and
// overhead-ratio = (ledger − verifies × verify) / (verifies × verify) in wall time and
// overhead-ratio-cpu the same in CPU time.
func report(b *testing.B, ledger *meter, bl *baseline, verifies int) {
	n := float64(b.N)
	lw, lc := float64(ledger.wall.Nanoseconds())/n, float64(ledger.cpu)/n
	vw, vc := float64(bl.m.wall.Nanoseconds())/n, float64(bl.m.cpu)/n // verifies per op
	b.ReportMetric(vw/float64(verifies), "verify-ns")
	b.ReportMetric(vc/float64(verifies), "verify-cpu-ns")
	b.ReportMetric(lw, "ledger-ns/op")
	b.ReportMetric(lc, "ledger-cpu-ns/op")
	b.ReportMetric((lw-vw)/vw, "overhead-ratio")
	if vc > 0 {
		b.ReportMetric((lc-vc)/vc, "overhead-ratio-cpu")
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

// BenchmarkCPUTimeRead is the cost of one reading of the process CPU time, which every
// measured segment pays twice.
func BenchmarkCPUTimeRead(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = cputime.Self()
	}
}

// benchLedger is a ledger as the desk runs it: default Limits (retained updates and live
// prepared transactions bounded as in production) and a Recorder, so that every input
// is built and handed over as for the journal.
func benchLedger(b *testing.B) *env {
	e := newEnv(b, ProfileTestnet)
	e.l.cfg.Recorder = func(Input) {}
	return e
}

// warmup is how many ops each benchmark runs untimed first, so that the measured ops
// start from a desk that has been trading (indexes and maps grown, the heap warm).
const warmup = 200

// opEvery is the ledger time between two ops: the clock moves as on a live desk, so
// prepared transactions and locks expire and leave the expiry heaps (which then keep a
// steady size) instead of piling up under a frozen clock.
const opEvery = time.Second

// BenchmarkPrepareExecuteAllocation prepares and executes one Send allocation of an
// external party (coin selection with change, hash, signature verification, commit,
// the update's digest contribution; a contract's is computed only if it outlives the
// window of pending contributions, see ENCODING.md). ns/op also contains the party's signing (client work) and, untimed, the rest
// of the settlement that consumes the allocation: the house party's Receive allocation
// and the operator's Settle (both Submit), so that the state stays what a trading desk
// has (allocations settle) instead of piling up live allocations and locks. The
// ledger's two calls are timed on their own as ledger-ns/op (wall) and
// ledger-cpu-ns/op (process CPU time); overhead-ratio = (ledger − verify) / verify, the
// verification measured in the same loop, and overhead-ratio-cpu the same in CPU time.
func BenchmarkPrepareExecuteAllocation(b *testing.B) {
	e := benchLedger(b)
	maker := e.external("maker")
	e.fund(maker, "USDCx", "1000000")
	k := e.keys[maker]
	sb := t0.Add(24 * time.Hour)
	amt := d("0.01")
	total := warmup + b.N
	type op struct {
		send, recv Allocate
		settle     Settle
		id         string
	}
	ops := make([]op, total)
	for i := range ops {
		ref := SettlementRef{Executor: e.op, ID: fmt.Sprintf("bench-%d", i)}
		ops[i] = op{
			send:   Allocate{Settlement: ref, LegID: "maker", Side: SideSend, Instrument: "USDCx", Amount: amt, SettleBefore: sb},
			recv:   Allocate{Settlement: ref, LegID: "house", Side: SideReceive, Instrument: "USDCx", Amount: amt, SettleBefore: sb},
			settle: Settle{Settlement: ref, Legs: []Leg{{Sender: maker, Receiver: e.house, Instrument: "USDCx", Amount: amt}}},
			id:     fmt.Sprintf("alloc-%d", i),
		}
	}
	bl := newBaseline()
	var lm meter
	run := func(o *op) {
		e.clk.Advance(opEvery)
		bl.empty() // two ledger calls, one verification
		u, err := allocate(b, e, &lm, bl, maker, k, o.send, o.id)
		if err != nil {
			b.Fatal(err)
		}
		h, err := e.submit(e.house, o.recv, o.id+"-house")
		if err != nil {
			b.Fatal(err)
		}
		o.settle.Allocations = []string{u.Allocation, h.Allocation}
		if _, err := e.submit(e.op, o.settle, o.id+"-settle"); err != nil {
			b.Fatal(err)
		}
	}
	measure(b, ops, run, &lm, bl, 1)
}

// BenchmarkSettleTrade runs one SELL trade end to end: four external allocations
// (prepare + execute, four verifications), the fee party's allocation (Submit) and the
// atomic settlement (Submit). The two external parties swap the maker and taker roles
// every trade, so each spends the base it received the trade before (as a desk's
// parties trade both ways) instead of piling up receipts. As above, ledger-ns/op and
// ledger-cpu-ns/op time the ledger's calls only, and overhead-ratio(-cpu) =
// (ledger − 4 × verify) / (4 × verify).
func BenchmarkSettleTrade(b *testing.B) {
	e := benchLedger(b)
	pa, pb := e.external("maker"), e.external("taker")
	for _, p := range []string{pa, pb} {
		e.fund(p, "USDCx", "400000")
		e.fund(p, "CBTC", "40")
	}
	total := warmup + b.N
	type op struct {
		tr  trade
		ids []string
		sid string
	}
	ops := make([]op, total)
	start := e.clk.Now()
	for i := range ops {
		e.clk.Set(start.Add(time.Duration(i+1) * opEvery)) // the trade's own time: its settleBefore follows
		maker, taker := pa, pb
		if i%2 == 1 {
			maker, taker = pb, pa
		}
		o := op{tr: sellTrade(e, fmt.Sprintf("t_%d", i), maker, taker, "CBTC", "USDCx", d("0.001"), d("1000.5"), 25), sid: fmt.Sprintf("t%d-settle", i)}
		for j := range o.tr.allocs {
			o.ids = append(o.ids, fmt.Sprintf("t%d-a%d", i, j))
		}
		ops[i] = o
	}
	e.clk.Set(start)
	bl := newBaseline()
	var lm meter
	run := func(o *op) {
		e.clk.Advance(opEvery)
		for range 6 { // ten ledger calls, four verifications (below)
			bl.empty()
		}
		cids := make([]string, 0, 5)
		for j, a := range o.tr.allocs {
			var u Update
			var err error
			if k, ext := e.keys[a.party]; ext {
				u, err = allocate(b, e, &lm, bl, a.party, k, a.a, o.ids[j])
			} else {
				lm.start()
				u, err = e.submit(a.party, a.a, o.ids[j])
				lm.stop()
			}
			if err != nil {
				b.Fatal(err)
			}
			cids = append(cids, u.Allocation)
		}
		lm.start()
		_, err := e.submit(e.op, Settle{Settlement: o.tr.ref, Legs: o.tr.legs, Allocations: cids}, o.sid)
		lm.stop()
		if err != nil {
			b.Fatal(err)
		}
	}
	measure(b, ops, run, &lm, bl, 4)
}

// allocate prepares the external party's allocation a, signs it with k and executes it,
// the ledger's two calls timed on lm, and one verification measured on bl beside them.
func allocate(b *testing.B, e *env, lm *meter, bl *baseline, party string, k ed25519.PrivateKey, a Allocate, id string) (Update, error) {
	lm.start()
	p, err := e.prepare(party, a, id)
	lm.stop()
	if err != nil {
		return Update{}, err
	}
	sig := ed25519.Sign(k, p.Hash[:])
	bl.once(b)
	lm.start()
	u, err := e.l.Execute(p.Blob, sig)
	lm.stop()
	return u, err
}

// measure runs the first warmup ops untimed, then the next b.N timed with the meters on,
// and reports them, verifies verifications an op.
func measure[T any](b *testing.B, ops []T, run func(*T), lm *meter, bl *baseline, verifies int) {
	for i := range warmup {
		run(&ops[i])
	}
	lm.on, bl.m.on = true, true
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		run(&ops[warmup+i])
	}
	b.StopTimer()
	report(b, lm, bl, verifies)
}

// BenchmarkDigest measures Digest, meant to be called after every input.
func BenchmarkDigest(b *testing.B) {
	e := benchLedger(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = e.l.Digest()
	}
}

// BenchmarkPreparedBlob serializes a send allocation's prepared transaction with one input
// and opens it, as Prepare and Execute do (the signature and the state change apart).
func BenchmarkPreparedBlob(b *testing.B) {
	e := newEnv(b, ProfileTestnet)
	alice := e.external("alice")
	e.fund(alice, "USDCx", "100")
	cmd := named(e.l, alice, Allocate{Settlement: SettlementRef{Executor: e.op, ID: "s-1"}, LegID: "a", Side: SideSend,
		Instrument: "USDCx", Amount: d("10"), SettleBefore: t0.Add(time.Hour)})
	p, err := e.l.Prepare(alice, cmd, "c1")
	if err != nil {
		b.Fatal(err)
	}
	rec := e.l.st.prepared[p.ID]
	b.ReportAllocs()
	b.SetBytes(int64(len(p.Blob)))
	for b.Loop() {
		e.l.mu.Lock()
		blob := e.l.serialize(&rec.p)
		e.l.mu.Unlock()
		if _, err := e.l.open(blob); err != nil {
			b.Fatal(err)
		}
	}
}
