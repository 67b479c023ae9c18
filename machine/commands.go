package machine

import (
	"time"

	"github.com/deskco/rfqdesk/money"
)

// API commands: one input type per state-changing endpoint. The transport decodes and
// checks the wire syntax (JSON shape, base64, decimal grammar, timestamps); the machine
// checks everything that depends on the desk's state and rules.

// RegisterStart is POST /maker/register/start.
type RegisterStart struct {
	Req
	DisplayName string `json:"displayName"`
	PublicKey   []byte `json:"publicKey"` // 32 raw bytes
}

// RegisterComplete is POST /maker/register/complete. NewKeyHash is the hash of the API key
// the transport generated and will hand out if this succeeds.
type RegisterComplete struct {
	Req
	RegistrationID string   `json:"registrationId"`
	Signatures     [][]byte `json:"signatures"`
	NewKeyHash     string   `json:"newKeyHash"`
}

// ChallengeRequest is POST /maker/challenge; Challenge is the text the transport drew
// from crypto/rand (it is not a secret: only the party key can sign it).
type ChallengeRequest struct {
	Req
	PartyID   string `json:"partyId"`
	Challenge string `json:"challenge"`
}

// RotateKey is POST /maker/api-key/rotate.
type RotateKey struct {
	Req
	PartyID    string `json:"partyId"`
	Challenge  string `json:"challenge"`
	Signature  []byte `json:"signature"`
	NewKeyHash string `json:"newKeyHash"`
}

// Preapproval is POST /maker/preapproval.
type Preapproval struct{ Req }

// CreateRFQ is POST /rfq.
type CreateRFQ struct {
	Req
	Direction     Direction     `json:"direction"`
	Qty           money.Decimal `json:"qty"`
	Base          string        `json:"base"`
	Quote         string        `json:"quote"`
	InvitedMakers []string      `json:"invitedMakers"`
	TTLSeconds    int64         `json:"ttlSeconds"`
}

// CancelRFQ is DELETE /rfq/{id}.
type CancelRFQ struct {
	Req
	RFQID string `json:"rfqId"`
}

// SubmitQuote is POST /maker/quotes. ValidUntil is nil when omitted.
type SubmitQuote struct {
	Req
	RFQID      string        `json:"rfqId"`
	Price      money.Decimal `json:"price"`
	ValidUntil *time.Time    `json:"validUntil,omitempty"`
}

// DeleteQuote is DELETE /maker/quotes/{id}.
type DeleteQuote struct {
	Req
	QuoteID string `json:"quoteId"`
}

// AcceptQuote is POST /quote/{id}/accept.
type AcceptQuote struct {
	Req
	QuoteID string `json:"quoteId"`
}

// SignedAction is one signature of POST /tx/execute.
type SignedAction struct {
	ActionID  string `json:"actionId"`
	Signature []byte `json:"signature"`
}

// ExecuteActions is POST /tx/execute; Batch tells which form the client used.
type ExecuteActions struct {
	Req
	Entries []SignedAction `json:"entries"`
	Batch   bool           `json:"batch"`
}

// AcceptIncoming is POST /wallet/incoming/{cid}/accept.
type AcceptIncoming struct {
	Req
	CID string `json:"cid"`
}

// Withdraw is POST /wallet/withdraw.
type Withdraw struct {
	Req
	Symbol   string        `json:"symbol"`
	Amount   money.Decimal `json:"amount"`
	Receiver string        `json:"receiver"`
}

// FaucetDraw is POST /faucet.
type FaucetDraw struct{ Req }

// KeyHash is the API key hash a command was sent with ("" for one sent without a key:
// the registration calls, a rotation, which its challenge's signature authenticates).
func KeyHash(c Command_) string { return c.header().KeyHash }

// Kind names the input in the journal.
func (RegisterStart) Kind() string { return "register.start" }

// Kind names the input in the journal.
func (RegisterComplete) Kind() string { return "register.complete" }

// Kind names the input in the journal.
func (ChallengeRequest) Kind() string { return "challenge" }

// Kind names the input in the journal.
func (RotateKey) Kind() string { return "key.rotate" }

// Kind names the input in the journal.
func (Preapproval) Kind() string { return "preapproval" }

// Kind names the input in the journal.
func (CreateRFQ) Kind() string { return "rfq.create" }

// Kind names the input in the journal.
func (CancelRFQ) Kind() string { return "rfq.cancel" }

// Kind names the input in the journal.
func (SubmitQuote) Kind() string { return "quote.submit" }

// Kind names the input in the journal.
func (DeleteQuote) Kind() string { return "quote.delete" }

// Kind names the input in the journal.
func (AcceptQuote) Kind() string { return "quote.accept" }

// Kind names the input in the journal.
func (ExecuteActions) Kind() string { return "tx.execute" }

// Kind names the input in the journal.
func (AcceptIncoming) Kind() string { return "incoming.accept" }

// Kind names the input in the journal.
func (Withdraw) Kind() string { return "withdraw" }

// Kind names the input in the journal.
func (FaucetDraw) Kind() string { return "faucet.draw" }

// command dispatches an API command: unauthenticated registration calls first, then the
// caller is resolved from its key hash for everything else.
func (a *applier) command(c Command_) {
	switch c := c.(type) {
	case RegisterStart:
		a.registerStart(c)
		return
	case RegisterComplete:
		a.registerComplete(c)
		return
	case ChallengeRequest:
		a.challenge(c)
		return
	case RotateKey:
		a.rotateKey(c)
		return
	}
	caller, ok := a.d.partyByKey(c.header().KeyHash)
	if !ok {
		a.refuse(errUnknownKey)
		return
	}
	switch c := c.(type) {
	case Preapproval:
		a.preapproval(caller)
	case CreateRFQ:
		a.createRFQ(caller, c)
	case CancelRFQ:
		a.cancelRFQ(caller, c)
	case SubmitQuote:
		a.submitQuote(caller, c)
	case DeleteQuote:
		a.deleteQuote(caller, c)
	case AcceptQuote:
		a.acceptQuote(caller, c)
	case ExecuteActions:
		a.executeActions(caller, c)
	case AcceptIncoming:
		a.acceptIncoming(caller, c)
	case Withdraw:
		a.withdraw(caller, c)
	case FaucetDraw:
		a.faucetDraw(caller)
	case flow:
		c.run(a, caller)
	}
}
