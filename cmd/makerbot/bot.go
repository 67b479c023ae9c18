package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/strategy"
)

// Bounds of the bot's memory.
const (
	maxTracked  = 10000           // open RFQs and quotes remembered
	requoteWait = 2 * time.Second // least time between two attempts on one RFQ
	callTimeout = 15 * time.Second
)

// errRecycle asks for a fresh stream (the desk did not see the bot invitable).
var errRecycle = errors.New("the desk does not see the stream: recycle it")

// bot is one running maker.
type bot struct {
	cfg     config
	log     *slog.Logger
	c       *client.Client
	metrics metrics

	// Owned by the run goroutine.
	rfqs      map[string]client.RFQ // open RFQs the bot is invited to
	quotes    map[string]sentQuote  // quote id → what the bot sent
	attempts  map[string]time.Time  // rfq id → last quote attempt
	declined  map[string]string     // rfq id → the reason of the bot's last decline (decline.go)
	lastDraw  time.Time
	notSeen   int // status checks in a row that found the bot not invitable
	connected bool
	protected string // the party whose protection the bot set (ensureProtection)
}

// sentQuote is a quote the bot submitted.
type sentQuote struct {
	rfq string
	at  time.Time
}

func newBot(cfg config, log *slog.Logger) *bot {
	return &bot{cfg: cfg, log: log, rfqs: map[string]client.RFQ{}, quotes: map[string]sentQuote{}, attempts: map[string]time.Time{},
		declined: map[string]string{}}
}

// backoff returns the wait before retry n (n ≥ 1): 250 ms doubling up to the maximum,
// with equal jitter.
func (b *bot) backoff(n int) time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < n && d < b.cfg.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, b.cfg.maxBackoff)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// run is the bot's life: an identity, then streams until ctx ends.
func (b *bot) run(ctx context.Context) error {
	for n := 1; ; n++ {
		err := b.ensureIdentity(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.log.Warn("identity not ready; retrying", "err", err)
		if err := sleep(ctx, b.backoff(n)); err != nil {
			return err
		}
	}
	b.log.Info("makerbot running", "hint", b.c.Hint(), "party", b.c.PartyID(), "spreadBps", b.cfg.params.SpreadBps,
		"maxShareBps", b.cfg.params.MaxShareBps)
	for n := 1; ctx.Err() == nil; {
		err := b.stream(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, client.ErrUnauthorized):
			b.log.Warn("the API key is dead; recovering it", "err", err)
			if rerr := b.recoverKey(ctx); rerr != nil {
				b.log.Warn("key recovery failed; retrying", "err", rerr)
				if err := sleep(ctx, b.backoff(n)); err != nil {
					return err
				}
				n++
				continue
			}
		case errors.Is(err, errRecycle):
			b.metrics.streamRecycles.Add(1)
			b.log.Warn("recycling the stream: the desk does not list the bot as invitable")
		default:
			b.log.Warn("stream ended", "err", err)
			if err := sleep(ctx, b.backoff(n)); err != nil {
				return err
			}
			n++
			continue
		}
		n = 1
	}
	return ctx.Err()
}

// ensureIdentity loads or registers the party and makes sure its API key works.
func (b *bot) ensureIdentity(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if b.c == nil {
		id, err := client.LoadIdentity(b.cfg.identity)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return b.register(ctx)
		case err != nil:
			return err
		}
		if b.c, err = client.New(b.cfg.url, client.WithIdentity(id)); err != nil {
			return err
		}
	}
	_, err := b.c.Status(ctx)
	if errors.Is(err, client.ErrUnauthorized) {
		return b.recoverKey(ctx)
	}
	return err
}

// register registers a new party and saves its identity.
func (b *bot) register(ctx context.Context) error {
	c, err := client.New(b.cfg.url)
	if err != nil {
		return err
	}
	id, err := c.Register(ctx, b.cfg.name)
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	if err := client.SaveIdentity(b.cfg.identity, id); err != nil {
		return fmt.Errorf("save the new identity: %w", err)
	}
	b.c = c
	b.log.Info("registered", "hint", id.Hint, "party", id.PartyID, "identity", b.cfg.identity)
	return nil
}

