package machine

import "github.com/deskco/rfqdesk/money"

// The wire contract of SPEC.md and DECISIONS.md: what the transport encodes as JSON.

// InstrumentDTO is an element of GET /instruments.
type InstrumentDTO struct {
	Symbol        string `json:"symbol"`
	DisplaySymbol string `json:"displaySymbol"`
	Decimals      int    `json:"decimals"`
	LogoURL       string `json:"logoUrl"`
}

// HoldingDTO is an element of a balances answer.
type HoldingDTO struct {
	Symbol        string        `json:"symbol"`
	DisplaySymbol string        `json:"displaySymbol"`
	Amount        money.Decimal `json:"amount"`
}

// BalancesDTO answers GET /balances and GET /wallet/holdings: free holdings only.
type BalancesDTO struct {
	Party    string       `json:"party"`
	Holdings []HoldingDTO `json:"holdings"`
}

// RfqDTO is an RFQ on the wire. Quotes and Declines are present only in GET /rfq/mine;
// MyQuote only in the maker's incoming list (where null is meaningful).
type RfqDTO struct {
	RfqID         string        `json:"rfqId"`
	Taker         string        `json:"taker"`
	Direction     Direction     `json:"direction"`
	Qty           money.Decimal `json:"qty"`
	Base          string        `json:"base"`
	Quote         string        `json:"quote"`
	Deadline      WireTime      `json:"deadline"`
	InvitedMakers []string      `json:"invitedMakers"`
	FeeBps        int           `json:"feeBps"`
	Open          bool          `json:"open"`
	Quotes        *[]QuoteDTO   `json:"quotes,omitempty"`
	Declines      *[]DeclineDTO `json:"declines,omitempty"`
}

// IncomingRfqDTO is an element of GET /rfq/incoming: an RfqDTO with the caller's quote.
type IncomingRfqDTO struct {
	RfqDTO
	MyQuote *QuoteDTO `json:"myQuote"`
}

// QuoteDTO is a quote on the wire.
type QuoteDTO struct {
	QuoteID    string        `json:"quoteId"`
	RfqID      string        `json:"rfqId"`
	Maker      string        `json:"maker"`
	Price      money.Decimal `json:"price"`
	ValidUntil WireTime      `json:"validUntil"`
	Status     string        `json:"status"`
	Settling   bool          `json:"settling"`
	AnchorCids []string      `json:"anchorCids"`
	// RevokeReason is set only in GET /rfq/incoming's myQuote (the maker's own view) of a
	// quote revoked for a recorded reason: "disconnect" for cancel-on-disconnect, which the
	// maker, offline when it happened, learns here.
	RevokeReason string `json:"revokeReason,omitempty"`
}

// QuoteWithActionsDTO answers POST /maker/quotes.
type QuoteWithActionsDTO struct {
	QuoteDTO
	Actions []SignActionDTO `json:"actions"`
}

// LedgerProofDTO is the proof of a settlement.
type LedgerProofDTO struct {
	UpdateID    string   `json:"updateId"`
	ReceiptCids []string `json:"receiptCids"`
}

// TradeDTO is a trade on the wire.
type TradeDTO struct {
	TradeID   string         `json:"tradeId"`
	Taker     string         `json:"taker"`
	Maker     string         `json:"maker"`
	Direction Direction      `json:"direction"`
	Qty       money.Decimal  `json:"qty"`
	Base      string         `json:"base"`
	Quote     string         `json:"quote"`
	Price     money.Decimal  `json:"price"`
	Fee       money.Decimal  `json:"fee"`
	SettledAt *WireTime      `json:"settledAt"`
	Status    string         `json:"status"`
	Ledger    LedgerProofDTO `json:"ledger"`
}

// TradeWithActionsDTO answers POST /quote/{id}/accept.
type TradeWithActionsDTO struct {
	TradeDTO
	Actions []SignActionDTO `json:"actions"`
}

