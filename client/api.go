package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// ---- registration and key management (no API key) ----

// RegisterStart begins a self-registration (POST /maker/register/start). The caller signs
// the raw bytes of every topology hash and passes the signatures to RegisterComplete; the
// Register flow does all of it.
func (c *Client) RegisterStart(ctx context.Context, req RegisterStartRequest) (*RegisterStartResponse, error) {
	return call[RegisterStartResponse](ctx, c, http.MethodPost, "/maker/register/start", nil, req, false)
}

// RegisterComplete finishes a self-registration (POST /maker/register/complete). On success
// the client adopts the new API key, party id and hint.
func (c *Client) RegisterComplete(ctx context.Context, req RegisterCompleteRequest) (*RegisterCompleteResponse, error) {
	var out RegisterCompleteResponse
	if err := c.do(ctx, http.MethodPost, "/maker/register/complete", nil, req, false, &out); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.apiKey, c.partyID, c.hint = out.APIKey, out.PartyID, out.Hint
	c.mu.Unlock()
	return &out, nil
}

// Challenge asks for a one-shot key-rotation challenge for partyID (POST /maker/challenge).
// It lives 5 minutes; sign it with SignChallenge and pass it to RotateAPIKey.
func (c *Client) Challenge(ctx context.Context, partyID string) (string, error) {
	var out struct {
		Challenge string `json:"challenge"`
	}
	body := struct {
		PartyID string `json:"partyId"`
	}{partyID}
	if err := c.do(ctx, http.MethodPost, "/maker/challenge", nil, body, false, &out); err != nil {
		return "", err
	}
	return out.Challenge, nil
}

// RotateAPIKey replaces the party's API key (POST /maker/api-key/rotate) and returns the new
// one, which the client adopts. The old key stops working at once and its stream sockets
// close with 4401.
func (c *Client) RotateAPIKey(ctx context.Context, req RotateRequest) (string, error) {
	var out struct {
		APIKey string `json:"apiKey"`
	}
	if err := c.do(ctx, http.MethodPost, "/maker/api-key/rotate", nil, req, false, &out); err != nil {
		return "", err
	}
	c.mu.Lock()
	c.apiKey, c.partyID = out.APIKey, req.PartyID
	c.mu.Unlock()
	return out.APIKey, nil
}

// Status returns the maker status of the key's party (GET /maker/status); it doubles as an
// API-key validity check (errors.Is(err, ErrUnauthorized) on a dead key).
func (c *Client) Status(ctx context.Context) (*MakerStatus, error) {
	return call[MakerStatus](ctx, c, http.MethodGet, "/maker/status", nil, nil, true)
}

// Preapproval retries the party's receive preapproval (POST /maker/preapproval). The desk
// always answers ok; check arrival of funds in the wallet.
func (c *Client) Preapproval(ctx context.Context) error {
	return c.doOK(ctx, http.MethodPost, "/maker/preapproval", nil)
}

// ---- quoting (maker) ----

// SubmitQuote quotes an RFQ (POST /maker/quotes), replacing the caller's previous quote on
// it. The quote goes live only after its actions are signed and executed (SignAndExecute)
// and quote.anchored arrives.
func (c *Client) SubmitQuote(ctx context.Context, req QuoteRequest) (*QuoteWithActions, error) {
	if err := req.Price.Validate(); err != nil {
		return nil, fmt.Errorf("client: quote price: %w", err)
	}
	return call[QuoteWithActions](ctx, c, http.MethodPost, "/maker/quotes", nil, req, true)
}

// CancelQuote revokes one of the caller's quotes (DELETE /maker/quotes/{id}).
func (c *Client) CancelQuote(ctx context.Context, quoteID string) error {
	return c.do(ctx, http.MethodDelete, "/maker/quotes/"+url.PathEscape(quoteID), nil, nil, true, nil)
}

// CancelledQuotes is the answer to CancelAllQuotes: the ids of the quotes revoked, and of the
// caller's quotes left alone because they are accepted and settling, each in the order the
// quotes were created.
type CancelledQuotes struct {
	Revoked  []string `json:"revoked"`
	Settling []string `json:"settling"`
}

// CancelAllQuotes revokes every pending quote of the caller that is not settling, at once
// (DELETE /maker/quotes, the mass cancel). A caller with no such quotes gets empty lists.
func (c *Client) CancelAllQuotes(ctx context.Context) (*CancelledQuotes, error) {
	return call[CancelledQuotes](ctx, c, http.MethodDelete, "/maker/quotes", nil, nil, true)
}

// Reasons a maker gives for declining an RFQ (DeclineRFQ).
const (
	DeclinePrice      = "price"
	DeclineSize       = "size"
	DeclineInventory  = "inventory"
	DeclineInstrument = "instrument"
	DeclineOther      = "other"
)

