package machine

import (
	"encoding/json"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Envelope is one input as the loop hands it to Apply: its journal sequence number (which
// also names the request its reply answers) and the time the loop stamped on it.
type Envelope struct {
	Seq   uint64    `json:"seq"`
	At    time.Time `json:"at"`
	Input Input     `json:"-"`
}

// Input is anything that changes the desk: an API command, a ledger result, a clock tick,
// a socket opened or closed, a boot marker. Kind names the concrete type in the journal.
type Input interface {
	Kind() string
}

// Req is the header of every API command: the hex SHA-256 of the caller's API key (empty
// for the unauthenticated registration calls). The key itself never reaches the machine.
type Req struct {
	KeyHash string `json:"keyHash,omitempty"`
}

// Outputs is everything one input caused, as data. The loop releases replies, events and
// socket closes only once the input is durable, and hands ledger calls to the ledger adapter.
type Outputs struct {
	Replies []Reply       `json:"replies,omitempty"`
	Events  []Event       `json:"events,omitempty"`
	Calls   []LedgerCall  `json:"calls,omitempty"`
	Closes  []SocketClose `json:"closes,omitempty"`
	// Bindings name the party of each socket that opened, before any event addressed to it.
	Bindings []SocketBinding `json:"bindings,omitempty"`
	// NextDeadline is the earliest time at which the desk wants a Tick; zero when none.
	NextDeadline time.Time `json:"nextDeadline"`
}

// Reply answers the request that arrived as the input with sequence number Seq. Exactly one
// of Body and Err is meaningful: Err set means a refusal with its HTTP status.
type Reply struct {
	Seq    uint64    `json:"seq"`
	Status int       `json:"status"`
	Body   any       `json:"body,omitempty"`
	Err    *APIError `json:"err,omitempty"`
	// Replayed marks the answer of an earlier request with the same Idempotency-Key,
	// given again (idempotency.go); the transport sends Idempotent-Replayed: true.
	Replayed bool `json:"replayed,omitempty"`
}

// Event is one stream frame addressed to a party: to every socket of the party when Socket
// is zero, or to that one socket (the connect-time snapshot).
type Event struct {
	Party   string `json:"party"`
	Socket  uint64 `json:"socket,omitempty"`
	Type    string `json:"type"`
	Payload any    `json:"payload"`
	// Seq is the party's sequence number of the event (stream_resume.go): set on every
	// event addressed to the party and on the replayed frames of a resume; zero on the
	// snapshot frames and the frames that end a connect.
	Seq uint64 `json:"seq,omitempty"`
	// Raw is Payload's JSON when the desk encoded it already (a numbered event, which it
	// retains encoded), so that the transport does not encode it again; nil otherwise.
	Raw json.RawMessage `json:"-"`
}

// SocketClose tells the transport to close a stream socket with a close code.
type SocketClose struct {
	Socket uint64 `json:"socket"`
	Code   int    `json:"code"`
	Reason string `json:"reason"`
}

// SocketBinding tells the transport which party a newly opened socket belongs to, so that
// events addressed to the party reach it.
type SocketBinding struct {
	Socket uint64 `json:"socket"`
	Party  string `json:"party"`
}

// Close codes the desk sends.
const (
	CloseUnauthorized = 4401 // missing, unknown or rotated API key
	CloseRestart      = 1012 // after a resync frame
)

// ---- Non-request inputs ----

// Tick tells the desk that time has reached the envelope's At: every deadline at or before
// it fires. It is journaled like any input, so expiry replays exactly.
type Tick struct{}

// Boot marks a (re)start: every socket is closed, and ledger calls that were in flight are
// issued again under their original command ids.
type Boot struct{}

// SocketOpened reports a stream socket that finished its handshake, with the hash of the
// key its upgrade request carried (empty when none) and whether the upgrade asked for
// cancel-on-disconnect (?cancelOnDisconnect=true; cancel_on_disconnect.go).
type SocketOpened struct {
	Socket             uint64 `json:"socket"`
	KeyHash            string `json:"keyHash"`
	CancelOnDisconnect bool   `json:"cancelOnDisconnect,omitempty"`
	// Resume is the upgrade's ?since=Since: replay the retained events numbered above
	// Since instead of the snapshot when the desk still has them all (stream_resume.go).
	Resume bool   `json:"resume,omitempty"`
	Since  uint64 `json:"since,omitempty"`
	// TicketHash is the hash of the stream ticket the upgrade carried (?ticket=), instead
	// of a key hash: the desk redeems it (stream_ticket.go).
	TicketHash string `json:"ticketHash,omitempty"`
}

// SocketClosed reports that a stream socket is gone.
type SocketClosed struct {
	Socket uint64 `json:"socket"`
}

// Kind names the input in the journal.
func (Tick) Kind() string { return "tick" }

// Kind names the input in the journal.
func (Boot) Kind() string { return "boot" }

// Kind names the input in the journal.
func (SocketOpened) Kind() string { return "socket.opened" }

// Kind names the input in the journal.
func (SocketClosed) Kind() string { return "socket.closed" }

// ---- Ledger calls and their results ----

// LedgerOp is the kind of a ledger call.
type LedgerOp string

// Ledger call kinds.
const (
	OpOnboard            LedgerOp = "onboard"             // external party: topology to sign
	OpCompleteOnboarding LedgerOp = "complete-onboarding" // topology signatures
	OpPrepare            LedgerOp = "prepare"             // a command an external party signs
	OpExecute            LedgerOp = "execute"             // a prepared command with its signature
	OpSubmit             LedgerOp = "submit"              // a command the desk signs for
)

// LedgerCall is a ledger effect. CommandID is deterministic and unique per effect; the
// ledger deduplicates on it, so the same call may be issued again after a restart.
type LedgerCall struct {
	CommandID string   `json:"commandId"`
	Op        LedgerOp `json:"op"`
	ActAs     string   `json:"actAs,omitempty"`
	Command   *Command `json:"command,omitempty"`

	PreparedID string `json:"preparedId,omitempty"` // OpExecute
	Signature  []byte `json:"signature,omitempty"`  // OpExecute

	Hint       string   `json:"hint,omitempty"`       // OpOnboard
	PublicKey  []byte   `json:"publicKey,omitempty"`  // OpOnboard
	PartyID    string   `json:"partyId,omitempty"`    // OpCompleteOnboarding
	Signatures [][]byte `json:"signatures,omitempty"` // OpCompleteOnboarding

	// Prepared is the serialized prepared transaction the prepare answered (OpExecute):
	// the ledger keeps none, so the execute hands it back.
	Prepared []byte `json:"prepared,omitempty"`
	// Since is the ledger offset the desk recorded when it first issued this effect
	// (OpExecute, OpSubmit: Desk.LedgerEnd): its completion comes after it, so the adapter
	// reads the completion stream from there when it must learn what an earlier attempt
	// did, also after a restart, when the call is issued again with it.
	Since int64 `json:"since,omitempty"`
	// Reserved are the holdings of ActAs that the input holdings of this prepare must not
	// name: those the desk's own live prepared transactions name (coinsel.go), sorted. Set
	// on the prepare of a send allocation or a transfer when it goes out; never stored (a
	// call kept in Pending has none; the snapshot has no place for it).
	Reserved []string `json:"reserved,omitempty" snapshot:"-"`
}

// Command is a ledger command; exactly one field is set.
type Command struct {
	Allocate          *AllocateCmd          `json:"allocate,omitempty"`
	CancelAllocation  *CancelAllocationCmd  `json:"cancelAllocation,omitempty"`
	Settle            *SettleCmd            `json:"settle,omitempty"`
	Transfer          *TransferCmd          `json:"transfer,omitempty"`
	AcceptTransfer    *AcceptTransferCmd    `json:"acceptTransfer,omitempty"`
	CreatePreapproval *CreatePreapprovalCmd `json:"createPreapproval,omitempty"`
}

// AllocateCmd allocates Owner's side of one instrument of a settlement: Send locks the
// owner's holdings for Amount, a receiving allocation locks nothing.
type AllocateCmd struct {
	Executor       string        `json:"executor"`
	SettlementID   string        `json:"settlementId"`
	LegID          string        `json:"legId"`
	Owner          string        `json:"owner"`
	Send           bool          `json:"send"`
	Instrument     string        `json:"instrument"` // registry id
	Amount         money.Decimal `json:"amount"`
	AllocateBefore time.Time     `json:"allocateBefore"`
	SettleBefore   time.Time     `json:"settleBefore"`
}

// CancelAllocationCmd releases an allocation (the executor may always do so).
type CancelAllocationCmd struct {
	AllocationCID string `json:"allocationCid"`
}

// SettleCmd settles a settlement atomically: every leg moves and every allocation is consumed.
type SettleCmd struct {
	Executor     string   `json:"executor"`
	SettlementID string   `json:"settlementId"`
	Legs         []Leg    `json:"legs"`
	Allocations  []string `json:"allocations"`
}

// Leg is one movement of a settlement.
type Leg struct {
	Sender     string        `json:"sender"`
	Receiver   string        `json:"receiver"`
	Instrument string        `json:"instrument"` // registry id
	Amount     money.Decimal `json:"amount"`
}

// TransferCmd offers Amount of an instrument from Sender to Receiver through the token's
// transfer factory; it lands in the receiver's deposit inbox.
type TransferCmd struct {
	Sender     string        `json:"sender"`
	Receiver   string        `json:"receiver"`
	Instrument string        `json:"instrument"` // registry id
	Amount     money.Decimal `json:"amount"`
}

// AcceptTransferCmd accepts a pending transfer instruction addressed to the acting party.
type AcceptTransferCmd struct {
	InstructionCID string `json:"instructionCid"`
}

// CreatePreapprovalCmd gives Receiver a transfer preapproval, made by the desk's operator
// for a party hosted on its participant.
type CreatePreapprovalCmd struct {
	Receiver string `json:"receiver"`
}

// Ledger failure categories, as the adapter reports them.
const (
	// LedgerContention: an input is locked by a transaction in flight (Canton's
	// LOCKED_CONTRACTS); the same call may succeed later, and the desk retries a settle
	// or an allocation that met it (an execute that met it leaves the queue, SPEC's 409).
	LedgerContention = "contention"
	// LedgerInactive: an input of a prepared transaction was archived since prepare
	// (Canton's INACTIVE_CONTRACTS); the transaction can never commit.
	LedgerInactive          = "inactive"
	LedgerUnavailable       = "unavailable"
	LedgerRejected          = "rejected"
	LedgerInternal          = "internal"
	LedgerUnknownOutcome    = "unknown-outcome"
	LedgerBadSignature      = "bad-signature"
	LedgerExpired           = "expired"
	LedgerInsufficientFunds = "insufficient-funds"
	LedgerNotFound          = "not-found"
	LedgerNotSupported      = "not-supported"
	LedgerPreapprovalNeeded = "preapproval-required"
	LedgerForbidden         = "forbidden"
)

// LedgerFailure is why a ledger call did not take effect (or, for unknown-outcome, may have).
type LedgerFailure struct {
	Category string `json:"category"`
	Message  string `json:"message"`
}

// retryable reports whether the same call may succeed later.
func (f *LedgerFailure) retryable() bool {
	switch f.Category {
	case LedgerContention, LedgerUnavailable, LedgerInternal, LedgerUnknownOutcome:
		return true
	}
	return false
}

// TopologyTx is one hash a new party signs to authorize its onboarding.
type TopologyTx struct {
	Hash        []byte `json:"hash"`
	Description string `json:"description"`
}

// LedgerResult is the answer to the LedgerCall with the same CommandID, fed back as an input.
type LedgerResult struct {
	CommandID string         `json:"commandId"`
	Failure   *LedgerFailure `json:"failure,omitempty"`

	// OpOnboard
	PartyID  string       `json:"partyId,omitempty"`
	Topology []TopologyTx `json:"topology,omitempty"`

	// OpPrepare
	PreparedID string    `json:"preparedId,omitempty"`
	Hash       []byte    `json:"hash,omitempty"`
	ExpiresAt  time.Time `json:"expiresAt"`

	// OpExecute, OpSubmit
	UpdateID       string   `json:"updateId,omitempty"`
	AllocationCID  string   `json:"allocationCid,omitempty"`
	InstructionCID string   `json:"instructionCid,omitempty"`
	Receipts       []string `json:"receipts,omitempty"`

	// Prepared is the serialized prepared transaction (OpPrepare), at most
	// MaxPreparedBytes: opaque to the desk, which keeps it with the action and hands it
	// back at execute.
	Prepared []byte `json:"prepared,omitempty"`
	// Offset is the ledger's end when the call succeeded (0: a failure, or not known); the
	// desk keeps the highest (Desk.LedgerEnd) to record with the calls it issues.
	Offset int64 `json:"offset,omitempty"`
	// Inputs are the input holdings the adapter named for a send allocation or a transfer
	// (OpPrepare, OpSubmit): the desk reserves them while the prepared transaction lives.
	Inputs []string `json:"inputs,omitempty"`
}

// MaxPreparedBytes bounds a serialized prepared transaction the desk keeps: an adapter
// refuses a larger one (rejected), so a pending action costs at most this much more than
// its fields. A token-standard allocation is about 5 KiB.
const MaxPreparedBytes = 64 << 10

// Kind names the input in the journal.
func (LedgerResult) Kind() string { return "ledger.result" }
