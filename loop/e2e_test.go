package loop_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// realClock is the wall clock, for a desk under test running in real time.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// sink records every event by party and lets a test wait for one.
type sink struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []machine.Event
	closes []machine.SocketClose
}

func newSink() *sink {
	s := &sink{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *sink) Deliver(out machine.Outputs) {
	s.mu.Lock()
	s.events = append(s.events, out.Events...)
	s.closes = append(s.closes, out.Closes...)
	s.mu.Unlock()
	s.cond.Broadcast()
}

// waitFor blocks until the party received an event of type typ matching ok, and returns it.
func (s *sink) waitFor(t *testing.T, party, typ string, ok func(machine.Event) bool) machine.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	go func() { time.Sleep(10 * time.Second); s.cond.Broadcast() }()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for _, e := range s.events {
			if e.Party == party && e.Type == typ && (ok == nil || ok(e)) {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event for %s within 10s", typ, party)
		}
		s.cond.Wait()
	}
}

// typesFor lists the event types a party received, in order.
func (s *sink) typesFor(party string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		if e.Party == party {
			out = append(out, e.Type)
		}
	}
	return out
}

// desk is a running in-process desk on the embedded ledger.
type desk struct {
	t      *testing.T
	loop   *loop.Loop
	ledger *ledgeradapter.Adapter
	cfg    machine.Config
	sink   *sink
}

func catalog() []machine.Instrument {
	return []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("0.1"), RegistryID: "cbtc-registry"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("10000"), RegistryID: "usdcx-registry"},
	}
}

func startDesk(t *testing.T) *desk {
	t.Helper()
	adapter, parties, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{
		Network: machine.Testnet, Seed: 7, Clock: realClock{}, Catalog: catalog(),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := machine.DefaultConfig()
	cfg.Seed = 7
	cfg.Instruments = catalog()
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}}
	cfg.FaucetCooldown = time.Second
	parties.Apply(&cfg)
	d, err := machine.NewDesk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	l, err := loop.New(loop.Config{Desk: d, Ledger: adapter, Clock: realClock{}, Sink: s, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	l.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return &desk{t: t, loop: l, ledger: adapter, cfg: cfg, sink: s}
}

// party is a registered external party with its key.
type party struct {
	id, hint, key string
	priv          ed25519.PrivateKey
}

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func (d *desk) do(cmd machine.Command_) machine.Reply {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := d.loop.Do(ctx, cmd)
	if err != nil {
		d.t.Fatal(err)
	}
	return rep
}

func (d *desk) read(p party, q machine.Query) any {
	d.t.Helper()
	rep, err := d.loop.Read(context.Background(), hashKey(p.key), q)
	if err != nil || rep.Err != nil {
		d.t.Fatalf("read %T: %v %+v", q, err, rep.Err)
	}
	return rep.Body
}

func (d *desk) must(rep machine.Reply, status int) any {
	d.t.Helper()
	if rep.Err != nil || rep.Status != status {
		d.t.Fatalf("got %d %+v, want %d", rep.Status, rep.Err, status)
	}
	return rep.Body
}

// register runs register/start and register/complete with a real key and signatures.
func (d *desk) register(name string) party {
	d.t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		d.t.Fatal(err)
	}
	start := d.must(d.do(machine.RegisterStart{DisplayName: name, PublicKey: pub}), 200).(machine.RegisterStartDTO)
	sigs := make([][]byte, len(start.Topology))
	for i, tx := range start.Topology {
		sigs[i] = ed25519.Sign(priv, tx.Hash)
	}
	key := "mk_test_" + name
	done := d.must(d.do(machine.RegisterComplete{RegistrationID: start.RegistrationID, Signatures: sigs, NewKeyHash: hashKey(key)}), 200).(machine.RegisterCompleteDTO)
	return party{id: done.PartyID, hint: done.Hint, key: key, priv: priv}
}

// sign signs actions and executes them in one batch; every entry must execute.
func (d *desk) sign(p party, actions []machine.SignActionDTO) {
	d.t.Helper()
	entries := make([]machine.SignedAction, len(actions))
	for i, x := range actions {
		entries[i] = machine.SignedAction{ActionID: x.ID, Signature: ed25519.Sign(p.priv, x.Hash)}
	}
	res := d.must(d.do(machine.ExecuteActions{Req: machine.Req{KeyHash: hashKey(p.key)}, Entries: entries, Batch: true}), 200).(machine.ExecBatchDTO)
	for _, r := range res.Results {
		if r.Status != "executed" {
			d.t.Fatalf("action %s: %s %s", r.ActionID, r.Status, r.Error)
		}
	}
}