// Decline is a maker's decline of an RFQ, as GET /rfq/mine lists it: the maker's hint and
// its latest reason.
type Decline struct {
	Maker  string `json:"maker"`
	Reason string `json:"reason"`
}

// DeclineRFQ tells the taker that the caller, an invited maker, will not quote the RFQ
// (POST /maker/rfq/{id}/decline), with one of the Decline… reasons. The caller's quote on
// it, if pending and not settling, is revoked. A second decline replaces the reason.
func (c *Client) DeclineRFQ(ctx context.Context, rfqID, reason string) error {
	body := struct {
		Reason string `json:"reason"`
	}{reason}
	return c.do(ctx, http.MethodPost, "/maker/rfq/"+url.PathEscape(rfqID)+"/decline", nil, body, true, nil)
}

// MakerTrades returns the key's party's settled trades, newest first (GET /maker/trades).
// limit 0 leaves it to the desk (100); any other value is sent as is (valid: 1 to 500).
func (c *Client) MakerTrades(ctx context.Context, limit int) ([]Trade, error) {
	return list[Trade](ctx, c, http.MethodGet, "/maker/trades", limitQuery(limit), nil, true)
}

// IncomingRFQs returns the RFQs the party is invited to, open ones and those closed in the
// last 10 minutes, each with MyQuote (GET /rfq/incoming).
func (c *Client) IncomingRFQs(ctx context.Context) ([]RFQ, error) {
	return list[RFQ](ctx, c, http.MethodGet, "/rfq/incoming", nil, nil, true)
}

// ReferencePrice returns the desk's reference price of 1 base in quote units
// (GET /maker/reference-price). ok is false when the desk has none.
func (c *Client) ReferencePrice(ctx context.Context, base, quote string) (price Decimal, ok bool, err error) {
	var out referencePriceResponse
	q := url.Values{"base": {base}, "quote": {quote}}
	if err := c.do(ctx, http.MethodGet, "/maker/reference-price", q, nil, true, &out); err != nil {
		return "", false, err
	}
	return out.Price, out.Price != "", nil
}

// ---- taker ----

// CreateRFQ opens an RFQ (POST /rfq). Every invited maker must have its stream open.
func (c *Client) CreateRFQ(ctx context.Context, req CreateRFQRequest) (*RFQ, error) {
	if err := req.Qty.Validate(); err != nil {
		return nil, fmt.Errorf("client: rfq qty: %w", err)
	}
	return call[RFQ](ctx, c, http.MethodPost, "/rfq", nil, req, true)
}

// MyRFQs returns the caller's open RFQs and those closed in the last 10 minutes, with their
// quotes (GET /rfq/mine).
func (c *Client) MyRFQs(ctx context.Context) ([]RFQ, error) {
	return list[RFQ](ctx, c, http.MethodGet, "/rfq/mine", nil, nil, true)
}

// CancelRFQ cancels one of the caller's RFQs (DELETE /rfq/{id}).
func (c *Client) CancelRFQ(ctx context.Context, rfqID string) error {
	return c.do(ctx, http.MethodDelete, "/rfq/"+url.PathEscape(rfqID), nil, nil, true, nil)
}

// RFQHistory returns the caller's RFQs that closed without a trade and its failed
// settlements, newest first (GET /rfq-history). limit as in MakerTrades.
func (c *Client) RFQHistory(ctx context.Context, limit int) ([]RFQHistory, error) {
	return list[RFQHistory](ctx, c, http.MethodGet, "/rfq-history", limitQuery(limit), nil, true)
}

// AcceptQuote accepts a quote on one of the caller's RFQs (POST /quote/{id}/accept). The
// answer (202) is the settling trade and the taker's actions, all to be signed in one
// execute (SignAndExecute).
func (c *Client) AcceptQuote(ctx context.Context, quoteID string) (*TradeWithActions, error) {
	return call[TradeWithActions](ctx, c, http.MethodPost, "/quote/"+url.PathEscape(quoteID)+"/accept", nil, nil, true)
}

// Trades returns the caller's settled trades in either role, newest first (GET /trades).
// limit as in MakerTrades.
func (c *Client) Trades(ctx context.Context, limit int) ([]Trade, error) {
	return list[Trade](ctx, c, http.MethodGet, "/trades", limitQuery(limit), nil, true)
}

// Desk returns the fee tiers and the makers a taker can invite now (GET /desk).
func (c *Client) Desk(ctx context.Context) (*DeskInfo, error) {
	return call[DeskInfo](ctx, c, http.MethodGet, "/desk", nil, nil, true)
}

// Config returns the desk's public configuration (GET /config).
func (c *Client) Config(ctx context.Context) (*DeskConfig, error) {
	return call[DeskConfig](ctx, c, http.MethodGet, "/config", nil, nil, true)
}

// ---- catalog and wallet ----

