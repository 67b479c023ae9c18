package client

import (
	"fmt"
	"time"
)

// Direction is the side of an RFQ from the taker's point of view.
type Direction string

// The two RFQ directions. On SELL the taker sells the base for the quote instrument.
const (
	Sell Direction = "SELL"
	Buy  Direction = "BUY"
)

// Quote status values (Quote.Status and QuoteStatus.Status).
const (
	QuotePending   = "pending"
	QuoteWon       = "won"
	QuoteLost      = "lost"
	QuoteRevoked   = "revoked"
	QuoteCancelled = "cancelled"
	QuoteExpired   = "expired"
)

// Trade status values (Trade.Status).
const (
	TradeSettling = "settling"
	TradeSettled  = "settled"
	TradeFailed   = "failed"
)

// Sign action purposes (SignAction.Purpose).
const (
	PurposeAllocate       = "allocate"
	PurposeTransferAccept = "transfer-accept"
	PurposeTransferOut    = "transfer-out"
)

// RFQ history kinds (RFQHistory.Kind).
const (
	HistoryExpired   = "expired"
	HistoryCancelled = "cancelled"
	HistoryFailed    = "failed"
)

// Per-entry statuses of a batch execute (ExecuteResult.Status).
const (
	ExecExecuted = "executed"
	ExecInFlight = "in-flight"
	ExecError    = "error"
)

// TradeStepAllocated is the TradeStep.Step sent when every allocation of a trade landed.
const TradeStepAllocated = "allocated"

// TopologyTx is one topology transaction of a registration: the caller signs the raw bytes
// behind Hash.
type TopologyTx struct {
	// Hash is the standard padded base64 of the raw hash bytes.
	Hash string `json:"hash"`
	// Description says what the transaction does, for humans.
	Description string `json:"description"`
}

// RegisterStartRequest is the body of POST /maker/register/start.
type RegisterStartRequest struct {
	// DisplayName is 1–64 letters, digits, spaces, '-', '_' or '.'; the hint derives from it.
	DisplayName string `json:"displayName"`
	// PublicKey is the standard padded base64 of the 32-byte raw Ed25519 public key.
	PublicKey string `json:"publicKey"`
}

// RegisterStartResponse is the answer of POST /maker/register/start.
type RegisterStartResponse struct {
	RegistrationID string       `json:"registrationId"`
	PartyID        string       `json:"partyId"`
	Topology       []TopologyTx `json:"topology"`
}

// RegisterCompleteRequest is the body of POST /maker/register/complete.
type RegisterCompleteRequest struct {
	RegistrationID string `json:"registrationId"`
	// Signatures holds one base64 signature per topology transaction, in the same order.
	Signatures []string `json:"signatures"`
}

// RegisterCompleteResponse is the answer of POST /maker/register/complete. APIKey is shown
// only once.
type RegisterCompleteResponse struct {
	APIKey  string       `json:"apiKey"`
	PartyID string       `json:"partyId"`
	Hint    string       `json:"hint"`
	Actions []SignAction `json:"actions"`
}

// RotateRequest is the body of POST /maker/api-key/rotate.
type RotateRequest struct {
	PartyID   string `json:"partyId"`
	Challenge string `json:"challenge"`
	// Signature is the base64 Ed25519 signature over the UTF-8 bytes of Challenge.
	Signature string `json:"signature"`
}

// MakerStatus is the answer of GET /maker/status.
type MakerStatus struct {
	PartyID string `json:"partyId"`
	Hint    string `json:"hint"`
	// Invitable is true while one of the party's stream sockets is open.
	Invitable        bool `json:"invitable"`
	PendingActions   int  `json:"pendingActions"`
	ServiceActivated bool `json:"serviceActivated"`
}

// Instrument is an element of GET /instruments.
type Instrument struct {
	Symbol        string `json:"symbol"`
	DisplaySymbol string `json:"displaySymbol"`
	Decimals      int    `json:"decimals"`
	LogoURL       string `json:"logoUrl"`
}

// Holding is a free (unlocked) holding of one instrument.
type Holding struct {
	Symbol        string  `json:"symbol"`
	DisplaySymbol string  `json:"displaySymbol"`
	Amount        Decimal `json:"amount"`
}

// Balances is the answer of GET /balances and GET /wallet/holdings.
type Balances struct {
	Party    string    `json:"party"`
	Holdings []Holding `json:"holdings"`
}

// IncomingTransfer is a pending deposit in the party's inbox (GET /wallet/incoming).
type IncomingTransfer struct {
	CID           string  `json:"cid"`
	Symbol        string  `json:"symbol"`
	DisplaySymbol string  `json:"displaySymbol"`
	Amount        Decimal `json:"amount"`
	// Sender is the sender's party hint.
	Sender       string `json:"sender"`
	InstrumentID string `json:"instrumentId"`
}