// recoverKey replaces a dead API key through challenge + rotate, or registers afresh when
// the desk no longer knows the party, and saves the identity.
func (b *bot) recoverKey(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := b.c.RecoverKey(ctx)
	if client.Status(err) == http.StatusNotFound {
		b.log.Warn("the desk does not know the party any more; registering a new one")
		return b.register(ctx)
	}
	if err != nil {
		return err
	}
	if err := client.SaveIdentity(b.cfg.identity, b.c.Identity()); err != nil {
		return fmt.Errorf("save the recovered identity: %w", err)
	}
	b.metrics.recoveries.Add(1)
	b.log.Info("API key recovered", "hint", b.c.Hint())
	return nil
}

// stream consumes one stream until it ends or must be recycled.
func (b *bot) stream(ctx context.Context) error {
	s := b.c.Subscribe(ctx, &client.StreamOptions{MinBackoff: 250 * time.Millisecond, MaxBackoff: b.cfg.maxBackoff,
		CancelOnDisconnect: b.cfg.cancelOnDisconnect})
	defer s.Close()
	reconcile := time.NewTicker(b.cfg.reconcileEvery)
	defer reconcile.Stop()
	status := time.NewTicker(b.cfg.statusEvery)
	defer status.Stop()
	b.connected, b.notSeen = false, 0
	for {
		var err error
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return s.Err()
			}
			err = b.handle(ctx, ev)
		case <-reconcile.C:
			err = b.reconcile(ctx)
		case <-status.C:
			err = b.checkStatus(ctx)
		}
		if errors.Is(err, client.ErrUnauthorized) || errors.Is(err, errRecycle) {
			return err
		}
		if err != nil && ctx.Err() == nil {
			b.log.Warn("handling failed; the next reconcile retries", "err", err)
		}
	}
}

// handle reacts to one stream event.
func (b *bot) handle(ctx context.Context, ev client.Event) error {
	switch ev.Type {
	case client.EventConnected:
		b.metrics.connects.Add(1)
		b.connected = true
		resuming := false
		if c, err := ev.Connected(); err == nil && c.Resume {
			resuming = true // the events missed follow, or a stream.gap and a snapshot
		} else {
			clear(b.rfqs) // a snapshot follows
		}
		b.log.Info("stream connected", "hint", b.c.Hint(), "resume", resuming)
		return b.reconcile(ctx)
	case client.EventStreamGap:
		clear(b.rfqs) // the events missed are gone: a snapshot follows
		b.log.Info("stream resume met a gap; resyncing from the snapshot", "hint", b.c.Hint())
		return b.reconcile(ctx)
	case client.EventRFQCreated:
		r, err := ev.RFQCreated()
		if err != nil || !r.Open {
			return err
		}
		if _, known := b.rfqs[r.RFQID]; known {
			return nil // a snapshot entry the reconcile at connect already handled
		}
		b.track(*r)
		return b.quote(ctx, *r)
	case client.EventRFQClosed, client.EventRFQExpired:
		var ref *client.RFQRef
		var err error
		if ev.Type == client.EventRFQClosed {
			ref, err = ev.RFQClosed()
		} else {
			ref, err = ev.RFQExpired()
		}
		if err == nil {
			b.forget(ref.RFQID)
		}
		return err
	case client.EventQuoteStatus:
		st, err := ev.QuoteStatus()
		if err != nil {
			return err
		}
		sent, mine := b.quotes[st.QuoteID]
		switch st.Status {
		case client.QuoteWon:
			b.metrics.quotesWon.Add(1)
			if mine {
				b.metrics.observeSettle(time.Since(sent.at))
			}
			b.log.Info("quote won", "quote", st.QuoteID, "rfq", st.RFQID)
		case client.QuoteLost:
			b.metrics.quotesLost.Add(1)
		case client.QuoteExpired, client.QuoteRevoked:
			// Renew a quote that died while its RFQ is still open.
			if r, open := b.rfqs[st.RFQID]; open && time.Until(r.Deadline) > time.Second {
				delete(b.attempts, st.RFQID)
				return b.quote(ctx, r)
			}
		}
		if st.Status != client.QuotePending {
			delete(b.quotes, st.QuoteID)
		}
	case client.EventSignRequested:
		a, err := ev.SignRequested()
		if err != nil {
			return err
		}
		return b.sign(ctx, []client.SignAction{*a})
	case client.EventMakerProtection:
		return b.protectionTripped(ev)
	}
	return nil
}

