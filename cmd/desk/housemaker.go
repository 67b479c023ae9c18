package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/strategy"
)

// houseSocketBase is the first stream socket id reserved for the in-desk house makers. The
// transport numbers real sockets upward from 1 and never comes near it.
const houseSocketBase = uint64(1) << 62

// houseDesk is what a house maker needs of the desk loop.
type houseDesk interface {
	Do(ctx context.Context, cmd machine.Command_) (machine.Reply, error)
	Read(ctx context.Context, keyHash string, q machine.Query) (machine.Reply, error)
	OpenSocket(ctx context.Context, socket uint64, keyHash string, cancelOnDisconnect bool) error
	CloseSocket(ctx context.Context, socket uint64) error
}

// houseMetrics are a house maker's counters, shown on the admin /metrics.
type houseMetrics struct {
	sent, refused, skipped, pokesCoalesced atomic.Uint64
}

// houseMaker is a desk-signed maker the desk runs itself with the reference strategy. It
// holds a reserved stream socket open (so the machine counts it online and takers can
// invite it) and, whenever an event reaches its party or a second passes, quotes every open
// RFQ it is invited to that has no pending quote of its own: the same strategy as
// cmd/makerbot, over the loop instead of the wire. Its quotes carry no actions: the desk
// submits the allocations, and the quote anchors when they land.
type houseMaker struct {
	hint, party, keyHash string
	socket               uint64
	params               strategy.Params
	desk                 houseDesk
	log                  *slog.Logger
	// poke wakes the maker; Deliver fills it without ever blocking (capacity 1: pokes
	// arriving while one is pending coalesce, since every round reads the whole state).
	poke    chan struct{}
	metrics houseMetrics
	// attempts remembers when each RFQ was last tried, so a refused or skipped RFQ is not
	// retried on every poke; it holds only RFQs of the last incoming list.
	attempts map[string]time.Time
}

// houseRetry is how long a house maker waits before trying an RFQ again.
const houseRetry = 2 * time.Second

// notify wakes the maker; it never blocks (it is called from the loop's Sink).
func (h *houseMaker) notify() {
	select {
	case h.poke <- struct{}{}:
	default:
		h.metrics.pokesCoalesced.Add(1)
	}
}

// open opens the maker's reserved socket: from then on the desk counts it online.
func (h *houseMaker) open(ctx context.Context) error {
	if err := h.desk.OpenSocket(ctx, h.socket, h.keyHash, false); err != nil {
		return fmt.Errorf("house maker %s: open its socket: %w", h.hint, err)
	}
	h.log.Info("house maker online", "hint", h.hint, "spreadBps", h.params.SpreadBps, "maxShareBps", h.params.MaxShareBps)
	return nil
}

// run quotes until ctx ends, then closes the maker's socket (opened by open).
func (h *houseMaker) run(ctx context.Context) {
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = h.desk.CloseSocket(closeCtx, h.socket)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		h.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-h.poke:
		case <-tick.C:
		}
	}
}

// round quotes every open RFQ the maker is invited to and has no pending quote on.
func (h *houseMaker) round(ctx context.Context) {
	rep, err := h.desk.Read(ctx, h.keyHash, machine.QRfqIncoming{})
	if err != nil || rep.Err != nil {
		h.logErr("house maker: read incoming RFQs", err, rep)
		return
	}
	rfqs, _ := rep.Body.([]machine.IncomingRfqDTO)
	now := time.Now()
	var free map[string]money.Decimal
	live := make(map[string]bool, len(rfqs))
	for _, r := range rfqs {
		live[r.RfqID] = true
		if !r.Open || !time.Time(r.Deadline).After(now) || (r.MyQuote != nil && r.MyQuote.Status == "pending") {
			continue
		}
		if at, ok := h.attempts[r.RfqID]; ok && now.Sub(at) < houseRetry {
			continue
		}
		h.attempts[r.RfqID] = now
		if free == nil {
			if free, err = h.freeHoldings(ctx); err != nil {
				h.log.Warn("house maker: read balances", "err", err)
				return
			}
		}
		if h.quote(ctx, r.RfqDTO, free) {
			free = nil // the quote locked funds: read them again for the next one
		}
	}
	for id := range h.attempts {
		if !live[id] {
			delete(h.attempts, id)
		}
	}
}