// SignActionDTO is a sign action on the wire.
type SignActionDTO struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	Purpose     string   `json:"purpose"`
	Description string   `json:"description"`
	Hash        []byte   `json:"hash"` // encoding/json writes standard padded base64
	TradeID     string   `json:"tradeId,omitempty"`
	CreatedAt   WireTime `json:"createdAt"`
	ExpiresAt   WireTime `json:"expiresAt"`
}

// ActionsDTO is the `{actions}` body of wallet calls and GET /tx/pending.
type ActionsDTO struct {
	Actions []SignActionDTO `json:"actions"`
}

// RfqHistoryDTO is an element of GET /rfq-history.
type RfqHistoryDTO struct {
	ID         string         `json:"id"`
	RfqID      string         `json:"rfqId"`
	Direction  Direction      `json:"direction"`
	Qty        money.Decimal  `json:"qty"`
	Base       string         `json:"base"`
	Quote      string         `json:"quote"`
	Kind       string         `json:"kind"`
	QuoteCount int            `json:"quoteCount"`
	BestPrice  *money.Decimal `json:"bestPrice"`
	Maker      string         `json:"maker"`
	Reason     string         `json:"reason"`
	At         WireTime       `json:"at"`
}

// MakerStatusDTO answers GET /maker/status.
type MakerStatusDTO struct {
	PartyID          string `json:"partyId"`
	Hint             string `json:"hint"`
	Invitable        bool   `json:"invitable"`
	PendingActions   int    `json:"pendingActions"`
	ServiceActivated bool   `json:"serviceActivated"`
}

// RegisterStartDTO answers POST /maker/register/start.
type RegisterStartDTO struct {
	RegistrationID string        `json:"registrationId"`
	PartyID        string        `json:"partyId"`
	Topology       []TopologyDTO `json:"topology"`
}

// TopologyDTO is one hash to sign at registration.
type TopologyDTO struct {
	Hash        []byte `json:"hash"`
	Description string `json:"description"`
}

// RegisterCompleteDTO answers POST /maker/register/complete; the transport adds the API key
// it generated (the machine never sees the key itself).
type RegisterCompleteDTO struct {
	APIKey  string          `json:"apiKey"`
	PartyID string          `json:"partyId"`
	Hint    string          `json:"hint"`
	Actions []SignActionDTO `json:"actions"`
}

// ChallengeDTO answers POST /maker/challenge.
type ChallengeDTO struct {
	Challenge string `json:"challenge"`
}

// APIKeyDTO answers POST /maker/api-key/rotate; the transport fills in the key.
type APIKeyDTO struct {
	APIKey string `json:"apiKey"`
}

// OKDTO is the `{ok: true}` answer.
type OKDTO struct {
	OK bool `json:"ok"`
}

// ExecResultDTO is one entry of a batch POST /tx/execute answer.
type ExecResultDTO struct {
	ActionID  string `json:"actionId"`
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
	Retryable *bool  `json:"retryable,omitempty"`
}

// ExecBatchDTO answers the batch form of POST /tx/execute.
type ExecBatchDTO struct {
	Results []ExecResultDTO `json:"results"`
}

// IncomingTransferDTO is an element of GET /wallet/incoming.
type IncomingTransferDTO struct {
	CID           string        `json:"cid"`
	Symbol        string        `json:"symbol"`
	DisplaySymbol string        `json:"displaySymbol"`
	Amount        money.Decimal `json:"amount"`
	Sender        string        `json:"sender"`
	InstrumentID  string        `json:"instrumentId"`
}

// IncomingDTO answers GET /wallet/incoming.
type IncomingDTO struct {
	Transfers []IncomingTransferDTO `json:"transfers"`
}

// FaucetSent is a token a faucet draw sent.
type FaucetSent struct {
	Symbol        string        `json:"symbol"`
	DisplaySymbol string        `json:"displaySymbol"`
	Amount        money.Decimal `json:"amount"`
}

// FaucetSkipped is a token a faucet draw did not send, and why.
type FaucetSkipped struct {
	Symbol string `json:"symbol"`
	Reason string `json:"reason"`
}

// FaucetAnswer answers POST /faucet.
type FaucetAnswer struct {
	Sent              []FaucetSent    `json:"sent"`
	Skipped           []FaucetSkipped `json:"skipped"`
	RetryAfterSeconds int             `json:"retryAfterSeconds"`
}

