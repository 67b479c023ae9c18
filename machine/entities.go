package machine

import (
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Party is a registered maker, a house party, or an internal desk party.
type Party struct {
	ID          string    `json:"id"`
	Hint        string    `json:"hint"`
	DisplayName string    `json:"displayName"`
	PublicKey   []byte    `json:"publicKey,omitempty"` // nil for desk-signed parties
	KeyHash     string    `json:"keyHash,omitempty"`   // hex SHA-256 of the current API key
	House       HouseRole `json:"house,omitempty"`     // set for desk-signed house parties
	// Online counts the party's open stream sockets (plus one for a house maker's strategy).
	Online       int       `json:"online"`
	RegisteredAt time.Time `json:"registeredAt"`
	// Trades are the party's settled trade ids, newest last, bounded by HistoryRetention.
	Trades []string `json:"trades,omitempty"`
	// History are the party's history rows as taker, newest last, bounded likewise.
	History []HistoryRow `json:"history,omitempty"`
}

// deskSigned reports whether the desk signs this party's ledger commands.
func (p *Party) deskSigned() bool { return p.PublicKey == nil }

// Registration is a maker's self-registration between register/start and register/complete.
type Registration struct {
	ID          string       `json:"id"`
	State       State        `json:"state"`
	DisplayName string       `json:"displayName"`
	Hint        string       `json:"hint"`
	PublicKey   []byte       `json:"publicKey"`
	PartyID     string       `json:"partyId"`
	Topology    []TopologyTx `json:"topology"`
	ExpiresAt   time.Time    `json:"expiresAt"`
	// KeyHash is the hash of the API key the completing request will hand out.
	KeyHash string `json:"keyHash,omitempty"`
}

func (r *Registration) getState() State  { return r.State }
func (r *Registration) setState(s State) { r.State = s }

// Challenge is a one-shot key-rotation challenge for a party.
type Challenge struct {
	Text      string    `json:"text"`
	PartyID   string    `json:"partyId"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Socket is an open stream socket and the key hash it authenticated with.
type Socket struct {
	ID      uint64 `json:"id"`
	PartyID string `json:"partyId"`
	KeyHash string `json:"keyHash"`
	// CancelOnDisconnect marks a socket opened with ?cancelOnDisconnect=true: the party's
	// live quotes are revoked when it goes offline with this socket (cancel_on_disconnect.go).
	CancelOnDisconnect bool `json:"cancelOnDisconnect,omitempty"`
}

// Direction is the taker's side of an RFQ.
type Direction string

// Directions, from the taker's side: on SELL the taker sells the base for the quote instrument.
const (
	Sell Direction = "SELL"
	Buy  Direction = "BUY"
)

// RFQ is a taker's request for quotes.
type RFQ struct {
	ID            string        `json:"id"`
	State         State         `json:"state"`
	Taker         string        `json:"taker"` // party id
	Direction     Direction     `json:"direction"`
	Qty           money.Decimal `json:"qty"`
	Base          string        `json:"base"`  // catalog symbol
	Quote         string        `json:"quote"` // catalog symbol
	Deadline      time.Time     `json:"deadline"`
	Invited       []string      `json:"invited"` // party ids, in the order the taker listed them
	FeeBps        int           `json:"feeBps"`
	CreatedAt     time.Time     `json:"createdAt"`
	ClosedAt      time.Time     `json:"closedAt"`
	Quotes        []string      `json:"quotes"`        // every quote ever made on it, in order
	SettlingTrade string        `json:"settlingTrade"` // the trade in flight, if any
	// Declines are the invited makers' declines, in the order of each maker's first one
	// (rfq_decline.go).
	Declines []Decline `json:"declines,omitempty"`
	// NotionalUSD is the ticket's USD notional at creation (qty × usdPrice(base), the
	// notional of its fee tier), what a fill counts toward maker protection.
	NotionalUSD money.Decimal `json:"notionalUsd"`
}

func (r *RFQ) getState() State  { return r.State }
func (r *RFQ) setState(s State) { r.State = s }

// Quote is a maker's firm price on an RFQ, funded by ledger allocations.
type Quote struct {
	ID         string        `json:"id"`
	State      State         `json:"state"`
	RFQ        string        `json:"rfq"`
	Maker      string        `json:"maker"` // party id
	Price      money.Decimal `json:"price"`
	ValidUntil time.Time     `json:"validUntil"`
	CreatedAt  time.Time     `json:"createdAt"`
	// Legs are the amounts fixed when the quote was made.
	Amounts TradeAmounts `json:"amounts"`
	// Allocations are the maker's allocations by leg id ("maker-base", "maker-quote");
	// an empty cid means not landed yet.
	Allocations []AllocationRef `json:"allocations"`
	Actions     []string        `json:"actions"` // the maker's allocate actions
	Trade       string          `json:"trade,omitempty"`
	// Anchored is set once every allocation landed: from then on the taker sees the quote.
	Anchored bool `json:"anchored,omitempty"`
	// ReqSeq is the POST /maker/quotes request waiting for the quote's prepares.
	ReqSeq uint64 `json:"reqSeq,omitempty"`
	// PendingCancels counts the replaced quote's allocation cancels still with the ledger;
	// the new allocations are prepared only once they are all done.
	PendingCancels int `json:"pendingCancels,omitempty"`
	// RevokeReason says why a revoked quote was revoked where the desk records it:
	// RevokeDisconnect for cancel-on-disconnect, else empty.
	RevokeReason string `json:"revokeReason,omitempty"`
}

func (q *Quote) getState() State  { return q.State }
func (q *Quote) setState(s State) { q.State = s }

// AllocationRef is one allocation of a settlement: who allocates what, and its contract
// once it landed.
type AllocationRef struct {
	LegID      string        `json:"legId"`
	Owner      string        `json:"owner"`
	Send       bool          `json:"send"`
	Instrument string        `json:"instrument"` // catalog symbol
	Amount     money.Decimal `json:"amount"`
	CID        string        `json:"cid,omitempty"`
	// Cancelled is set once a cancel of the landed allocation was issued.
	Cancelled bool `json:"cancelled,omitempty"`
	// The prepared transaction, between its prepare and the action made from it.
	PreparedID  string    `json:"preparedId,omitempty"`
	Hash        []byte    `json:"hash,omitempty"`
	PrepExpires time.Time `json:"prepExpires"`
	// Attempt counts the prepares of this allocation, so each gets its own command id.
	Attempt int `json:"attempt,omitempty"`
	// Prepared is the serialized prepared transaction, between its prepare and the
	// action made from it.
	Prepared []byte `json:"prepared,omitempty"`
	// Inputs are the input holdings its latest prepare named (coinsel.go).
	Inputs []string `json:"inputs,omitempty"`
}

// TradeAmounts are the exact amounts of a trade: qty of base, the quote amount qty × price
// (half-even to 10 digits) and the fee taken from the taker in the quote instrument.
type TradeAmounts struct {
	Qty         money.Decimal `json:"qty"`
	QuoteAmount money.Decimal `json:"quoteAmount"`
	Fee         money.Decimal `json:"fee"`
}

// Trade is an accepted quote on its way to settlement.
type Trade struct {
	ID          string          `json:"id"`
	State       State           `json:"state"`
	RFQ         string          `json:"rfq"`
	Quote       string          `json:"quote"`
	Taker       string          `json:"taker"`
	Maker       string          `json:"maker"`
	Direction   Direction       `json:"direction"`
	Base        string          `json:"base"`
	QuoteSym    string          `json:"quoteSymbol"`
	Price       money.Decimal   `json:"price"`
	Amounts     TradeAmounts    `json:"amounts"`
	AcceptedAt  time.Time       `json:"acceptedAt"`
	WindowEnds  time.Time       `json:"windowEnds"`
	SettledAt   time.Time       `json:"settledAt"`
	UpdateID    string          `json:"updateId,omitempty"`
	Receipts    []string        `json:"receipts,omitempty"`
	Allocations []AllocationRef `json:"allocations"` // the taker's and the fee party's
	Actions     []string        `json:"actions"`     // the taker's allocate actions, current ones
	FailReason  string          `json:"failReason,omitempty"`
	// Lists counts the parties' trade lists that name this settled trade; it is forgotten
	// when none does any more.
	Lists int `json:"lists,omitempty"`
	// PendingReleases counts the cancels a trade whose settle was refused waits for before
	// it fails; ReleaseFailed records that one could not release (a settle consumed it), and
	// Rechecked that the settle was sent again to learn its outcome.
	PendingReleases int  `json:"pendingReleases,omitempty"`
	ReleaseFailed   bool `json:"releaseFailed,omitempty"`
	Rechecked       bool `json:"rechecked,omitempty"`
}

func (t *Trade) getState() State  { return t.State }
func (t *Trade) setState(s State) { t.State = s }

// Action purposes of SPEC.md.
const (
	PurposeAllocate       = "allocate"
	PurposeTransferAccept = "transfer-accept"
	PurposeTransferOut    = "transfer-out"
)

// FlowKind names what an action belongs to.
type FlowKind string

// Flows an action can belong to.
const (
	FlowQuote    FlowKind = "quote"
	FlowTrade    FlowKind = "trade"
	FlowDeposit  FlowKind = "deposit"
	FlowWithdraw FlowKind = "withdraw"
)

// Action is a prepared ledger transaction waiting on a party's signature.
type Action struct {
	ID          string    `json:"id"`
	State       State     `json:"state"`
	Party       string    `json:"party"`
	Purpose     string    `json:"purpose"`
	Description string    `json:"description"`
	Hash        []byte    `json:"hash"`
	PreparedID  string    `json:"preparedId"`
	CreatedAt   time.Time `json:"createdAt"`
	ExpiresAt   time.Time `json:"expiresAt"`
	Flow        FlowKind  `json:"flow"`
	FlowID      string    `json:"flowId"`          // quote, trade, instruction cid or withdrawal key
	LegID       string    `json:"legId,omitempty"` // for allocations
	TradeID     string    `json:"tradeId,omitempty"`
	// Attempt counts the executes sent, so each gets its own command id.
	Attempt int `json:"attempt"`
	// Execute is the execute last sent (with its signature), kept while executing so that
	// an unknown outcome can be settled by sending it again.
	Execute *LedgerCall `json:"execute,omitempty"`
	// Order is the id generator's counter when the action was made: GET /tx/pending lists
	// actions in the order they were created (ids are random, timestamps may tie).
	Order uint64 `json:"order"`
	// Prepared is the serialized prepared transaction (opaque, at most MaxPreparedBytes),
	// handed back to the ledger with the signature at execute.
	Prepared []byte `json:"prepared,omitempty"`
	// Inputs are the input holdings its prepared transaction names, reserved while the
	// action lives (coinsel.go).
	Inputs []string `json:"inputs,omitempty"`
}

func (x *Action) getState() State  { return x.State }
func (x *Action) setState(s State) { x.State = s }

// DoneAction remembers a finished action for a blind resend.
type DoneAction struct {
	ID      string    `json:"id"`
	Party   string    `json:"party"`
	Outcome State     `json:"outcome"`
	Until   time.Time `json:"until"`
}

// HistoryRow is an RFQ of a taker that closed without a trade, or a failed settlement.
type HistoryRow struct {
	ID         string        `json:"id"`
	RFQ        string        `json:"rfqId"`
	Direction  Direction     `json:"direction"`
	Qty        money.Decimal `json:"qty"`
	Base       string        `json:"base"`
	Quote      string        `json:"quote"`
	Kind       string        `json:"kind"` // expired, cancelled, failed
	QuoteCount int           `json:"quoteCount"`
	BestPrice  money.Decimal `json:"bestPrice"`
	HasBest    bool          `json:"hasBest"`
	Maker      string        `json:"maker"` // hint, for failed settlements
	Reason     string        `json:"reason"`
	At         time.Time     `json:"at"`
}

// ContKind names what to do when a ledger result arrives.
type ContKind string

// Continuation is a ledger call in flight and what its result means to the desk.
type Continuation struct {
	Call   LedgerCall `json:"call"`
	Kind   ContKind   `json:"kind"`
	ReqSeq uint64     `json:"reqSeq,omitempty"` // the request whose reply waits, if any
	Entity string     `json:"entity,omitempty"`
	LegID  string     `json:"legId,omitempty"`
	Aux    string     `json:"aux,omitempty"`
	// Deferred marks a spending prepare that waits for the party's one in flight
	// (coinsel.go): not sent yet.
	Deferred bool `json:"deferred,omitempty"`
}

// HeldReply is a request whose reply waits on ledger results.
type HeldReply struct {
	Seq     uint64        `json:"seq"`
	Kind    ContKind      `json:"kind"`
	Entity  string        `json:"entity,omitempty"`
	Party   string        `json:"party,omitempty"`
	Waiting int           `json:"waiting"` // ledger results still expected
	Entries []ExecEntry   `json:"entries,omitempty"`
	Faucet  *FaucetAnswer `json:"faucet,omitempty"`
	Failure *APIError     `json:"failure,omitempty"` // the first refusal met, if any
	Batch   bool          `json:"batch,omitempty"`
}

// ExecEntry is one entry of a POST /tx/execute and, once known, its outcome.
type ExecEntry struct {
	ActionID  string `json:"actionId"`
	Status    string `json:"status"` // executed, in-flight, error; empty while waiting
	Error     string `json:"error,omitempty"`
	Retryable *bool  `json:"retryable,omitempty"`
	// HTTPError is what the singular form answers for this entry.
	HTTPError *APIError `json:"httpError,omitempty"`
}