// Instruments returns the catalog (GET /instruments).
func (c *Client) Instruments(ctx context.Context) ([]Instrument, error) {
	return list[Instrument](ctx, c, http.MethodGet, "/instruments", nil, nil, true)
}

// Balances returns the party's free holdings (GET /balances).
func (c *Client) Balances(ctx context.Context) (*Balances, error) {
	return c.balances(ctx, "/balances")
}

// Holdings returns the same answer as Balances, from GET /wallet/holdings.
func (c *Client) Holdings(ctx context.Context) (*Balances, error) {
	return c.balances(ctx, "/wallet/holdings")
}

func (c *Client) balances(ctx context.Context, path string) (*Balances, error) {
	return call[Balances](ctx, c, http.MethodGet, path, nil, nil, true)
}

// IncomingTransfers returns the party's deposit inbox (GET /wallet/incoming).
func (c *Client) IncomingTransfers(ctx context.Context) ([]IncomingTransfer, error) {
	var out struct {
		Transfers []IncomingTransfer `json:"transfers"`
	}
	if err := c.do(ctx, http.MethodGet, "/wallet/incoming", nil, nil, true, &out); err != nil {
		return nil, err
	}
	return out.Transfers, nil
}

// AcceptTransfer accepts a pending deposit (POST /wallet/incoming/{cid}/accept) and returns
// the actions to sign (a transfer-accept for an externally signing party, none otherwise).
func (c *Client) AcceptTransfer(ctx context.Context, cid string) ([]SignAction, error) {
	return c.actions(ctx, http.MethodPost, "/wallet/incoming/"+url.PathEscape(cid)+"/accept", nil)
}

// Withdraw sends an amount to any party (POST /wallet/withdraw) and returns the
// transfer-out action to sign.
func (c *Client) Withdraw(ctx context.Context, req WithdrawRequest) ([]SignAction, error) {
	if err := req.Amount.Validate(); err != nil {
		return nil, fmt.Errorf("client: withdraw amount: %w", err)
	}
	return c.actions(ctx, http.MethodPost, "/wallet/withdraw", req)
}

// FaucetInfo says whether the faucet is armed for the party and when it may draw
// (GET /faucet).
func (c *Client) FaucetInfo(ctx context.Context) (*FaucetInfo, error) {
	return call[FaucetInfo](ctx, c, http.MethodGet, "/faucet", nil, nil, true)
}

// Faucet draws test tokens (POST /faucet). They arrive as pending transfers, each to be
// accepted with AcceptTransfer.
func (c *Client) Faucet(ctx context.Context) (*FaucetDraw, error) {
	return call[FaucetDraw](ctx, c, http.MethodPost, "/faucet", nil, nil, true)
}

// ---- sign queue ----

// PendingActions returns every action waiting on the party's signature (GET /tx/pending).
// Polling it is always safe; it is the recovery path after a lost answer.
func (c *Client) PendingActions(ctx context.Context) ([]SignAction, error) {
	return c.actions(ctx, http.MethodGet, "/tx/pending", nil)
}

// Execute submits one signature (POST /tx/execute, singular form). A failure is the HTTP
// error of the desk's error table.
func (c *Client) Execute(ctx context.Context, actionID, signature string) error {
	return c.doOK(ctx, http.MethodPost, "/tx/execute", ActionSignature{ActionID: actionID, Signature: signature})
}

// ExecuteBatch submits up to MaxBatch signatures in one call (POST /tx/execute, batch
// form) and returns one result per entry; a failed entry does not abort the others.
func (c *Client) ExecuteBatch(ctx context.Context, sigs []ActionSignature) ([]ExecuteResult, error) {
	if len(sigs) > MaxBatch {
		return nil, fmt.Errorf("client: execute batch of %d entries: at most %d", len(sigs), MaxBatch)
	}
	var out executeBatchResponse
	if err := c.do(ctx, http.MethodPost, "/tx/execute", nil, executeBatchRequest{Signatures: sigs}, true, &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// MaxBatch is the largest number of entries of one batch POST /tx/execute.
const MaxBatch = 50

func (c *Client) actions(ctx context.Context, method, path string, body any) ([]SignAction, error) {
	var out ActionsResponse
	if err := c.do(ctx, method, path, nil, body, true, &out); err != nil {
		return nil, err
	}
	return out.Actions, nil
}

// doOK sends one keyed request whose answer is {"ok": true}; another answer is an error.
func (c *Client) doOK(ctx context.Context, method, path string, body any) error {
	var out okResponse
	if err := c.do(ctx, method, path, nil, body, true, &out); err != nil {
		return err
	}
	if !out.OK {
		return fmt.Errorf("client: %s %s: answer without ok: true", method, path)
	}
	return nil
}

// limitQuery builds the ?limit= query; 0 leaves it out.
func limitQuery(limit int) url.Values {
	if limit == 0 {
		return nil
	}
	return url.Values{"limit": {strconv.Itoa(limit)}}
}