// track remembers an open RFQ, within the bound.
func (b *bot) track(r client.RFQ) {
	if len(b.rfqs) >= maxTracked {
		clear(b.rfqs) // the next reconcile rebuilds it
	}
	b.rfqs[r.RFQID] = r
}

// forget drops a closed RFQ and its quotes.
func (b *bot) forget(rfqID string) {
	delete(b.rfqs, rfqID)
	delete(b.attempts, rfqID)
	delete(b.declined, rfqID)
	for id, q := range b.quotes {
		if q.rfq == rfqID {
			delete(b.quotes, id)
		}
	}
}

// quote prices one RFQ with the strategy, submits the quote and signs its allocations.
func (b *bot) quote(ctx context.Context, r client.RFQ) error {
	if at, ok := b.attempts[r.RFQID]; ok && time.Since(at) < requoteWait {
		return nil
	}
	if len(b.attempts) >= maxTracked {
		clear(b.attempts)
	}
	b.attempts[r.RFQID] = time.Now()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rfq, err := toStrategyRFQ(r)
	if err != nil {
		return err
	}
	midText, ok, err := b.c.ReferencePrice(ctx, r.Base, r.Quote)
	if err != nil {
		return err
	}
	var mid money.Decimal
	if ok {
		if mid, err = money.Parse(string(midText)); err != nil {
			return fmt.Errorf("reference price %q: %w", midText, err)
		}
	}
	free, err := b.free(ctx)
	if err != nil {
		return err
	}
	d, err := strategy.Decide(rfq, mid, b.cfg.params, free)
	if err != nil {
		b.metrics.quotesSkipped.Add(1)
		b.log.Debug("skip", "rfq", r.RFQID, "reason", err)
		return b.decline(ctx, r.RFQID, strategy.DeclineReason(err))
	}
	q, err := b.c.SubmitQuote(ctx, client.QuoteRequest{RFQID: r.RFQID, Price: client.Decimal(d.Price.String())})
	if err != nil {
		if errors.Is(err, client.ErrUnauthorized) {
			return err
		}
		b.metrics.quotesRefused.Add(1)
		b.log.Debug("quote refused", "rfq", r.RFQID, "err", err)
		return nil
	}
	if len(b.quotes) >= maxTracked {
		clear(b.quotes)
	}
	b.quotes[q.QuoteID] = sentQuote{rfq: r.RFQID, at: time.Now()}
	if err := b.sign(ctx, q.Actions); err != nil {
		return err
	}
	b.metrics.quotesSent.Add(1)
	b.log.Debug("quoted", "rfq", r.RFQID, "quote", q.QuoteID, "price", d.Price.String())
	return nil
}

func toStrategyRFQ(r client.RFQ) (strategy.RFQ, error) {
	qty, err := money.Parse(string(r.Qty))
	if err != nil {
		return strategy.RFQ{}, fmt.Errorf("rfq %s qty: %w", r.RFQID, err)
	}
	return strategy.RFQ{Direction: string(r.Direction), Qty: qty, Base: r.Base, Quote: r.Quote}, nil
}

// free reads the free holdings by lower-case symbol.
func (b *bot) free(ctx context.Context) (map[string]money.Decimal, error) {
	bal, err := b.c.Balances(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]money.Decimal, len(bal.Holdings))
	for _, h := range bal.Holdings {
		amt, err := money.Parse(string(h.Amount))
		if err != nil {
			return nil, fmt.Errorf("holding %s: %w", h.Symbol, err)
		}
		out[strings.ToLower(h.Symbol)] = amt
	}
	return out, nil
}

