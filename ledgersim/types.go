package ledgersim

import (
	"crypto/ed25519"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Party is an allocated ledger party.
type Party struct {
	// ID is "<hint>::" + Fingerprint(public key): "1220" and 64 hex digits.
	ID string
	// Hint is the part of the id before "::".
	Hint string
	// PublicKey is the party's Ed25519 key: held by the party for an external party,
	// derived from the seed and hint and held by the desk for an internal one.
	PublicKey ed25519.PublicKey
	// External is true for parties that sign their own prepared transactions.
	External bool
}

// Instrument is an instrument of the token registry.
type Instrument struct {
	ID            string // registry id
	Admin         string // registry admin party id
	Symbol        string // catalog symbol (lower case)
	DisplaySymbol string // symbol for humans
	Decimals      int    // fractional digits amounts are rendered with (catalog metadata; amounts carry up to 10)
	Native        bool   // the network's native coin
	Listed        bool   // false once delisted
}

// Lock is the lock of a holding: who holds it, until when, and what for.
type Lock struct {
	// Holders are the parties the lock is held for.
	Holders []string
	// Expires is when the lock lapses (zero: never). From then on the holding counts
	// as free and its owner may spend it.
	Expires time.Time
	// Context says what locked it: "allocation <cid>" or "transfer <cid>".
	Context string
}

// ExpiredAt reports whether the lock has lapsed at now.
func (l *Lock) ExpiredAt(now time.Time) bool {
	return l != nil && !l.Expires.IsZero() && !now.Before(l.Expires)
}

func (l *Lock) clone() *Lock {
	if l == nil {
		return nil
	}
	c := *l
	c.Holders = append([]string(nil), l.Holders...)
	return &c
}

// Holding is a holding contract: an amount of an instrument owned by a party, maybe
// locked.
type Holding struct {
	CID        string
	Owner      string
	Instrument string // registry id
	Admin      string // registry admin party id
	Amount     money.Decimal
	Lock       *Lock // nil: unlocked
	// Symbol and DisplaySymbol come from the catalog when a query answers; for an
	// instrument that left the catalog both carry the raw registry id.
	Symbol        string
	DisplaySymbol string
	// CreatedOffset is the offset of the update that created it (0: genesis).
	CreatedOffset int64
}

// FreeAt reports whether the holding is spendable at now: unlocked or its lock lapsed.
func (h Holding) FreeAt(now time.Time) bool { return h.Lock == nil || h.Lock.ExpiredAt(now) }

// TransferInstruction is a pending transfer, waiting on its receiver (the deposit inbox).
type TransferInstruction struct {
	CID           string
	Sender        string
	Receiver      string
	Instrument    string
	Admin         string
	Amount        money.Decimal
	ExecuteBefore time.Time // zero: never expires
	Reason        string
	Locked        string // the sender's holding locked for it
	Symbol        string // as for Holding
	DisplaySymbol string
	CreatedOffset int64
}

// Allocation is a party's allocation for a settlement.
type Allocation struct {
	CID            string
	Settlement     SettlementRef
	LegID          string
	Owner          string
	Side           Side
	Instrument     string
	Amount         money.Decimal
	AllocateBefore time.Time
	SettleBefore   time.Time
	Locked         string // the locked holding of a Send allocation; "" for Receive
	CreatedOffset  int64
}

// Preapproval is a party's transfer preapproval for the native coin.
type Preapproval struct {
	CID      string
	Receiver string // the party it lets receive the native coin
	// Provider is the party that created it: the receiver itself, or the internal
	// party that acted on its behalf (CreatePreapproval.Receiver).
	Provider      string
	CreatedOffset int64
}

// ContractKind names the kind of a contract.
type ContractKind string

// The contract kinds.
const (
	ContractHolding             ContractKind = "holding"
	ContractTransferInstruction ContractKind = "transfer-instruction"
	ContractAllocation          ContractKind = "allocation"
	ContractPreapproval         ContractKind = "preapproval"
)

// Contract is a live contract of any kind: exactly the field of its Kind is set.
type Contract struct {
	CID                 string
	Kind                ContractKind
	Holding             *Holding
	TransferInstruction *TransferInstruction
	Allocation          *Allocation
	Preapproval         *Preapproval
}

// Update is the result of a command that took effect.
type Update struct {
	// UpdateID is "1220" + 64 hex digits.
	UpdateID string
	// Offset is the update's position; offsets increase by one per update from 1.
	Offset     int64
	CommandID  string
	PreparedID string // "" for Submit
	ActAs      string
	Kind       CommandKind
	RecordTime time.Time
	// Created and Archived list the contract ids in the order the update made them.
	Created  []string
	Archived []string
	// Allocation is the created allocation (Allocate).
	Allocation string
	// TransferInstruction is the created instruction (Transfer).
	TransferInstruction string
	// Preapproval is the receiver's preapproval, new or existing (CreatePreapproval;
	// "" on sandbox).
	Preapproval string
	// Receipts are the holdings created for receivers: one per leg in leg order
	// (Settle), the received holding (AcceptTransfer).
	Receipts []string
	// Released are the free holdings created by releasing a lock (cancel, withdraw,
	// reject).
	Released []string
}

// lists is the number of entries of u's four lists.
func (u *Update) lists() int {
	return len(u.Created) + len(u.Archived) + len(u.Receipts) + len(u.Released)
}

func (u *Update) clone() Update {
	n := u.lists()
	if n == 0 {
		return u.cloneInto(nil)
	}
	return u.cloneInto(make([]string, 0, n)) // one allocation for the four lists
}

// cloneInto copies u with its four lists in all's array, which has room for them.
func (u *Update) cloneInto(all []string) Update {
	c := *u
	if u.lists() == 0 {
		c.Created, c.Archived, c.Receipts, c.Released = nil, nil, nil, nil
		return c
	}
	part := func(s []string) []string {
		if len(s) == 0 {
			return nil
		}
		all = append(all, s...)
		return all[len(all)-len(s) : len(all) : len(all)]
	}
	c.Created = part(u.Created)
	c.Archived = part(u.Archived)
	c.Receipts = part(u.Receipts)
	c.Released = part(u.Released)
	return c
}

// Prepared is a prepared transaction: a command interpreted against the ledger, with the
// input contracts it consumes fixed and the hash its acting party signs.
type Prepared struct {
	ID         string
	Hash       [32]byte
	ActAs      string
	Command    Command
	CommandID  string
	PreparedAt time.Time
	ExpiresAt  time.Time
	// Inputs are every contract the transaction consumes (referenced contracts first,
	// then the chosen holdings); Execute fails with ErrInactive if one is gone.
	Inputs []string
	// Blob is the serialized prepared transaction (blob.go) that Execute takes back: the
	// header the hash covers, the transaction's nodes, its input contracts and the
	// registry's disclosed contracts, authenticated by the ledger. Set on Prepare's
	// answer only (the ledger keeps no copy).
	Blob []byte
}

func (p *Prepared) clone() Prepared {
	c := *p
	c.Command = cloneCommand(p.Command)
	c.Inputs = append([]string(nil), p.Inputs...)
	return c
}

// Balance is a party's free and locked totals of one instrument.
type Balance struct {
	Instrument    string
	Symbol        string
	DisplaySymbol string
	Free          money.Decimal
	Locked        money.Decimal
}

// TopologyTx is one topology transaction of an onboarding: the 34-byte multihash the
// party signs and what it authorizes.
type TopologyTx struct {
	Hash        []byte
	Description string
}

// Onboarding is a pending external-party onboarding.
type Onboarding struct {
	PartyID   string
	Topology  []TopologyTx
	ExpiresAt time.Time
}
