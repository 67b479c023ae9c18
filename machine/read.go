package machine

import (
	"sort"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Query is a read: it runs in the loop for consistency but changes nothing and is not
// journaled. Reads that need ledger data (balances, the deposit inbox) carry it, fetched
// by the loop for the caller that Caller resolved.
type Query interface {
	queryName() string
}

// Queries, one per GET endpoint.
type (
	// QInstruments is GET /instruments.
	QInstruments struct{}
	// QMakerStatus is GET /maker/status.
	QMakerStatus struct{}
	// QDesk is GET /desk.
	QDesk struct{}
	// QConfig is GET /config.
	QConfig struct{}
	// QRfqMine is GET /rfq/mine.
	QRfqMine struct{}
	// QRfqIncoming is GET /rfq/incoming.
	QRfqIncoming struct{}
	// QRfqHistory is GET /rfq-history?limit=N.
	QRfqHistory struct{ Limit int }
	// QTrades is GET /trades?limit=N: settled trades in either role.
	QTrades struct{ Limit int }
	// QMakerTrades is GET /maker/trades?limit=N: settled trades as maker.
	QMakerTrades struct{ Limit int }
	// QTxPending is GET /tx/pending.
	QTxPending struct{}
	// QFaucetInfo is GET /faucet.
	QFaucetInfo struct{}
	// QReferencePrice is GET /maker/reference-price.
	QReferencePrice struct{ Base, Quote string }
	// QBalances is GET /balances and GET /wallet/holdings, with the caller's holdings.
	QBalances struct{ Holdings []LedgerHolding }
	// QIncoming is GET /wallet/incoming, with the transfers addressed to the caller.
	QIncoming struct{ Transfers []LedgerTransfer }
	// QProtection is GET /maker/protection: the caller's maker protection.
	QProtection struct{}
)

func (QInstruments) queryName() string    { return "instruments" }
func (QMakerStatus) queryName() string    { return "maker.status" }
func (QDesk) queryName() string           { return "desk" }
func (QConfig) queryName() string         { return "config" }
func (QRfqMine) queryName() string        { return "rfq.mine" }
func (QRfqIncoming) queryName() string    { return "rfq.incoming" }
func (QRfqHistory) queryName() string     { return "rfq.history" }
func (QTrades) queryName() string         { return "trades" }
func (QMakerTrades) queryName() string    { return "maker.trades" }
func (QTxPending) queryName() string      { return "tx.pending" }
func (QFaucetInfo) queryName() string     { return "faucet.info" }
func (QReferencePrice) queryName() string { return "reference-price" }
func (QBalances) queryName() string       { return "balances" }
func (QIncoming) queryName() string       { return "incoming" }
func (QProtection) queryName() string     { return "maker.protection" }

// LedgerHolding is a holding as the ledger reports it: registry instrument id, amount and
// whether a live lock holds it.
type LedgerHolding struct {
	Instrument string        `json:"instrument"`
	Amount     money.Decimal `json:"amount"`
	Locked     bool          `json:"locked"`
}

// LedgerTransfer is a pending transfer instruction as the ledger reports it.
type LedgerTransfer struct {
	CID        string        `json:"cid"`
	Sender     string        `json:"sender"`
	Instrument string        `json:"instrument"`
	Amount     money.Decimal `json:"amount"`
}

// Caller resolves the party id of an API key hash.
func (d *Desk) Caller(keyHash string) (string, bool) {
	p, ok := d.partyByKey(keyHash)
	if !ok {
		return "", false
	}
	return p.ID, true
}

// Read answers a query for the caller identified by keyHash at time now. It never changes
// the desk.
func Read(d *Desk, now time.Time, keyHash string, q Query) Reply {
	p, ok := d.partyByKey(keyHash)
	if !ok {
		return Reply{Status: 401, Err: errUnknownKey}
	}
	if now.Before(d.Now) {
		now = d.Now
	}
	r := reader{d: d, p: p, now: now}
	switch q := q.(type) {
	case QInstruments:
		return ok200(r.instruments())
	case QMakerStatus:
		return ok200(r.status())
	case QDesk:
		return ok200(r.desk())
	case QConfig:
		return ok200(r.config())
	case QRfqMine:
		return ok200(r.rfqMine())
	case QRfqIncoming:
		return ok200(r.rfqIncoming())
	case QRfqHistory:
		return r.limited(q.Limit, func(n int) any { return r.history(n) })
	case QTrades:
		return r.limited(q.Limit, func(n int) any { return r.trades(n, false) })
	case QMakerTrades:
		return r.limited(q.Limit, func(n int) any { return r.trades(n, true) })
	case QTxPending:
		return ok200(r.pending())
	case QFaucetInfo:
		return ok200(r.faucetInfo())
	case QReferencePrice:
		return r.referencePrice(q)
	case QBalances:
		return ok200(r.balances(q.Holdings))
	case QIncoming:
		return ok200(r.incoming(q.Transfers))
	case QScorecard:
		return r.scorecard(q)
	case QProtection:
		return ok200(d.protectionDTO(p.ID, now))
	}
	return Reply{Status: 404, Err: notFound("unknown query")}
}

func ok200(body any) Reply { return Reply{Status: 200, Body: body} }

// DefaultLimit and MaxLimit bound the `limit` query of the list endpoints.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

type reader struct {
	d   *Desk
	p   *Party
	now time.Time
}

// limited validates a limit (0 means the default) and runs the read.
func (r reader) limited(limit int, read func(int) any) Reply {
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return Reply{Status: 400, Err: badRequest("limit must be between 1 and %d", MaxLimit)}
	}
	return ok200(read(limit))
}