// sign signs and executes actions, except withdrawals, which a bot never signs.
func (b *bot) sign(ctx context.Context, actions []client.SignAction) error {
	var ok []client.SignAction
	for _, a := range actions {
		if a.Purpose == client.PurposeTransferOut {
			b.metrics.withdrawalsRefused.Add(1)
			b.log.Warn("not signing a withdrawal; sign it yourself if you meant it", "action", a.ID, "description", a.Description)
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil
	}
	res, err := b.c.SignAndExecute(ctx, ok)
	for _, r := range res {
		if r.OK() {
			b.metrics.actionsSigned.Add(1)
		} else {
			b.log.Debug("action not executed", "action", r.ActionID, "err", r.Error, "retryable", r.Retryable)
		}
	}
	return err
}

// reconcile re-reads what events may have been missed: pending actions, deposits and
// funding, and the incoming RFQs to quote.
func (b *bot) reconcile(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := b.ensureProtection(ctx); err != nil {
		return err
	}
	pending, err := b.c.PendingActions(ctx)
	if err != nil {
		return err
	}
	if err := b.sign(ctx, pending); err != nil {
		return err
	}
	if err := b.fund(ctx); err != nil {
		return err
	}
	rfqs, err := b.c.IncomingRFQs(ctx)
	if err != nil {
		return err
	}
	open := make(map[string]bool, len(rfqs))
	for _, r := range rfqs {
		if !r.Open || time.Until(r.Deadline) < time.Second {
			continue
		}
		open[r.RFQID] = true
		b.track(r)
		if r.MyQuote == nil || r.MyQuote.Status != client.QuotePending {
			if err := b.quote(ctx, r); err != nil {
				return err
			}
		}
	}
	for id := range b.rfqs {
		if !open[id] {
			b.forget(id)
		}
	}
	return nil
}

// fund accepts every deposit and draws from the faucet when a holding runs low.
func (b *bot) fund(ctx context.Context) error {
	if err := b.acceptDeposits(ctx); err != nil {
		return err
	}
	if time.Since(b.lastDraw) < b.cfg.faucetEvery {
		return nil
	}
	info, err := b.c.FaucetInfo(ctx)
	if err != nil || !info.Enabled || info.RetryAfterSeconds > 0 {
		return err
	}
	low := b.cfg.lowWater
	if low == nil {
		low = map[string]money.Decimal{}
		for _, t := range info.Drip {
			if amt, err := money.Parse(string(t.Amount)); err == nil {
				low[strings.ToLower(t.Symbol)] = amt.MulDown(money.MustParse("0.5"))
			}
		}
	}
	free, err := b.free(ctx)
	if err != nil {
		return err
	}
	var short []string
	for sym, mark := range low {
		if free[sym].Cmp(mark) < 0 {
			short = append(short, sym)
		}
	}
	if len(short) == 0 {
		return nil
	}
	b.lastDraw = time.Now()
	draw, err := b.c.Faucet(ctx)
	if err != nil {
		return err
	}
	b.metrics.faucetDraws.Add(1)
	b.log.Info("faucet draw", "low", strings.Join(short, ","), "sent", len(draw.Sent))
	// The deposits are in the inbox by the time the draw answers; accept them now.
	return b.acceptDeposits(ctx)
}

// acceptDeposits accepts every deposit in the inbox and signs the accepts.
func (b *bot) acceptDeposits(ctx context.Context) error {
	in, err := b.c.IncomingTransfers(ctx)
	if err != nil {
		return err
	}
	for _, tr := range in {
		acts, err := b.c.AcceptTransfer(ctx, tr.CID)
		if err != nil {
			return err
		}
		if err := b.sign(ctx, acts); err != nil {
			return err
		}
		b.metrics.depositsAccepted.Add(1)
		b.log.Info("deposit accepted", "symbol", tr.Symbol, "amount", string(tr.Amount), "from", tr.Sender)
	}
	return nil
}

// checkStatus asks the desk whether it sees the bot invitable; two misses in a row while
// the stream believes it is connected recycle the stream.
func (b *bot) checkStatus(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	st, err := b.c.Status(ctx)
	if err != nil {
		return err
	}
	if st.Invitable || !b.connected {
		b.notSeen = 0
		return nil
	}
	b.notSeen++
	if b.notSeen >= 2 {
		return errRecycle
	}
	return nil
}
