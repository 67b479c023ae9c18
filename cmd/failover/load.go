package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// load is the bounded load: workers, each trading as one taker at a time with the house
// maker. A taker that meets any failure (the leader died under it) is retired: its
// registration and acknowledged trades are still checked every round, but not its
// balances, which a half-done trade may still change; the worker registers a new taker.
type load struct {
	leader  atomic.Pointer[string] // base URL of the desk to talk to
	pause   sync.RWMutex           // workers hold it for reading during an operation
	quit    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	parties []*party
	acks    atomic.Int64
	workers int
	started bool
}

// party is a taker as the load knows it: what the desk acknowledged to it.
type party struct {
	id       *client.Identity
	trades   []string // acknowledged (settled) trade ids
	balances string   // the balances it last saw, while clean
	clean    bool     // no failure ever met
	funded   bool
	dir      int
}

func newLoad(workers int, base string) *load {
	l := &load{quit: make(chan struct{}), workers: workers}
	l.leader.Store(&base)
	return l
}

func (l *load) start() {
	l.started = true
	for i := range l.workers {
		l.wg.Add(1)
		go l.work(i)
	}
}

// stop ends the workers (once).
func (l *load) stop() {
	select {
	case <-l.quit:
		return
	default:
	}
	close(l.quit)
	if l.started {
		l.wg.Wait()
	}
}

func (l *load) acknowledged() int { return int(l.acks.Load()) }

func (l *load) resume() { l.pause.Unlock() }

func (l *load) client(p *party) (*client.Client, error) {
	opts := []client.Option{client.WithHTTPClient(httpc)}
	if p != nil && p.id != nil {
		opts = append(opts, client.WithIdentity(p.id))
	}
	return client.New(*l.leader.Load(), opts...)
}

// work is one worker's loop.
func (l *load) work(i int) {
	defer l.wg.Done()
	var p *party
	for n := 0; ; n++ {
		select {
		case <-l.quit:
			return
		default:
		}
		l.pause.RLock()
		if p == nil || !p.clean {
			p = &party{clean: true}
		}
		err := l.step(p, fmt.Sprintf("w%d-%d", i, n))
		l.pause.RUnlock()
		if err != nil {
			p.clean = false
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// step advances party p by one operation: register, fund, or one trade.
func (l *load) step(p *party, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := l.client(p)
	if err != nil {
		return err
	}
	switch {
	case p.id == nil:
		id, err := c.Register(ctx, "taker "+name)
		if err != nil {
			return err
		}
		p.id = id
		l.acks.Add(1)
		l.mu.Lock()
		l.parties = append(l.parties, p)
		l.mu.Unlock()
		return nil
	case !p.funded:
		if _, err := c.Faucet(ctx); err != nil {
			return err
		}
		l.acks.Add(1)
		if err := acceptDeposits(ctx, c); err != nil {
			return err
		}
		p.funded = true
		return l.observe(ctx, c, p)
	}
	dir := client.Sell
	if p.dir%2 == 1 {
		dir = client.Buy
	}
	p.dir++
	id, err := trade(ctx, c, dir)
	if err != nil {
		return err
	}
	p.trades = append(p.trades, id)
	l.acks.Add(1)
	if len(p.trades) >= 300 {
		p.clean = false // the next worker step starts a new party, within GET /trades' bound
	}
	return l.observe(ctx, c, p)
}

func (l *load) observe(ctx context.Context, c *client.Client, p *party) error {
	b, err := c.Balances(ctx)
	if err != nil {
		return err
	}
	p.balances = fmt.Sprint(b.Holdings)
	return nil
}

func acceptDeposits(ctx context.Context, c *client.Client) error {
	in, err := c.IncomingTransfers(ctx)
	if err != nil {
		return err
	}
	for _, tr := range in {
		acts, err := c.AcceptTransfer(ctx, tr.CID)
		if err != nil {
			return err
		}
		if err := signAll(ctx, c, acts); err != nil {
			return err
		}
	}
	return nil
}

func signAll(ctx context.Context, c *client.Client, acts []client.SignAction) error {
	res, err := c.SignAndExecute(ctx, acts)
	if err != nil {
		return err
	}
	return client.FirstFailure(res)
}

// trade runs one lifecycle with the house maker and returns the settled trade's id.
func trade(ctx context.Context, c *client.Client, dir client.Direction) (string, error) {
	rfq, err := c.CreateRFQ(ctx, client.CreateRFQRequest{Direction: dir, Qty: client.Decimal("0.001"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{"house-maker"}, TTLSeconds: 30})
	if err != nil {
		return "", err
	}
	var quoteID string
	for quoteID == "" {
		mine, err := c.MyRFQs(ctx)
		if err != nil {
			return "", err
		}
		i := slices.IndexFunc(mine, func(r client.RFQ) bool { return r.RFQID == rfq.RFQID })
		if i < 0 || !mine[i].Open {
			return "", errors.New("the RFQ closed without a quote")
		}
		for _, q := range mine[i].Quotes {
			if q.Status == client.QuotePending && !q.Settling {
				quoteID = q.QuoteID
			}
		}
		if quoteID == "" {
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return "", err
			}
		}
	}
	tr, err := c.AcceptQuote(ctx, quoteID)
	if err != nil {
		return "", err
	}
	if err := signAll(ctx, c, tr.Actions); err != nil {
		return "", err
	}
	for {
		trades, err := c.Trades(ctx, 20)
		if err != nil {
			return "", err
		}
		if slices.ContainsFunc(trades, func(t client.Trade) bool { return t.TradeID == tr.TradeID }) {
			return tr.TradeID, nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return "", err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// verdict is what a round's check found.
type verdict struct {
	acked  int      // acknowledged writes checked
	losses []string // what was missing
}

func (v verdict) lost() int { return len(v.losses) }

// verify pauses the load (it stays paused until resume), points it at the new leader
// and checks every acknowledged write there.
func (l *load) verify(ctx context.Context, base string) (verdict, error) {
	l.pause.Lock()
	l.leader.Store(&base)
	l.mu.Lock()
	parties := slices.Clone(l.parties)
	l.mu.Unlock()
	var v verdict
	for _, p := range parties {
		c, err := l.client(p)
		if err != nil {
			return v, err
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		b, err := c.Balances(cctx)
		var trades []client.Trade
		if err == nil && len(p.trades) > 0 {
			trades, err = c.Trades(cctx, 500)
		}
		cancel()
		v.acked++ // the registration
		var api *client.APIError
		switch {
		case errors.As(err, &api) && api.Status == 401:
			v.losses = append(v.losses, fmt.Sprintf("party %s: its acknowledged registration is gone (401)", p.id.Hint))
			continue
		case err != nil:
			return v, fmt.Errorf("party %s: %w", p.id.Hint, err)
		}
		for _, id := range p.trades {
			v.acked++
			if !slices.ContainsFunc(trades, func(t client.Trade) bool { return t.TradeID == id }) {
				v.losses = append(v.losses, fmt.Sprintf("party %s: acknowledged trade %s is gone", p.id.Hint, id))
			}
		}
		if p.clean && p.balances != "" {
			if got := fmt.Sprint(b.Holdings); got != p.balances {
				v.losses = append(v.losses, fmt.Sprintf("party %s: balances %s, it last saw %s", p.id.Hint, got, p.balances))
			}
		}
	}
	return v, nil
}
