package machine

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// QOps is the operator's view of the whole desk, which the admin listener serves
// (cmd/desk's /ops/state). It is no party's read: Read refuses it like any unknown query,
// and only ReadOps answers it (the loop calls it for its ReadOps, never for a keyed Read).
type QOps struct{ Limit int }

func (QOps) queryName() string { return "ops" }

// OpsDefaultLimit and OpsMaxLimit bound each list of the operator's view.
const (
	OpsDefaultLimit = 50
	OpsMaxLimit     = 200
)

// OpsView is the operator's view of the desk at one moment: how many things of each kind
// it holds, and the newest of them, each list at most the query's limit long. It names
// parties by their hints and carries no secret (no API key hash, no public key, no
// signature).
type OpsView struct {
	Now       time.Time  `json:"now"`
	Counts    OpsCounts  `json:"counts"`
	RFQs      []OpsRFQ   `json:"rfqs"`      // newest first
	Quotes    []OpsQuote `json:"quotes"`    // newest first
	Trades    []OpsTrade `json:"trades"`    // newest accepted first
	SignQueue []OpsSign  `json:"signQueue"` // oldest first: the order their parties see them
	Makers    []OpsMaker `json:"makers"`    // online parties, by hint
}

// OpsCounts are the sizes of the desk's tables, whole (the lists are cut at the limit).
type OpsCounts struct {
	Parties        int `json:"parties"`
	MakersOnline   int `json:"makersOnline"`
	RFQs           int `json:"rfqs"` // retained, open or closed
	RFQsOpen       int `json:"rfqsOpen"`
	Quotes         int `json:"quotes"`
	QuotesLive     int `json:"quotesLive"` // funding, live or settling
	Trades         int `json:"trades"`
	TradesInFlight int `json:"tradesInFlight"` // allocating or settling on the ledger
	SignQueue      int `json:"signQueue"`      // actions waiting for a signature or executing
	// LedgerCalls are the ledger calls in flight (or waiting to be sent again); HeldReplies
	// the requests whose answer waits on the ledger.
	LedgerCalls int `json:"ledgerCalls"`
	HeldReplies int `json:"heldReplies"`
	// CallRetries are the cleanup calls waiting to be sent again (callretry.go).
	CallRetries int `json:"callRetries"`
}

// OpsRFQ is one RFQ in the operator's view.
type OpsRFQ struct {
	ID        string        `json:"id"`
	State     State         `json:"state"`
	Taker     string        `json:"taker"`
	Direction Direction     `json:"direction"`
	Qty       money.Decimal `json:"qty"`
	Base      string        `json:"base"`
	Quote     string        `json:"quote"`
	Invited   int           `json:"invited"`
	Quotes    int           `json:"quotes"`
	CreatedAt time.Time     `json:"createdAt"`
	Deadline  time.Time     `json:"deadline"`
}

// OpsQuote is one quote in the operator's view.
type OpsQuote struct {
	ID         string        `json:"id"`
	State      State         `json:"state"`
	RFQ        string        `json:"rfq"`
	Maker      string        `json:"maker"`
	Price      money.Decimal `json:"price"`
	CreatedAt  time.Time     `json:"createdAt"`
	ValidUntil time.Time     `json:"validUntil"`
}

// OpsTrade is one trade in the operator's view.
type OpsTrade struct {
	ID         string        `json:"id"`
	State      State         `json:"state"`
	Taker      string        `json:"taker"`
	Maker      string        `json:"maker"`
	Direction  Direction     `json:"direction"`
	Qty        money.Decimal `json:"qty"`
	Base       string        `json:"base"`
	Quote      string        `json:"quote"`
	Price      money.Decimal `json:"price"`
	Fee        money.Decimal `json:"fee"`
	AcceptedAt time.Time     `json:"acceptedAt"`
	SettledAt  *time.Time    `json:"settledAt,omitempty"`
	UpdateID   string        `json:"updateId,omitempty"`
	FailReason string        `json:"failReason,omitempty"`
}