// WithdrawRequest is the body of POST /wallet/withdraw.
type WithdrawRequest struct {
	// Symbol is a catalog symbol, any case.
	Symbol string  `json:"symbol"`
	Amount Decimal `json:"amount"`
	// Receiver is a FULL party id, not a hint.
	Receiver string `json:"receiver"`
}

// FaucetToken is one token amount a faucet draw sent or offers.
type FaucetToken struct {
	Symbol        string  `json:"symbol"`
	DisplaySymbol string  `json:"displaySymbol"`
	Amount        Decimal `json:"amount"`
}

// FaucetSkip is a token a faucet draw did not send, and why ("cooldown", or the reservoir
// could not cover it).
type FaucetSkip struct {
	Symbol string `json:"symbol"`
	Reason string `json:"reason"`
}

// FaucetDraw is the answer of POST /faucet. The sent tokens arrive as pending transfers.
type FaucetDraw struct {
	Sent              []FaucetToken `json:"sent"`
	Skipped           []FaucetSkip  `json:"skipped"`
	RetryAfterSeconds int           `json:"retryAfterSeconds"`
}

// FaucetInfo is the answer of GET /faucet.
type FaucetInfo struct {
	Enabled bool `json:"enabled"`
	// RetryAfterSeconds is 0 when the party may draw now.
	RetryAfterSeconds int `json:"retryAfterSeconds"`
	// Drip is what one draw offers; empty when not enabled.
	Drip []FaucetToken `json:"drip"`
}

// FeeTier is one fee tier of the desk: FeeBps applies from MinNotionalUSD up.
type FeeTier struct {
	MinNotionalUSD Decimal `json:"minNotionalUsd"`
	FeeBps         int     `json:"feeBps"`
}

// DeskInfo is the answer of GET /desk.
type DeskInfo struct {
	// FeeBps is the base tier.
	FeeBps   int       `json:"feeBps"`
	FeeTiers []FeeTier `json:"feeTiers"`
	// Makers are the hints a taker can invite now (stream open), the caller excluded, sorted.
	Makers []string `json:"makers"`
	// MakerStats is the public 24-hour summary of each listed maker invited at least 10
	// times in those 24 hours (client/scorecard.go).
	MakerStats []MakerStats `json:"makerStats"`
}

// DeskConfig is the answer of GET /config.
type DeskConfig struct {
	Network               string  `json:"network"`
	MinNotionalUSD        Decimal `json:"minNotionalUsd"`
	QuoteLifetimeSeconds  int     `json:"quoteLifetimeSeconds"`
	MinTTLSeconds         int     `json:"minTtlSeconds"`
	MaxTTLSeconds         int     `json:"maxTtlSeconds"`
	ActionLifetimeSeconds int     `json:"actionLifetimeSeconds"`
	MaxBatch              int     `json:"maxBatch"`
}

// Quote is the wire QuoteDto.
type Quote struct {
	QuoteID string `json:"quoteId"`
	RFQID   string `json:"rfqId"`
	// Maker is the maker's party hint.
	Maker string `json:"maker"`
	// Price is the quote-instrument amount per 1 unit of base.
	Price      Decimal   `json:"price"`
	ValidUntil time.Time `json:"validUntil"`
	Status     string    `json:"status"`
	Settling   bool      `json:"settling"`
	AnchorCIDs []string  `json:"anchorCids"`
	// RevokeReason is "disconnect" in IncomingRFQs' MyQuote of a quote the desk revoked for
	// cancel-on-disconnect (StreamOptions.CancelOnDisconnect); empty elsewhere.
	RevokeReason string `json:"revokeReason,omitempty"`
}

// RFQ is the wire RfqDto.
type RFQ struct {
	RFQID         string    `json:"rfqId"`
	Taker         string    `json:"taker"`
	Direction     Direction `json:"direction"`
	Qty           Decimal   `json:"qty"`
	Base          string    `json:"base"`
	Quote         string    `json:"quote"`
	Deadline      time.Time `json:"deadline"`
	InvitedMakers []string  `json:"invitedMakers"`
	FeeBps        int       `json:"feeBps"`
	Open          bool      `json:"open"`
	// Quotes is present only in GET /rfq/mine.
	Quotes []Quote `json:"quotes,omitempty"`
	// Declines is present only in GET /rfq/mine: the invited makers' declines.
	Declines []Decline `json:"declines,omitempty"`
	// MyQuote is present only in GET /rfq/incoming; nil when the caller has no quote.
	MyQuote *Quote `json:"myQuote,omitempty"`
}

// LedgerProof is the proof of a settlement.
type LedgerProof struct {
	UpdateID    string   `json:"updateId"`
	ReceiptCIDs []string `json:"receiptCids"`
}