func (r reader) instruments() []InstrumentDTO {
	out := make([]InstrumentDTO, 0, len(r.d.Cfg.Instruments))
	for _, in := range r.d.Cfg.Instruments {
		out = append(out, InstrumentDTO{Symbol: in.Symbol, DisplaySymbol: in.Display, Decimals: in.Decimals, LogoURL: in.LogoURL})
	}
	return out
}

func (r reader) status() MakerStatusDTO {
	return MakerStatusDTO{
		PartyID: r.p.ID, Hint: r.p.Hint, Invitable: r.p.Online > 0,
		PendingActions: len(r.pendingActions()), ServiceActivated: true,
	}
}

func (r reader) desk() DeskDTO {
	out := DeskDTO{FeeBps: r.d.Cfg.baseFeeBps(), FeeTiers: []FeeTierDTO{}, Makers: []string{}}
	var shown []string // the listed makers' party ids
	tiers := append([]FeeTier(nil), r.d.Cfg.FeeTiers...)
	sort.SliceStable(tiers, func(i, j int) bool { return tiers[i].MinNotionalUSD.Cmp(tiers[j].MinNotionalUSD) < 0 })
	for _, t := range tiers {
		out.FeeTiers = append(out.FeeTiers, FeeTierDTO(t))
	}
	for _, id := range sortedKeys(r.d.Parties) {
		if p := r.d.Parties[id]; p.Online > 0 && p.ID != r.p.ID {
			out.Makers = append(out.Makers, p.Hint)
			shown = append(shown, p.ID)
		}
	}
	sort.Strings(out.Makers)
	out.MakerStats = r.d.makerStats(shown)
	return out
}

func (r reader) config() ConfigDTO {
	c := &r.d.Cfg
	return ConfigDTO{
		Network: c.Network, MinNotionalUSD: c.MinNotionalUSD,
		QuoteLifetimeSeconds: int(c.QuoteLifetime / time.Second),
		MinTTLSeconds:        int(c.MinTTL / time.Second), MaxTTLSeconds: int(c.MaxTTL / time.Second),
		ActionLifetimeSeconds: int(c.ActionLifetime / time.Second), MaxBatch: MaxBatch,
		StreamRetentionEvents: c.StreamRetentionEvents, StreamRetentionSeconds: int(c.StreamRetention / time.Second),
	}
}

// rfqsWhere lists the caller's RFQs (as taker or invited maker; open, or closed within
// the readability period) that keep, oldest first. The party's index map is walked in Go's
// order only to collect: sortByTime is a total order (creation time, then the unique id),
// so the walk never decides the result, and a read costs a scan of the party's own RFQs.
func (r reader) rfqsWhere(keep func(*RFQ) bool) []*RFQ {
	index := r.d.rfqsOf(r.p.ID)
	out := make([]*RFQ, 0, len(index))
	for _, x := range index {
		if keep(x) {
			out = append(out, x)
		}
	}
	sortByTime(out)
	return out
}

