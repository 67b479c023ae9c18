package loop_test

import (
	"context"
	"crypto/ed25519"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// settledSink wakes the waiter of each trade when trade.settled reaches the taker.
type settledSink struct {
	mu      sync.Mutex
	waiters map[string]chan struct{} // trade id → closed when settled
	settled map[string]bool
}

func (s *settledSink) Deliver(out machine.Outputs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range out.Events {
		if e.Type != machine.EvTradeSettled {
			continue
		}
		id := e.Payload.(machine.TradeDTO).TradeID
		if s.settled[id] {
			continue
		}
		s.settled[id] = true
		if ch, ok := s.waiters[id]; ok {
			close(ch)
			delete(s.waiters, id)
		}
	}
}

func (s *settledSink) wait(id string) {
	s.mu.Lock()
	if s.settled[id] {
		s.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	s.waiters[id] = ch
	s.mu.Unlock()
	<-ch
}

// benchDesk starts a desk with generous faucet amounts and pairs of funded external
// parties, each maker streaming.
func benchDesk(b *testing.B, pairs int) (*desk, *settledSink, [][2]party) {
	b.Helper()
	cat := []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("1000"), RegistryID: "cbtc-registry"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("100000000"), RegistryID: "usdcx-registry"},
	}
	adapter, parties, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: machine.Testnet, Seed: 1, Clock: realClock{}, Catalog: cat})
	if err != nil {
		b.Fatal(err)
	}
	cfg := machine.DefaultConfig()
	cfg.Instruments = cat
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 10}}
	cfg.FaucetCooldown = 0
	parties.Apply(&cfg)
	dk, err := machine.NewDesk(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s := &settledSink{waiters: map[string]chan struct{}{}, settled: map[string]bool{}}
	l, err := loop.New(loop.Config{Desk: dk, Ledger: adapter, Clock: realClock{}, Sink: s, Workers: 4})
	if err != nil {
		b.Fatal(err)
	}
	l.Start()
	b.Cleanup(func() { _ = l.Stop(context.Background()) })
	d := &desk{t: &testing.T{}, loop: l, ledger: adapter, cfg: cfg, sink: newSink()}
	var out [][2]party
	for i := 0; i < pairs; i++ {
		m, tk := d.register(name("maker", i)), d.register(name("taker", i))
		d.fund(m)
		d.fund(tk)
		if err := l.OpenSocket(context.Background(), uint64(i+1), hashKey(m.key)); err != nil {
			b.Fatal(err)
		}
		out = append(out, [2]party{m, tk})
	}
	return d, s, out
}

func name(kind string, i int) string { return kind + string(rune('a'+i)) }

// lifecycle runs one RFQ to settlement: RFQ, quote, two maker signatures, accept, two
// taker signatures, atomic settle. Directions alternate so balances stay level.
func lifecycle(d *desk, s *settledSink, m, tk party, dir machine.Direction) error {
	ctx := context.Background()
	rep, err := d.loop.Do(ctx, machine.CreateRFQ{Req: machine.Req{KeyHash: hashKey(tk.key)}, Direction: dir,
		Qty: money.MustParse("0.01"), Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{m.hint}, TTLSeconds: 60})
	if err != nil || rep.Err != nil {
		return errOf(err, rep)
	}
	rfq := rep.Body.(machine.RfqDTO)
	rep, err = d.loop.Do(ctx, machine.SubmitQuote{Req: machine.Req{KeyHash: hashKey(m.key)}, RFQID: rfq.RfqID, Price: money.MustParse("60000")})
	if err != nil || rep.Err != nil {
		return errOf(err, rep)
	}
	q := rep.Body.(machine.QuoteWithActionsDTO)
	if err := execute(d, m, q.Actions); err != nil {
		return err
	}
	rep, err = d.loop.Do(ctx, machine.AcceptQuote{Req: machine.Req{KeyHash: hashKey(tk.key)}, QuoteID: q.QuoteID})
	if err != nil || rep.Err != nil {
		return errOf(err, rep)
	}
	tr := rep.Body.(machine.TradeWithActionsDTO)
	if err := execute(d, tk, tr.Actions); err != nil {
		return err
	}
	s.wait(tr.TradeID)
	return nil
}

func execute(d *desk, p party, actions []machine.SignActionDTO) error {
	entries := make([]machine.SignedAction, len(actions))
	for i, x := range actions {
		entries[i] = machine.SignedAction{ActionID: x.ID, Signature: ed25519.Sign(p.priv, x.Hash)}
	}
	rep, err := d.loop.Do(context.Background(), machine.ExecuteActions{Req: machine.Req{KeyHash: hashKey(p.key)}, Entries: entries, Batch: true})
	if err != nil || rep.Err != nil {
		return errOf(err, rep)
	}
	for _, r := range rep.Body.(machine.ExecBatchDTO).Results {
		if r.Status != "executed" {
			return &machine.APIError{Status: 500, Message: r.ActionID + ": " + r.Status + " " + r.Error}
		}
	}
	return nil
}

func errOf(err error, rep machine.Reply) error {
	if err != nil {
		return err
	}
	return rep.Err
}

// BenchmarkLifecycle measures full RFQ lifecycles through machine + loop + ledgersim with
// real Ed25519 signatures, beside the floor the same run measures: the four signatures and
// four verifications a lifecycle cannot avoid, on the same cores. The "of-floor" metric is
// floor time / lifecycle time (target ≥ 0.60).
func BenchmarkLifecycle(b *testing.B) {
	var floorNs float64
	b.Run("signatures-only", func(b *testing.B) {
		pub, priv, _ := ed25519.GenerateKey(nil)
		msg := make([]byte, 32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				for range 4 {
					sig := ed25519.Sign(priv, msg)
					if !ed25519.Verify(pub, msg, sig) {
						panic("verify")
					}
				}
			}
		})
		floorNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("desk", func(b *testing.B) {
		d, s, pairs := benchDesk(b, 8)
		var next, n atomic.Int64
		// Each lifecycle is a chain of round trips; several in flight keep both cores busy.
		b.SetParallelism(4)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			pair := pairs[int(next.Add(1)-1)%len(pairs)]
			for pb.Next() {
				dir := machine.Sell
				if n.Add(1)%2 == 0 {
					dir = machine.Buy
				}
				if err := lifecycle(d, s, pair[0], pair[1], dir); err != nil {
					b.Error(err)
					return
				}
			}
		})
		per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(float64(time.Second)/per, "lifecycles/s")
		if floorNs > 0 {
			b.ReportMetric(floorNs/per, "of-floor")
		}
	})
}