// fund draws from the faucet and accepts every deposit.
func (d *desk) fund(p party) {
	d.t.Helper()
	ans := d.must(d.do(machine.FaucetDraw{Req: machine.Req{KeyHash: hashKey(p.key)}}), 200).(machine.FaucetAnswer)
	if len(ans.Sent) != 2 {
		d.t.Fatalf("faucet answer %+v", ans)
	}
	in := d.read(p, machine.QIncoming{}).(machine.IncomingDTO)
	if len(in.Transfers) != 2 {
		d.t.Fatalf("deposit inbox %+v", in)
	}
	for _, tr := range in.Transfers {
		acts := d.must(d.do(machine.AcceptIncoming{Req: machine.Req{KeyHash: hashKey(p.key)}, CID: tr.CID}), 202).(machine.ActionsDTO)
		d.sign(p, acts.Actions)
	}
}

func (d *desk) balances(p party) map[string]string {
	out := map[string]string{}
	for _, h := range d.read(p, machine.QBalances{}).(machine.BalancesDTO).Holdings {
		out[h.Symbol] = h.Amount.String()
	}
	return out
}

// TestEndToEndInProcess: two makers and a taker register, fund through the faucet and
// deposit accepts, the taker asks both, both quote and sign, the taker accepts the better
// quote and signs, and the trade settles: balances move by exactly qty, price and fee, and
// the loser hears rfq.closed then quote.status lost.
func TestEndToEndInProcess(t *testing.T) {
	d := startDesk(t)
	m1, m2, taker := d.register("Maker One"), d.register("Maker Two"), d.register("Taker")
	for _, p := range []party{m1, m2, taker} {
		d.fund(p)
	}
	if got := d.balances(taker); fmt.Sprint(got) != "map[cbtc:0.1 usdcx:10000]" {
		t.Fatalf("funded balances %v", got)
	}
	for i, p := range []party{m1, m2} {
		if err := d.loop.OpenSocket(context.Background(), uint64(i+1), hashKey(p.key)); err != nil {
			t.Fatal(err)
		}
	}
	rfq := d.must(d.do(machine.CreateRFQ{Req: machine.Req{KeyHash: hashKey(taker.key)}, Direction: machine.Sell,
		Qty: money.MustParse("0.05"), Base: "cbtc", Quote: "USDCX", InvitedMakers: []string{m1.hint, m2.hint}, TTLSeconds: 120}), 200).(machine.RfqDTO)

	quote := func(m party, price string) machine.QuoteWithActionsDTO {
		q := d.must(d.do(machine.SubmitQuote{Req: machine.Req{KeyHash: hashKey(m.key)}, RFQID: rfq.RfqID, Price: money.MustParse(price)}), 200).(machine.QuoteWithActionsDTO)
		d.sign(m, q.Actions)
		d.sink.waitFor(t, m.id, machine.EvQuoteAnchored, nil)
		return q
	}
	q1 := quote(m1, "60000")
	quote(m2, "59000")
	d.sink.waitFor(t, taker.id, machine.EvQuoteCreated, func(e machine.Event) bool { return e.Payload.(machine.QuoteDTO).QuoteID == q1.QuoteID })

	trade := d.must(d.do(machine.AcceptQuote{Req: machine.Req{KeyHash: hashKey(taker.key)}, QuoteID: q1.QuoteID}), 202).(machine.TradeWithActionsDTO)
	if len(trade.Actions) != 2 || trade.Status != "settling" {
		t.Fatalf("accept answer %+v", trade)
	}
	d.sign(taker, trade.Actions)
	settled := d.sink.waitFor(t, taker.id, machine.EvTradeSettled, nil).Payload.(machine.TradeDTO)
	if settled.Status != "settled" || settled.Fee.String() != "7.5" || len(settled.Ledger.ReceiptCids) != 3 || settled.Ledger.UpdateID == "" {
		t.Fatalf("settled trade %+v", settled)
	}

	// 0.05 cbtc × 60000 = 3000 usdcx; fee 25 bps = 7.5, paid by the taker.
	for _, c := range []struct {
		p    party
		want string
	}{
		{taker, "map[cbtc:0.05 usdcx:12992.5]"},
		{m1, "map[cbtc:0.15 usdcx:7000]"},
		{m2, "map[cbtc:0.1 usdcx:10000]"},
	} {
		if got := fmt.Sprint(d.balances(c.p)); got != c.want {
			t.Errorf("%s balances %s, want %s", c.p.hint, got, c.want)
		}
	}
	fees := d.ledger.L.Balances(d.cfg.FeeParty)
	if len(fees) != 1 || fees[0].Free.String() != "7.5" {
		t.Errorf("fee party balances %+v", fees)
	}
	d.sink.waitFor(t, m2.id, machine.EvQuoteStatus, func(e machine.Event) bool { return e.Payload.(machine.QuoteStatusPayload).Status == "lost" })
	loser := d.sink.typesFor(m2.id)
	if n := len(loser); n < 2 || loser[n-2] != machine.EvRfqClosed || loser[n-1] != machine.EvQuoteStatus {
		t.Fatalf("loser's events end with %v, want rfq.closed then quote.status", loser)
	}
	if err := d.ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