// stringArena hands out string slices cut from one allocation, so that a list read
// allocates its DTOs' small slices (invited makers, anchors) once rather than per row.
// Every slice it hands out has its capacity cut to its length, so an append to one never
// writes into the next. A nil arena allocates each slice on its own.
type stringArena struct{ buf []string }

// newStringArena makes an arena for n strings in all.
func newStringArena(n int) *stringArena { return &stringArena{buf: make([]string, 0, n)} }

// take returns a slice of n strings (non-nil, so that an empty one encodes as []).
func (a *stringArena) take(n int) []string {
	if a == nil || len(a.buf)+n > cap(a.buf) {
		return make([]string, n)
	}
	start := len(a.buf)
	a.buf = a.buf[:start+n]
	return a.buf[start : start+n : start+n]
}

// rfqMine is GET /rfq/mine. It walks the taker's RFQs twice: once to size the DTOs'
// slices and collect the anchored quotes, once to fill them, so that a list of a hundred
// RFQs costs a handful of allocations rather than several per row.
func (r reader) rfqMine() []RfqDTO {
	rfqs := r.rfqsWhere(func(x *RFQ) bool { return x.Taker == r.p.ID })
	var anchored []*Quote // every RFQ's anchored quotes, in RFQ order then the RFQ's order
	counts := make([]int, len(rfqs))
	strs := 0
	for i, x := range rfqs {
		strs += len(x.Invited)
		for _, qid := range x.Quotes {
			if q := r.d.Quotes[qid]; q != nil && (q.Anchored || (plantedBuild && plantedOn("mine-shows-funding"))) {
				anchored = append(anchored, q)
				counts[i]++
				strs += len(q.Allocations)
			}
		}
	}
	arena := newStringArena(strs)
	quotes := make([]QuoteDTO, len(anchored))
	for i, q := range anchored {
		quotes[i] = r.d.quoteDTOFrom(q, arena)
	}
	lists := make([][]QuoteDTO, len(rfqs)) // what each DTO's Quotes points at
	out := make([]RfqDTO, len(rfqs))
	for i, x := range rfqs {
		lists[i], quotes = quotes[:counts[i]:counts[i]], quotes[counts[i]:]
		out[i] = r.d.rfqDTOFrom(x, arena)
		out[i].Quotes = &lists[i]
		declines := r.d.declineDTOs(x)
		out[i].Declines = &declines
	}
	return out
}

// rfqIncoming is GET /rfq/incoming, built as rfqMine is.
func (r reader) rfqIncoming() []IncomingRfqDTO {
	rfqs := r.rfqsWhere(func(x *RFQ) bool { return x.invited(r.p.ID) })
	mine := make([]*Quote, len(rfqs)) // the caller's recorded quote on each, or nil
	strs, quotes := 0, 0
	for i, x := range rfqs {
		strs += len(x.Invited)
		if q := r.d.makerQuoteOn(x, r.p.ID); q != nil && q.ReqSeq == 0 {
			mine[i] = q
			quotes++
			strs += len(q.Allocations)
		}
	}
	arena := newStringArena(strs)
	dtos := make([]QuoteDTO, 0, quotes)
	out := make([]IncomingRfqDTO, len(rfqs))
	for i, x := range rfqs {
		out[i].RfqDTO = r.d.rfqDTOFrom(x, arena)
		if q := mine[i]; q != nil {
			dtos = append(dtos, r.d.quoteDTOFrom(q, arena))
			if q.State == QuoteRevoked {
				dtos[len(dtos)-1].RevokeReason = q.RevokeReason // the maker's own view only
			}
			out[i].MyQuote = &dtos[len(dtos)-1]
		}
	}
	return out
}

func (r reader) history(limit int) []RfqHistoryDTO {
	out := []RfqHistoryDTO{}
	for i := len(r.p.History) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, r.p.History[i].dto())
	}
	return out
}