// quote prices one RFQ with the strategy and submits the quote; it reports whether a quote
// was recorded.
func (h *houseMaker) quote(ctx context.Context, r machine.RfqDTO, free map[string]money.Decimal) bool {
	rep, err := h.desk.Read(ctx, h.keyHash, machine.QReferencePrice{Base: r.Base, Quote: r.Quote})
	if err != nil || rep.Err != nil {
		h.logErr("house maker: reference price", err, rep)
		return false
	}
	var mid money.Decimal
	if p, _ := rep.Body.(machine.ReferencePriceDTO); p.Price != nil {
		mid = *p.Price
	}
	d, err := strategy.Decide(strategy.RFQ{Direction: string(r.Direction), Qty: r.Qty, Base: r.Base, Quote: r.Quote},
		mid, h.params, free)
	if err != nil {
		h.metrics.skipped.Add(1)
		h.log.Debug("house maker: skip", "rfq", r.RfqID, "reason", err)
		return false
	}
	rep, err = h.desk.Do(ctx, machine.SubmitQuote{Req: machine.Req{KeyHash: h.keyHash}, RFQID: r.RfqID, Price: d.Price})
	if err != nil || rep.Err != nil {
		h.metrics.refused.Add(1)
		h.logErr("house maker: quote refused", err, rep, "rfq", r.RfqID)
		return false
	}
	h.metrics.sent.Add(1)
	h.log.Debug("house maker: quoted", "rfq", r.RfqID, "price", d.Price.String())
	return true
}

// freeHoldings reads the maker's free holdings by lower-case symbol.
func (h *houseMaker) freeHoldings(ctx context.Context) (map[string]money.Decimal, error) {
	rep, err := h.desk.Read(ctx, h.keyHash, machine.QBalances{})
	if err != nil {
		return nil, err
	}
	if rep.Err != nil {
		return nil, errors.New(rep.Err.Message)
	}
	b, _ := rep.Body.(machine.BalancesDTO)
	out := make(map[string]money.Decimal, len(b.Holdings))
	for _, x := range b.Holdings {
		out[strings.ToLower(x.Symbol)] = x.Amount
	}
	return out, nil
}

// logErr logs a loop error or a refusal at the level it deserves: a stopping desk is
// quiet, a refusal (ordinary racing: the RFQ closed, a settlement in flight) is debug.
func (h *houseMaker) logErr(msg string, err error, rep machine.Reply, args ...any) {
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		h.log.Warn(msg, append(args, "err", err)...)
	case rep.Err != nil:
		h.log.Debug(msg, append(args, "status", rep.Status, "code", rep.Err.Code, "err", rep.Err.Message)...)
	}
}

// houseRouter hands each house maker the events addressed to its party. It is built
// before the loop delivers anything and never changes afterwards.
type houseRouter map[string]*houseMaker

// route wakes the house makers some of whose party's events are in out; it never blocks.
func (r houseRouter) route(out machine.Outputs) {
	for _, ev := range out.Events {
		if h := r[ev.Party]; h != nil && (ev.Socket == 0 || ev.Socket == h.socket) {
			h.notify()
		}
	}
}

// newHouseMakers builds a house maker for each [[house]] table with strategy = true whose
// party is in the desk configuration in force (the journaled one, whose key hashes count).
func newHouseMakers(fc fileConfig, cfg machine.Config, desk houseDesk, log *slog.Logger) []*houseMaker {
	var out []*houseMaker
	for _, hc := range fc.House {
		if !hc.Strategy {
			continue
		}
		var party *machine.HouseParty
		for i := range cfg.House {
			if cfg.House[i].Hint == hc.Name && cfg.House[i].Role == machine.HouseMaker {
				party = &cfg.House[i]
			}
		}
		if party == nil {
			log.Warn("house maker not in the journaled configuration (added after the desk's first start?): not run", "name", hc.Name)
			continue
		}
		out = append(out, &houseMaker{
			hint: party.Hint, party: party.PartyID, keyHash: party.KeyHash,
			socket: houseSocketBase + uint64(len(out)), params: hc.params(), desk: desk,
			log: log, poke: make(chan struct{}, 1), attempts: map[string]time.Time{},
		})
	}
	return out
}