// FaucetInfoDTO answers GET /faucet.
type FaucetInfoDTO struct {
	Enabled           bool         `json:"enabled"`
	RetryAfterSeconds int          `json:"retryAfterSeconds"`
	Drip              []FaucetSent `json:"drip"`
}

// FeeTierDTO is a fee tier in GET /desk.
type FeeTierDTO struct {
	MinNotionalUSD money.Decimal `json:"minNotionalUsd"`
	FeeBps         int           `json:"feeBps"`
}

// DeskDTO answers GET /desk.
type DeskDTO struct {
	FeeBps   int          `json:"feeBps"`
	FeeTiers []FeeTierDTO `json:"feeTiers"`
	Makers   []string     `json:"makers"`
	// MakerStats is the public scorecard summary of the listed makers invited at least
	// MakerStatsMinInvites times within 24 hours (machine/scorecard.go).
	MakerStats []MakerStatsDTO `json:"makerStats"`
}

// ConfigDTO answers GET /config.
type ConfigDTO struct {
	Network               Network       `json:"network"`
	MinNotionalUSD        money.Decimal `json:"minNotionalUsd"`
	QuoteLifetimeSeconds  int           `json:"quoteLifetimeSeconds"`
	MinTTLSeconds         int           `json:"minTtlSeconds"`
	MaxTTLSeconds         int           `json:"maxTtlSeconds"`
	ActionLifetimeSeconds int           `json:"actionLifetimeSeconds"`
	MaxBatch              int           `json:"maxBatch"`
	// StreamRetentionEvents and StreamRetentionSeconds are the per-party window a stream
	// resume (?since=) can replay.
	StreamRetentionEvents  int `json:"streamRetentionEvents"`
	StreamRetentionSeconds int `json:"streamRetentionSeconds"`
}

// ReferencePriceDTO answers GET /maker/reference-price.
type ReferencePriceDTO struct {
	Price *money.Decimal `json:"price"`
}

// Event payloads that are not DTOs above.

// RfqIDPayload is the payload of rfq.closed and rfq.expired.
type RfqIDPayload struct {
	RfqID string `json:"rfqId"`
}

// QuoteStatusPayload is the payload of quote.status. Reason is set only in the maker's
// frame of a revocation the desk records a reason for (RevokeDisconnect); the taker's
// frame never carries it, as a maker's connection is none of the taker's business.
type QuoteStatusPayload struct {
	QuoteID string `json:"quoteId"`
	RfqID   string `json:"rfqId"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
}

// QuoteAnchoredPayload is the payload of quote.anchored.
type QuoteAnchoredPayload struct {
	QuoteID    string   `json:"quoteId"`
	RfqID      string   `json:"rfqId"`
	AnchorCids []string `json:"anchorCids"`
}

// TradeStepPayload is the payload of trade.step.
type TradeStepPayload struct {
	TradeID string   `json:"tradeId"`
	RfqID   string   `json:"rfqId"`
	Step    string   `json:"step"`
	Refs    []string `json:"refs"`
}

// TradeFailedPayload is the payload of trade.failed.
type TradeFailedPayload struct {
	TradeID string `json:"tradeId"`
	RfqID   string `json:"rfqId"`
	Reason  string `json:"reason"`
}

// ActionIDPayload is the payload of sign.completed.
type ActionIDPayload struct {
	ActionID string `json:"actionId"`
}

// Event types of SPEC.md.
const (
	EvRfqCreated      = "rfq.created"
	EvRfqClosed       = "rfq.closed"
	EvRfqExpired      = "rfq.expired"
	EvQuoteCreated    = "quote.created"
	EvQuoteStatus     = "quote.status"
	EvQuoteAnchored   = "quote.anchored"
	EvTradeStep       = "trade.step"
	EvTradeSettled    = "trade.settled"
	EvTradeFailed     = "trade.failed"
	EvSignRequested   = "sign.requested"
	EvSignCompleted   = "sign.completed"
	EvHistoryRecorded = "history.recorded"
	EvResync          = "resync"
)
