package drive

import (
	"context"
	"fmt"
	"sync"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Catalog is the two tokens of the tests: cbtc (8 decimals at 100,000 USD) and usdcx (6
// decimals at 1 USD), whose faucet draws give cbtcDrip and usdcxDrip.
func Catalog(cbtcDrip, usdcxDrip string) []machine.Instrument {
	return []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse(cbtcDrip), RegistryID: "cbtc-registry"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse(usdcxDrip), RegistryID: "usdcx-registry"},
	}
}

// Config is the desk configuration of the tests: the defaults with seed, the catalog cat,
// one fee tier of feeBps for every notional, and no faucet cooldown.
func Config(seed uint64, cat []machine.Instrument, feeBps int) machine.Config {
	cfg := machine.DefaultConfig()
	cfg.Seed = seed
	cfg.Instruments = cat
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: feeBps}}
	cfg.FaucetCooldown = 0
	return cfg
}

// Sockets opens a party's stream socket (the loop's OpenSocket): a maker needs one to be
// invited.
type Sockets interface {
	OpenSocket(ctx context.Context, socket uint64, keyHash string, cancelOnDisconnect bool) error
}

// Pairs registers n maker/taker pairs ("maker i", "taker i"), funds every party with one
// faucet draw of two tokens, and opens each maker's socket (socket i+1) on sockets.
func (d Driver) Pairs(n int, sockets Sockets) [][2]Party {
	d.T.Helper()
	pairs := make([][2]Party, n)
	for i := range pairs {
		m, tk := d.Register(fmt.Sprintf("maker %d", i)), d.Register(fmt.Sprintf("taker %d", i))
		d.Fund(m, 2)
		d.Fund(tk, 2)
		if err := sockets.OpenSocket(context.Background(), uint64(i+1), m.KeyHash(), false); err != nil {
			d.T.Fatal(err)
		}
		pairs[i] = [2]Party{m, tk}
	}
	return pairs
}

// Trade runs an RFQ of taker's (SELL 0.1 cbtc for usdcx, maker alone invited) up to the
// accept: maker quotes 50000 and signs, and once the quote is anchored taker accepts. It
// returns the accept's answer, the taker's actions unsigned.
func (d Driver) Trade(events *Events, maker, taker Party) machine.TradeWithActionsDTO {
	d.T.Helper()
	rfq := d.Must(d.Do(machine.CreateRFQ{Req: taker.Req(), Direction: machine.Sell, Qty: money.MustParse("0.1"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{maker.Hint}, TTLSeconds: 600}), 200).(machine.RfqDTO)
	q := d.Must(d.Do(machine.SubmitQuote{Req: maker.Req(), RFQID: rfq.RfqID, Price: money.MustParse("50000")}), 200).(machine.QuoteWithActionsDTO)
	d.Sign(maker, q.Actions)
	events.WaitFor(d.T, maker.ID, machine.EvQuoteAnchored, func(e machine.Event) bool {
		return e.Payload.(machine.QuoteAnchoredPayload).QuoteID == q.QuoteID
	})
	return d.Must(d.Do(machine.AcceptQuote{Req: taker.Req(), QuoteID: q.QuoteID}), 202).(machine.TradeWithActionsDTO)
}

// Settled is a loop Sink for runs of many trades: it wakes the waiter of each trade once
// trade.settled reached the taker, and forgets the trade once waited for, so that it stays
// bounded however many trades settle.
type Settled struct {
	mu      sync.Mutex
	waiters map[string]chan struct{} // trade id → closed when settled
	settled map[string]bool          // settled and not yet waited for
}

// NewSettled returns a Settled with nothing settled.
func NewSettled() *Settled {
	return &Settled{waiters: map[string]chan struct{}{}, settled: map[string]bool{}}
}

// Deliver notes the trades that settled (the loop's Sink).
func (s *Settled) Deliver(out machine.Outputs) {
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

// Wait blocks until trade id settled or ctx ends.
func (s *Settled) Wait(ctx context.Context, id string) error {
	s.mu.Lock()
	if s.settled[id] {
		delete(s.settled, id)
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters[id] = ch
	s.mu.Unlock()
	select {
	case <-ch:
		s.mu.Lock()
		delete(s.settled, id)
		s.mu.Unlock()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("trade %s did not settle: %w", id, ctx.Err())
	}
}

// Lifecycle runs one RFQ of tk's to settlement on desk (a 0.01 cbtc RFQ in direction dir,
// m alone invited, quoted at 60000): the RFQ, the quote, the maker's signatures, the
// accept, the taker's signatures, and the wait on s for the atomic settlement. The desk's
// sink must deliver to s.
func Lifecycle(ctx context.Context, desk Desk, s *Settled, m, tk Party, dir machine.Direction) error {
	rep, err := desk.Do(ctx, machine.CreateRFQ{Req: tk.Req(), Direction: dir, Qty: money.MustParse("0.01"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{m.Hint}, TTLSeconds: 60})
	if err = replyErr(err, rep); err != nil {
		return fmt.Errorf("create rfq: %w", err)
	}
	rep, err = desk.Do(ctx, machine.SubmitQuote{Req: m.Req(), RFQID: rep.Body.(machine.RfqDTO).RfqID, Price: money.MustParse("60000")})
	if err = replyErr(err, rep); err != nil {
		return fmt.Errorf("submit quote: %w", err)
	}
	q := rep.Body.(machine.QuoteWithActionsDTO)
	if err := Execute(desk, m, q.Actions); err != nil {
		return fmt.Errorf("maker signs: %w", err)
	}
	rep, err = desk.Do(ctx, machine.AcceptQuote{Req: tk.Req(), QuoteID: q.QuoteID})
	if err = replyErr(err, rep); err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	tr := rep.Body.(machine.TradeWithActionsDTO)
	if err := Execute(desk, tk, tr.Actions); err != nil {
		return fmt.Errorf("taker signs: %w", err)
	}
	return s.Wait(ctx, tr.TradeID)
}

// replyErr is the loop's error, else the desk's refusal, else nil.
func replyErr(err error, rep machine.Reply) error {
	if err != nil {
		return err
	}
	if rep.Err != nil {
		return rep.Err
	}
	return nil
}