func (r reader) trades(limit int, asMaker bool) []TradeDTO {
	out := []TradeDTO{}
	for i := len(r.p.Trades) - 1; i >= 0 && len(out) < limit; i-- {
		t, ok := r.d.Trades[r.p.Trades[i]]
		if !ok || (asMaker && t.Maker != r.p.ID) {
			continue
		}
		out = append(out, r.d.tradeDTO(t))
	}
	return out
}

// pendingActions are the caller's actions waiting on its signature, oldest first.
func (r reader) pendingActions() []*Action {
	var out []*Action
	for _, x := range r.d.Actions { // collected only: the sort below is a total order
		if x.Party == r.p.ID && x.ExpiresAt.After(r.now) {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (r reader) pending() ActionsDTO {
	out := ActionsDTO{Actions: []SignActionDTO{}}
	for _, x := range r.pendingActions() {
		out.Actions = append(out.Actions, x.dto())
	}
	return out
}

func (r reader) faucetInfo() FaucetInfoDTO {
	out := FaucetInfoDTO{Drip: []FaucetSent{}}
	if !r.d.faucetArmed() {
		return out
	}
	out.Enabled = true
	if next, ok := r.d.FaucetNext[r.p.ID]; ok && next.After(r.now) {
		out.RetryAfterSeconds = int((next.Sub(r.now) + time.Second - 1) / time.Second)
	}
	for _, in := range r.d.faucetInstruments() {
		out.Drip = append(out.Drip, FaucetSent{Symbol: in.Symbol, DisplaySymbol: in.Display, Amount: in.FaucetAmount})
	}
	return out
}

func (r reader) referencePrice(q QReferencePrice) Reply {
	base, ok := r.d.Cfg.instrument(q.Base)
	if !ok {
		return Reply{Status: 400, Err: badRequest("%s", r.d.Cfg.unknownInstrument(q.Base))}
	}
	quote, ok := r.d.Cfg.instrument(q.Quote)
	if !ok {
		return Reply{Status: 400, Err: badRequest("%s", r.d.Cfg.unknownInstrument(q.Quote))}
	}
	price, err := base.USDPrice.QuoHalfEven(quote.USDPrice)
	if err != nil || price.Sign() <= 0 {
		return ok200(ReferencePriceDTO{})
	}
	return ok200(ReferencePriceDTO{Price: &price})
}

// symbolsOf names a ledger instrument on the wire: its catalog symbol and display form, or
// its raw registry id in both for an instrument that left the catalog.
func (d *Desk) symbolsOf(registryID string) (string, string) {
	if in, ok := d.Cfg.instrumentByRegistryID(registryID); ok {
		return in.Symbol, in.Display
	}
	return registryID, registryID
}

// balances sums the caller's free holdings per instrument, catalog order first, then
// instruments that left the catalog by registry id.
func (r reader) balances(hs []LedgerHolding) BalancesDTO {
	totals := map[string]money.Decimal{}
	for _, h := range hs {
		if !h.Locked {
			totals[h.Instrument] = totals[h.Instrument].Add(h.Amount)
		}
	}
	out := BalancesDTO{Party: r.p.ID, Holdings: []HoldingDTO{}}
	add := func(id string) {
		if amt, ok := totals[id]; ok && amt.Sign() > 0 {
			sym, disp := r.d.symbolsOf(id)
			out.Holdings = append(out.Holdings, HoldingDTO{Symbol: sym, DisplaySymbol: disp, Amount: amt})
		}
		delete(totals, id)
	}
	for _, in := range r.d.Cfg.Instruments {
		add(in.RegistryID)
	}
	for _, id := range sortedKeys(totals) {
		add(id)
	}
	return out
}

func (r reader) incoming(ts []LedgerTransfer) IncomingDTO {
	out := IncomingDTO{Transfers: []IncomingTransferDTO{}}
	for _, t := range ts {
		sym, disp := r.d.symbolsOf(t.Instrument)
		out.Transfers = append(out.Transfers, IncomingTransferDTO{
			CID: t.CID, Symbol: sym, DisplaySymbol: disp, Amount: t.Amount,
			Sender: r.d.hintOf(t.Sender), InstrumentID: t.Instrument,
		})
	}
	return out
}