// OpsSign is one action of the sign queue.
type OpsSign struct {
	ID        string    `json:"id"`
	State     State     `json:"state"`
	Party     string    `json:"party"`
	Purpose   string    `json:"purpose"`
	Flow      FlowKind  `json:"flow"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// OpsMaker is a party online on the stream (a house maker's strategy counts as online).
type OpsMaker struct {
	Hint    string `json:"hint"`
	Sockets int    `json:"sockets"`
	House   bool   `json:"house"`
}

// ReadOps answers the operator's view at time now, each list cut at limit (0: the
// default; clamped to [1, OpsMaxLimit]). It never changes the desk. The desk's maps are
// walked only to collect and count: every list is then sorted by a total order (a time,
// then the unique id), so map order never decides the answer.
func ReadOps(d *Desk, now time.Time, limit int) OpsView {
	if limit <= 0 {
		limit = OpsDefaultLimit
	}
	limit = min(limit, OpsMaxLimit)
	if now.Before(d.Now) {
		now = d.Now
	}
	v := OpsView{Now: now, RFQs: []OpsRFQ{}, Quotes: []OpsQuote{}, Trades: []OpsTrade{}, SignQueue: []OpsSign{}, Makers: []OpsMaker{}}
	c := &v.Counts
	c.Parties, c.RFQs, c.Quotes, c.Trades = len(d.Parties), len(d.RFQs), len(d.Quotes), len(d.Trades)
	c.LedgerCalls, c.HeldReplies = len(d.Pending), len(d.Held)
	for _, dl := range d.Deadlines.Items {
		if _, waiting := d.Pending[dl.ID]; dl.Kind == DLCallRetry && waiting {
			c.CallRetries++
		}
	}

	rfqs := newestOf(limit, func(r *RFQ) (time.Time, string) { return r.CreatedAt, r.ID })
	for _, r := range d.RFQs {
		if r.State == RFQOpen {
			c.RFQsOpen++
		}
		rfqs.offer(r)
	}
	for _, r := range rfqs.items {
		v.RFQs = append(v.RFQs, OpsRFQ{ID: r.ID, State: r.State, Taker: d.hintOf(r.Taker), Direction: r.Direction,
			Qty: r.Qty, Base: r.Base, Quote: r.Quote, Invited: len(r.Invited), Quotes: len(r.Quotes),
			CreatedAt: r.CreatedAt, Deadline: r.Deadline})
	}

	quotes := newestOf(limit, func(q *Quote) (time.Time, string) { return q.CreatedAt, q.ID })
	for _, q := range d.Quotes {
		if q.State == QuoteFunding || q.State == QuoteLive || q.State == QuoteSettling {
			c.QuotesLive++
		}
		quotes.offer(q)
	}
	for _, q := range quotes.items {
		v.Quotes = append(v.Quotes, OpsQuote{ID: q.ID, State: q.State, RFQ: q.RFQ, Maker: d.hintOf(q.Maker),
			Price: q.Price, CreatedAt: q.CreatedAt, ValidUntil: q.ValidUntil})
	}

	trades := newestOf(limit, func(t *Trade) (time.Time, string) { return t.AcceptedAt, t.ID })
	for _, t := range d.Trades {
		if t.State == TradeAllocating || t.State == TradeSettling {
			c.TradesInFlight++
		}
		trades.offer(t)
	}
	for _, t := range trades.items {
		row := OpsTrade{ID: t.ID, State: t.State, Taker: d.hintOf(t.Taker), Maker: d.hintOf(t.Maker),
			Direction: t.Direction, Qty: t.Amounts.Qty, Base: t.Base, Quote: t.QuoteSym, Price: t.Price,
			Fee: t.Amounts.Fee, AcceptedAt: t.AcceptedAt, UpdateID: t.UpdateID, FailReason: t.FailReason}
		if !t.SettledAt.IsZero() {
			at := t.SettledAt
			row.SettledAt = &at
		}
		v.Trades = append(v.Trades, row)
	}

	var queue []*Action
	for _, x := range d.Actions {
		if (x.State == ActionPending || x.State == ActionExecuting) && x.ExpiresAt.After(now) {
			queue = append(queue, x)
		}
	}
	c.SignQueue = len(queue)
	slices.SortFunc(queue, func(a, b *Action) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), strings.Compare(a.ID, b.ID))
	})
	for _, x := range queue[:min(len(queue), limit)] {
		v.SignQueue = append(v.SignQueue, OpsSign{ID: x.ID, State: x.State, Party: d.hintOf(x.Party),
			Purpose: x.Purpose, Flow: x.Flow, CreatedAt: x.CreatedAt, ExpiresAt: x.ExpiresAt})
	}

	for _, id := range sortedKeys(d.Parties) {
		p := d.Parties[id]
		if p.Online <= 0 {
			continue
		}
		c.MakersOnline++
		if len(v.Makers) < limit {
			v.Makers = append(v.Makers, OpsMaker{Hint: p.Hint, Sockets: p.Online, House: p.House != ""})
		}
	}
	return v
}

// topK keeps the k newest of the items offered, newest first, by a key (a time, then a
// unique id breaking ties): a total order, so the order items are offered in (a map's)
// never decides the result. Offering n items costs about n comparisons once the k newest
// are in, and allocates only the k.
type topK[T any] struct {
	k     int
	key   func(T) (time.Time, string)
	items []T
}

func newestOf[T any](k int, key func(T) (time.Time, string)) *topK[T] {
	return &topK[T]{k: k, key: key, items: make([]T, 0, k)}
}

// newer compares a and b, newest first.
func (t *topK[T]) newer(a, b T) int {
	ta, ia := t.key(a)
	tb, ib := t.key(b)
	if c := tb.Compare(ta); c != 0 {
		return c
	}
	return strings.Compare(ib, ia)
}

// offer keeps x if it is among the k newest offered so far.
func (t *topK[T]) offer(x T) {
	if len(t.items) == t.k && t.newer(x, t.items[t.k-1]) >= 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(t.items, x, t.newer)
	if len(t.items) == t.k {
		t.items = t.items[:t.k-1]
	}
	t.items = slices.Insert(t.items, i, x)
}
