package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// Names of the latency histograms.
const (
	callCreateRFQ    = "POST /rfq"
	callSubmitQuote  = "POST /maker/quotes"
	callExecMaker    = "POST /tx/execute (maker)"
	callAccept       = "POST /quote/{id}/accept"
	callExecTaker    = "POST /tx/execute (taker)"
	lagFirstQuote    = "rfq → first quote live"
	lagAcceptSettled = "accept → trade.settled"
	lagLifecycle     = "lifecycle"
	lagFanout        = "rfq.created delivery"
)

// Quantities: load RFQs trade loadQty; the fan-out RFQ carries fanoutQty, which makers
// recognise and do not quote.
const (
	loadQty   = "0.001"
	fanoutQty = "0.0007"
	price     = "100000"
)

// httpClient is shared by every party: enough idle connections per host for every
// concurrent caller, so no call pays a TCP handshake.
func httpClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// party is a registered, funded party with an open stream.
type party struct {
	c      *client.Client
	stream *client.Stream
}

// newParty registers a party, funds it from the faucet (accepting and signing every
// deposit) and opens its stream; it returns once the desk reports it invitable.
func newParty(ctx context.Context, base, name string, hc *http.Client) (*party, error) {
	c, err := client.New(base, client.WithHTTPClient(hc))
	if err != nil {
		return nil, err
	}
	if _, err := c.Register(ctx, name); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := c.Faucet(ctx); err != nil {
		return nil, fmt.Errorf("%s: faucet: %w", name, err)
	}
	in, err := c.IncomingTransfers(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: incoming: %w", name, err)
	}
	for _, tr := range in {
		acts, err := c.AcceptTransfer(ctx, tr.CID)
		if err != nil {
			return nil, fmt.Errorf("%s: accept deposit: %w", name, err)
		}
		if err := signOK(ctx, c, acts); err != nil {
			return nil, fmt.Errorf("%s: sign deposit: %w", name, err)
		}
	}
	p := &party{c: c}
	p.stream = c.Subscribe(context.Background(), &client.StreamOptions{Buffer: 4096, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
	for {
		st, err := c.Status(ctx)
		if err == nil && st.Invitable {
			return p, nil
		}
		select {
		case <-ctx.Done():
			p.stream.Close()
			return nil, fmt.Errorf("%s: never invitable: %w", name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// signOK signs and executes actions and reports the first entry that did not execute.
func signOK(ctx context.Context, c *client.Client, acts []client.SignAction) error {
	if len(acts) == 0 {
		return nil
	}
	res, err := c.SignAndExecute(ctx, acts)
	if err != nil {
		return err
	}
	return client.FirstFailure(res)
}

// setup registers parties n at a time in parallel.
func setup(ctx context.Context, base, prefix string, count, parallel int, hc *http.Client) ([]*party, error) {
	out := make([]*party, count)
	errs := make([]error, count)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range count {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = newParty(ctx, base, fmt.Sprintf("%s %d", prefix, i), hc)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// runMaker quotes every open load RFQ it is invited to at a fixed price and signs the
// quote's allocations, with `workers` quotes in flight, until ctx ends.
func runMaker(ctx context.Context, m *party, rec *recorder, workers int) {
	jobs := make(chan string, 1024)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				var q *client.QuoteWithActions
				err := rec.time(callSubmitQuote, func() (err error) {
					q, err = m.c.SubmitQuote(qctx, client.QuoteRequest{RFQID: id, Price: price})
					return err
				})
				if err == nil {
					_ = rec.time(callExecMaker, func() error { return signOK(qctx, m.c, q.Actions) })
				}
				cancel()
			}
		}()
	}
	defer wg.Wait()
	defer close(jobs)
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-m.stream.Events():
			if !ok {
				return
			}
			if e.Type != client.EventRFQCreated {
				continue
			}
			r, err := e.RFQCreated()
			if err != nil || !r.Open || r.Qty == fanoutQty {
				continue
			}
			select {
			case jobs <- r.RFQID:
			default:
				rec.fail("maker queue full")
			}
		}
	}
}

// errSkipped is a lifecycle that ended without a trade (a refusal or a failed
// settlement); it is counted, not fatal.
var errSkipped = errors.New("lifecycle ended without a trade")

// taker runs lifecycles one at a time.
type taker struct {
	p      *party
	makers []string // hints to invite from, round robin
	next   int
	invite int
	n      int
}

// await reads the taker's stream until match accepts an event or the wait ends.
func (t *taker) await(ctx context.Context, match func(client.Event) bool) (client.Event, error) {
	for {
		select {
		case <-ctx.Done():
			return client.Event{}, ctx.Err()
		case e, ok := <-t.p.stream.Events():
			if !ok {
				return client.Event{}, fmt.Errorf("taker stream ended: %v", t.p.stream.Err())
			}
			if match(e) {
				return e, nil
			}
		}
	}
}

// lifecycle creates an RFQ to `invite` makers, accepts the first quote that goes live,
// signs the taker's allocations and waits for trade.settled.
func (t *taker) lifecycle(ctx context.Context, rec *recorder) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	invited := make([]string, 0, t.invite)
	for range t.invite {
		invited = append(invited, t.makers[t.next%len(t.makers)])
		t.next++
	}
	t.n++
	dir := client.Sell
	if t.n%2 == 0 {
		dir = client.Buy // alternate so that balances stay level
	}
	var rfq *client.RFQ
	if err := rec.time(callCreateRFQ, func() (err error) {
		rfq, err = t.p.c.CreateRFQ(ctx, client.CreateRFQRequest{Direction: dir, Qty: loadQty, Base: "cbtc", Quote: "usdcx",
			InvitedMakers: invited, TTLSeconds: 60})
		return err
	}); err != nil {
		return fmt.Errorf("%w: create rfq: %v", errSkipped, err)
	}
	e, err := t.await(ctx, func(e client.Event) bool {
		if e.Type != client.EventQuoteCreated {
			return false
		}
		q, err := e.QuoteCreated()
		return err == nil && q.RFQID == rfq.RFQID
	})
	if err != nil {
		rec.fail("no live quote")
		return fmt.Errorf("%w: no live quote: %v", errSkipped, err)
	}
	rec.add(lagFirstQuote, time.Since(start))
	q, _ := e.QuoteCreated()
	accepted := time.Now()
	var tr *client.TradeWithActions
	if err := rec.time(callAccept, func() (err error) {
		tr, err = t.p.c.AcceptQuote(ctx, q.QuoteID)
		return err
	}); err != nil {
		return fmt.Errorf("%w: accept: %v", errSkipped, err)
	}
	if err := rec.time(callExecTaker, func() error { return signOK(ctx, t.p.c, tr.Actions) }); err != nil {
		return fmt.Errorf("%w: taker signs: %v", errSkipped, err)
	}
	e, err = t.await(ctx, func(e client.Event) bool {
		switch e.Type {
		case client.EventTradeSettled:
			s, err := e.TradeSettled()
			return err == nil && s.TradeID == tr.TradeID
		case client.EventTradeFailed:
			f, err := e.TradeFailed()
			return err == nil && f.TradeID == tr.TradeID
		}
		return false
	})
	if err != nil {
		rec.fail("no outcome")
		return fmt.Errorf("%w: no outcome: %v", errSkipped, err)
	}
	if e.Type == client.EventTradeFailed {
		rec.fail("trade.failed")
		return errSkipped
	}
	rec.add(lagAcceptSettled, time.Since(accepted))
	rec.add(lagLifecycle, time.Since(start))
	return nil
}

// PhaseResult is one load phase.
type PhaseResult struct {
	Name string `json:"name"`
	// TargetRate is the RFQs per second the phase offered (0: closed loop, as fast as the
	// takers go).
	TargetRate     float64            `json:"target_rate"`
	DurationS      float64            `json:"duration_s"`
	Settled        int64              `json:"settled"`
	SettledPerS    float64            `json:"settled_per_s"`
	Skipped        int64              `json:"skipped"`
	NotOffered     int64              `json:"not_offered"` // paced tickets no taker was free for
	Calls          map[string]Summary `json:"calls"`
	Errors         map[string]int     `json:"errors,omitempty"`
	MaxAPICallP99  float64            `json:"max_api_call_p99_ms"`
	MaxAPICallName string             `json:"max_api_call_p99_name"`
	// CPU is the CPU time both processes used during the phase, per settled trade.
	CPU *CPUUse `json:"cpu,omitempty"`
	// Syscalls are the desk's system calls during the phase (when the load generator
	// started the desk).
	Syscalls *SyscallUse `json:"syscalls,omitempty"`
}

// apiCalls are the histograms that are single API calls (for MaxAPICallP99).
var apiCalls = []string{callCreateRFQ, callSubmitQuote, callExecMaker, callAccept, callExecTaker}

// runPhase drives the takers for at most d and at most maxTrades settled trades. rate 0
// runs closed loop; otherwise a pacer offers rate lifecycles per second to free takers
// (a ticket no taker is free for is counted as not offered).
func runPhase(ctx context.Context, name string, takers []*taker, makers []*party, d time.Duration, maxTrades int64, rate float64, cpu cpuMeter) PhaseResult {
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mwg sync.WaitGroup
	for _, m := range makers {
		mwg.Add(1)
		go func() { defer mwg.Done(); runMaker(ctx, m, rec, 4) }()
	}
	var notOffered atomic.Int64
	tickets := pacer(ctx, rate, len(takers), &notOffered)
	var settled, skipped atomic.Int64
	var twg sync.WaitGroup
	start, cpuStart := time.Now(), cpu.sample()
	for _, t := range takers {
		twg.Add(1)
		go func() {
			defer twg.Done()
			for ctx.Err() == nil && settled.Load() < maxTrades {
				if !takeTicket(ctx, tickets) {
					return
				}
				if err := t.lifecycle(ctx, rec); err != nil {
					if ctx.Err() == nil {
						skipped.Add(1)
					}
					continue
				}
				if settled.Add(1) >= maxTrades {
					cancel()
				}
			}
		}()
	}
	twg.Wait()
	elapsed, cpuEnd := time.Since(start), cpu.sample()
	cancel()
	mwg.Wait()
	calls, errs := rec.summaries()
	r := PhaseResult{Name: name, TargetRate: rate, DurationS: elapsed.Seconds(), Settled: settled.Load(),
		SettledPerS: float64(settled.Load()) / elapsed.Seconds(), Skipped: skipped.Load(), NotOffered: notOffered.Load(),
		Calls: calls, Errors: errs, CPU: cpuUse(cpuStart, cpuEnd, settled.Load())}
	for _, c := range apiCalls {
		if s := calls[c]; s.N > 0 && s.P99 > r.MaxAPICallP99 {
			r.MaxAPICallP99, r.MaxAPICallName = s.P99, c
		}
	}
	// Drain what the takers' streams still hold so the next phase starts clean.
	for _, t := range takers {
		for len(t.p.stream.Events()) > 0 {
			<-t.p.stream.Events()
		}
	}
	return r
}

// FanoutResult is the delivery of one RFQ's rfq.created to every invited maker, measured
// from just before POST /rfq to the frame's arrival at each maker's stream.
type FanoutResult struct {
	Invited int     `json:"invited"`
	Rounds  int     `json:"rounds"`
	Summary Summary `json:"delivery"`
	Missing int     `json:"missing"`
}

// runFanout creates `rounds` RFQs each inviting every maker (at most invite), with a
// quantity the makers do not quote, and cancels each after its deliveries arrived.
func runFanout(ctx context.Context, tk *party, makers []*party, rounds int) FanoutResult {
	res := FanoutResult{Invited: len(makers), Rounds: rounds}
	hints := make([]string, len(makers))
	for i, m := range makers {
		hints[i] = m.c.Hint()
	}
	var samples []time.Duration
	for range rounds {
		type arrival struct {
			rfq string
			at  time.Time
		}
		got := make(chan arrival, len(makers))
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var wg sync.WaitGroup
		for _, m := range makers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-rctx.Done():
						return
					case e := <-m.stream.Events():
						if e.Type != client.EventRFQCreated {
							continue
						}
						if r, err := e.RFQCreated(); err == nil && r.Qty == fanoutQty {
							got <- arrival{r.RFQID, time.Now()}
							return
						}
					}
				}
			}()
		}
		start := time.Now()
		rfq, err := tk.c.CreateRFQ(rctx, client.CreateRFQRequest{Direction: client.Sell, Qty: fanoutQty, Base: "cbtc", Quote: "usdcx",
			InvitedMakers: hints, TTLSeconds: 60})
		if err != nil {
			cancel()
			wg.Wait()
			res.Missing += len(makers)
			continue
		}
		wg.Wait()
		cancel()
		close(got)
		n := 0
		for a := range got {
			if a.rfq == rfq.RFQID {
				samples = append(samples, a.at.Sub(start))
				n++
			}
		}
		res.Missing += len(makers) - n
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		_ = tk.c.CancelRFQ(cctx, rfq.RFQID)
		ccancel()
	}
	res.Summary = summarize(samples)
	return res
}

// takeTicket waits for the next of pacer's tickets (at once without pacing, tickets nil)
// and reports false if ctx ended first.
func takeTicket(ctx context.Context, tickets <-chan struct{}) bool {
	if tickets == nil {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-tickets:
		return true
	}
}

// pacer offers rate tickets per second on the channel it returns (nil when rate is 0: no
// pacing) until ctx ends; a ticket no worker is free to take is counted in missed.
func pacer(ctx context.Context, rate float64, workers int, missed *atomic.Int64) <-chan struct{} {
	if rate <= 0 {
		return nil
	}
	tickets := make(chan struct{}, workers)
	go func() {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case tickets <- struct{}{}:
				default:
					if missed != nil {
						missed.Add(1)
					}
				}
			}
		}
	}()
	return tickets
}