// Trade is the wire TradeDto.
type Trade struct {
	TradeID   string    `json:"tradeId"`
	Taker     string    `json:"taker"`
	Maker     string    `json:"maker"`
	Direction Direction `json:"direction"`
	Qty       Decimal   `json:"qty"`
	Base      string    `json:"base"`
	Quote     string    `json:"quote"`
	Price     Decimal   `json:"price"`
	Fee       Decimal   `json:"fee"`
	SettledAt time.Time `json:"settledAt"`
	// Status is "settled" in lists and trade.settled, "settling" in the accept answer.
	Status string      `json:"status"`
	Ledger LedgerProof `json:"ledger"`
}

// SignAction is the wire SignActionDto: a prepared ledger effect waiting on the party's
// signature over the raw bytes behind Hash.
type SignAction struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	Purpose     string `json:"purpose"`
	Description string `json:"description"`
	// Hash is the standard padded base64 of the raw prepared-transaction hash.
	Hash string `json:"hash"`
	// TradeID is set for trade actions.
	TradeID   string    `json:"tradeId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// RFQHistory is the wire RfqHistoryDto: an RFQ of the caller that closed without a trade, or
// a failed settlement.
type RFQHistory struct {
	ID         string    `json:"id"`
	RFQID      string    `json:"rfqId"`
	Direction  Direction `json:"direction"`
	Qty        Decimal   `json:"qty"`
	Base       string    `json:"base"`
	Quote      string    `json:"quote"`
	Kind       string    `json:"kind"`
	QuoteCount int       `json:"quoteCount"`
	BestPrice  Decimal   `json:"bestPrice"`
	Maker      string    `json:"maker"`
	Reason     string    `json:"reason"`
	At         time.Time `json:"at"`
}

// QuoteRequest is the body of POST /maker/quotes.
type QuoteRequest struct {
	RFQID string  `json:"rfqId"`
	Price Decimal `json:"price"`
	// ValidUntil is optional: the zero time leaves it out and the desk's quote lifetime
	// applies.
	ValidUntil time.Time `json:"validUntil,omitzero"`
}

// QuoteWithActions is the answer of POST /maker/quotes: the new quote and the allocations to
// sign before it goes live.
type QuoteWithActions struct {
	Quote
	Actions []SignAction `json:"actions"`
}

// CreateRFQRequest is the body of POST /rfq.
type CreateRFQRequest struct {
	Direction Direction `json:"direction"`
	Qty       Decimal   `json:"qty"`
	// Base and Quote are catalog symbols (any case).
	Base  string `json:"base"`
	Quote string `json:"quote"`
	// InvitedMakers are party hints of makers whose stream is open.
	InvitedMakers []string `json:"invitedMakers"`
	TTLSeconds    int      `json:"ttlSeconds"`
}

// TradeWithActions is the answer of POST /quote/{id}/accept: the settling trade and the
// taker's allocations to sign (empty for a desk-signed house taker).
type TradeWithActions struct {
	Trade
	Actions []SignAction `json:"actions"`
}

// ActionsResponse is the `{actions}` answer of the wallet calls and GET /tx/pending.
type ActionsResponse struct {
	Actions []SignAction `json:"actions"`
}

// ActionSignature is one entry of a batch POST /tx/execute.
type ActionSignature struct {
	ActionID string `json:"actionId"`
	// Signature is the base64 Ed25519 signature over the raw bytes of the action's hash.
	Signature string `json:"signature"`
}

// ExecuteResult is the outcome of one entry of a batch POST /tx/execute.
type ExecuteResult struct {
	ActionID string `json:"actionId"`
	// Status is ExecExecuted, ExecInFlight or ExecError.
	Status string `json:"status"`
	// Error is set for a failed entry.
	Error string `json:"error,omitempty"`
	// Retryable, on a failed entry, says whether the failure is transient.
	Retryable bool `json:"retryable,omitempty"`
}

// OK reports whether the entry was executed or submitted (its outcome then follows through
// the flow's events).
func (r ExecuteResult) OK() bool { return r.Status == ExecExecuted || r.Status == ExecInFlight }

// FirstFailure returns an error naming the first entry of results that is not OK, or nil.
func FirstFailure(results []ExecuteResult) error {
	for _, r := range results {
		if !r.OK() {
			return fmt.Errorf("action %s: %s %s", r.ActionID, r.Status, r.Error)
		}
	}
	return nil
}

// executeBatchRequest is the batch body of POST /tx/execute.
type executeBatchRequest struct {
	Signatures []ActionSignature `json:"signatures"`
}

// executeBatchResponse is the batch answer of POST /tx/execute.
type executeBatchResponse struct {
	Results []ExecuteResult `json:"results"`
}

// okResponse is the `{ok: true}` answer.
type okResponse struct {
	OK bool `json:"ok"`
}

// referencePriceResponse is the answer of GET /maker/reference-price.
type referencePriceResponse struct {
	Price Decimal `json:"price"`
}
