package ledgersim

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Command is a ledger command: one of Allocate, CancelAllocation, WithdrawAllocation,
// Settle, Transfer, AcceptTransfer, RejectTransfer, WithdrawTransfer, CreatePreapproval.
// The set is sealed. Each command has a canonical binary encoding (ENCODING.md) that the
// prepared-transaction hash covers.
type Command interface {
	// Kind names the command ("allocate", "settle", ...).
	Kind() CommandKind
	encode(e *encoder)
	clone() Command
}

// CommandKind names a command type; it is also its tag in the canonical encoding.
type CommandKind string

// The command kinds.
const (
	KindAllocate           CommandKind = "allocate"
	KindCancelAllocation   CommandKind = "cancel-allocation"
	KindWithdrawAllocation CommandKind = "withdraw-allocation"
	KindSettle             CommandKind = "settle"
	KindTransfer           CommandKind = "transfer"
	KindAcceptTransfer     CommandKind = "accept-transfer"
	KindRejectTransfer     CommandKind = "reject-transfer"
	KindWithdrawTransfer   CommandKind = "withdraw-transfer"
	KindCreatePreapproval  CommandKind = "create-preapproval"
)

// SettlementRef names a settlement: its executor party and an id unique to the executor.
type SettlementRef struct {
	Executor string `json:"executor"`
	ID       string `json:"id"`
}

// Side says whether an allocation sends (locks the owner's holdings) or receives (the
// owner's consent to receive; locks nothing).
type Side uint8

// The two sides of an allocation.
const (
	SideSend    Side = 1
	SideReceive Side = 2
)

// String names the side ("send", "receive").
func (s Side) String() string {
	switch s {
	case SideSend:
		return "send"
	case SideReceive:
		return "receive"
	}
	return fmt.Sprintf("side(%d)", uint8(s))
}

// MarshalText writes "send" or "receive".
func (s Side) MarshalText() ([]byte, error) {
	if s != SideSend && s != SideReceive {
		return nil, fmt.Errorf("ledgersim: invalid side %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads "send" or "receive".
func (s *Side) UnmarshalText(b []byte) error {
	switch string(b) {
	case "send":
		*s = SideSend
	case "receive":
		*s = SideReceive
	default:
		return fmt.Errorf("ledgersim: invalid side %q", b)
	}
	return nil
}

// Allocate allocates the acting party's part of a settlement for one instrument. A Send
// allocation locks holdings of Amount until SettleBefore (change is returned as a free
// holding); a Receive allocation locks nothing. (Settlement, LegID) is unique among live
// allocations.
type Allocate struct {
	Settlement     SettlementRef `json:"settlement"`
	LegID          string        `json:"legId"`
	Side           Side          `json:"side"`
	Instrument     string        `json:"instrument"`
	Amount         money.Decimal `json:"amount"`
	AllocateBefore time.Time     `json:"allocateBefore"` // zero: no allocation deadline
	SettleBefore   time.Time     `json:"settleBefore"`   // required
	// Inputs are the holdings a Send allocation spends, named by the submitter as
	// Canton's allocation factory takes them (inputHoldingCids): each live, the acting
	// party's, of Instrument, free, named once, at most Limits.MaxInputs of them, together
	// covering Amount. A Receive allocation names none. The ledger reserves nothing at
	// prepare; execute re-checks them (spent since: ErrInactive).
	Inputs []string `json:"inputHoldingCids,omitempty"`
}

// CancelAllocation archives an allocation and releases its lock; the executor or the
// allocation's owner may cancel.
type CancelAllocation struct {
	Allocation string `json:"allocation"`
}

// WithdrawAllocation archives an allocation and releases its lock; only its owner may.
type WithdrawAllocation struct {
	Allocation string `json:"allocation"`
}

// Leg is one transfer of a settlement.
type Leg struct {
	Sender     string        `json:"sender"`
	Receiver   string        `json:"receiver"`
	Instrument string        `json:"instrument"`
	Amount     money.Decimal `json:"amount"`
}

// Settle executes a settlement atomically, by its executor: every named allocation is
// consumed and every leg moves in one update, or nothing happens.
type Settle struct {
	Settlement  SettlementRef `json:"settlement"`
	Legs        []Leg         `json:"legs"`
	Allocations []string      `json:"allocations"`
}

// Transfer sends Amount of Instrument from the acting party to Receiver through the
// instrument's transfer factory: it creates a pending transfer instruction (the
// receiver's deposit inbox) and locks the sender's holdings for it until the receiver
// accepts or rejects, or the sender withdraws. On the faucet path the acting party is
// the reservoir.
type Transfer struct {
	Receiver      string        `json:"receiver"`
	Instrument    string        `json:"instrument"`
	Amount        money.Decimal `json:"amount"`
	ExecuteBefore time.Time     `json:"executeBefore"` // zero: the instruction never expires
	Reason        string        `json:"reason,omitempty"`
	// Inputs are the holdings the transfer spends, named by the submitter (Canton's
	// inputHoldingCids), under the rules of Allocate.Inputs.
	Inputs []string `json:"inputHoldingCids,omitempty"`
}

// AcceptTransfer accepts a pending transfer instruction; only its receiver may.
type AcceptTransfer struct {
	Instruction string `json:"instruction"`
}

// RejectTransfer rejects a pending transfer instruction (funds return to the sender);
// only its receiver may.
type RejectTransfer struct {
	Instruction string `json:"instruction"`
}

// WithdrawTransfer withdraws a pending transfer instruction (funds return to the
// sender); only its sender may.
type WithdrawTransfer struct {
	Instruction string `json:"instruction"`
}

// CreatePreapproval creates a transfer preapproval for the native coin, so that its
// receiver can be sent the native coin on testnet and mainnet.
//
// With Receiver empty (or equal to the acting party) the acting party preapproves
// itself. With Receiver set to another party, the acting party must be internal: it acts
// as the preapproval's provider on behalf of a party hosted on the desk's participant
// (external parties included, so that nothing else needs their signature); an external
// acting party gets ErrForbidden and an unknown receiver ErrNotFound.
//
// Idempotent: when the receiver already has a preapproval, by any provider, the update
// names it and creates nothing. On sandbox, once the parties check out, it is a no-op
// success.
type CreatePreapproval struct {
	// Receiver is the party that may then receive the native coin ("" = the acting party).
	Receiver string `json:"receiver,omitempty"`
}

// Kind implementations.

func (Allocate) Kind() CommandKind           { return KindAllocate }           // Kind is "allocate".
func (CancelAllocation) Kind() CommandKind   { return KindCancelAllocation }   // Kind is "cancel-allocation".
func (WithdrawAllocation) Kind() CommandKind { return KindWithdrawAllocation } // Kind is "withdraw-allocation".
func (Settle) Kind() CommandKind             { return KindSettle }             // Kind is "settle".
func (Transfer) Kind() CommandKind           { return KindTransfer }           // Kind is "transfer".
func (AcceptTransfer) Kind() CommandKind     { return KindAcceptTransfer }     // Kind is "accept-transfer".
func (RejectTransfer) Kind() CommandKind     { return KindRejectTransfer }     // Kind is "reject-transfer".
func (WithdrawTransfer) Kind() CommandKind   { return KindWithdrawTransfer }   // Kind is "withdraw-transfer".
func (CreatePreapproval) Kind() CommandKind  { return KindCreatePreapproval }  // Kind is "create-preapproval".

func (c CancelAllocation) clone() Command   { return c }
func (c WithdrawAllocation) clone() Command { return c }
func (c AcceptTransfer) clone() Command     { return c }
func (c RejectTransfer) clone() Command     { return c }
func (c WithdrawTransfer) clone() Command   { return c }
func (c CreatePreapproval) clone() Command  { return c }
func (c Allocate) clone() Command {
	c.Inputs = cloneIDs(c.Inputs)
	return c
}
func (c Transfer) clone() Command {
	c.Inputs = cloneIDs(c.Inputs)
	return c
}
func (c Settle) clone() Command {
	c.Legs = append([]Leg(nil), c.Legs...)
	c.Allocations = append([]string(nil), c.Allocations...)
	return c
}

// normalizeCommand turns pointer commands into values and deep-copies slices, so a
// caller mutating its command after the call cannot change the ledger's copy.
func normalizeCommand(c Command) (Command, error) {
	switch v := c.(type) {
	case nil:
		return nil, newErr(CategoryInvalid, "", "no command")
	case *Allocate:
		return deref(v)
	case *CancelAllocation:
		return deref(v)
	case *WithdrawAllocation:
		return deref(v)
	case *Settle:
		return deref(v)
	case *Transfer:
		return deref(v)
	case *AcceptTransfer:
		return deref(v)
	case *RejectTransfer:
		return deref(v)
	case *WithdrawTransfer:
		return deref(v)
	case *CreatePreapproval:
		return deref(v)
	}
	return cloneCommand(c), nil
}

// deref is the ledger's own copy of the command p points to.
func deref[C Command](p *C) (Command, error) {
	if p == nil {
		return nil, newErr(CategoryInvalid, "", "nil command")
	}
	return (*p).clone(), nil
}

// cloneCommand deep-copies a command. A value command inside an interface is already
// an immutable copy, so only the slices of a Settle, an Allocate and a Transfer need
// copying; the rest is returned as is (no new allocation).
func cloneCommand(c Command) Command {
	switch v := c.(type) {
	case Settle:
		return v.clone()
	case Allocate:
		if v.Inputs != nil {
			return v.clone()
		}
	case Transfer:
		if v.Inputs != nil {
			return v.clone()
		}
	}
	return c
}

// cloneIDs copies a list of ids, keeping nil apart from empty.
func cloneIDs(ids []string) []string {
	if ids == nil {
		return nil
	}
	return append([]string{}, ids...)
}

// CommandEnvelope is the JSON form of a Command inside an Input: exactly one field set.
type CommandEnvelope struct {
	Allocate           *Allocate           `json:"allocate,omitempty"`
	CancelAllocation   *CancelAllocation   `json:"cancelAllocation,omitempty"`
	WithdrawAllocation *WithdrawAllocation `json:"withdrawAllocation,omitempty"`
	Settle             *Settle             `json:"settle,omitempty"`
	Transfer           *Transfer           `json:"transfer,omitempty"`
	AcceptTransfer     *AcceptTransfer     `json:"acceptTransfer,omitempty"`
	RejectTransfer     *RejectTransfer     `json:"rejectTransfer,omitempty"`
	WithdrawTransfer   *WithdrawTransfer   `json:"withdrawTransfer,omitempty"`
	CreatePreapproval  *CreatePreapproval  `json:"createPreapproval,omitempty"`
}

// Envelope wraps a command for JSON.
func Envelope(c Command) *CommandEnvelope { return envelope(c, true) }

// envelope wraps c, copying a Settle's slices when clone is set, in one allocation for
// the envelope and the command.
func envelope(c Command, clone bool) *CommandEnvelope {
	switch v := c.(type) {
	case Allocate:
		if clone {
			v = v.clone().(Allocate)
		}
		return boxed(v, func(e *CommandEnvelope) **Allocate { return &e.Allocate })
	case CancelAllocation:
		return boxed(v, func(e *CommandEnvelope) **CancelAllocation { return &e.CancelAllocation })
	case WithdrawAllocation:
		return boxed(v, func(e *CommandEnvelope) **WithdrawAllocation { return &e.WithdrawAllocation })
	case Settle:
		if clone {
			v = v.clone().(Settle)
		}
		return boxed(v, func(e *CommandEnvelope) **Settle { return &e.Settle })
	case Transfer:
		if clone {
			v = v.clone().(Transfer)
		}
		return boxed(v, func(e *CommandEnvelope) **Transfer { return &e.Transfer })
	case AcceptTransfer:
		return boxed(v, func(e *CommandEnvelope) **AcceptTransfer { return &e.AcceptTransfer })
	case RejectTransfer:
		return boxed(v, func(e *CommandEnvelope) **RejectTransfer { return &e.RejectTransfer })
	case WithdrawTransfer:
		return boxed(v, func(e *CommandEnvelope) **WithdrawTransfer { return &e.WithdrawTransfer })
	case CreatePreapproval:
		return boxed(v, func(e *CommandEnvelope) **CreatePreapproval { return &e.CreatePreapproval })
	}
	return nil
}

// boxed is the envelope of c, allocated with c in one allocation; field names the
// envelope's field for c's type.
func boxed[C Command](c C, field func(*CommandEnvelope) **C) *CommandEnvelope {
	b := &struct {
		e CommandEnvelope
		c C
	}{c: c}
	*field(&b.e) = &b.c
	return &b.e
}

// Command unwraps the envelope; it fails unless exactly one field is set.
func (e *CommandEnvelope) Command() (Command, error) {
	if e == nil {
		return nil, fmt.Errorf("ledgersim: empty command envelope")
	}
	var out []Command
	add := func(ok bool, c func() Command) {
		if ok {
			out = append(out, c())
		}
	}
	add(e.Allocate != nil, func() Command { return e.Allocate.clone() })
	add(e.CancelAllocation != nil, func() Command { return *e.CancelAllocation })
	add(e.WithdrawAllocation != nil, func() Command { return *e.WithdrawAllocation })
	add(e.Settle != nil, func() Command { return e.Settle.clone() })
	add(e.Transfer != nil, func() Command { return e.Transfer.clone() })
	add(e.AcceptTransfer != nil, func() Command { return *e.AcceptTransfer })
	add(e.RejectTransfer != nil, func() Command { return *e.RejectTransfer })
	add(e.WithdrawTransfer != nil, func() Command { return *e.WithdrawTransfer })
	add(e.CreatePreapproval != nil, func() Command { return *e.CreatePreapproval })
	if len(out) != 1 {
		return nil, fmt.Errorf("ledgersim: command envelope holds %d commands, want 1", len(out))
	}
	return out[0], nil
}

// MarshalCommand encodes a command as JSON (its envelope).
func MarshalCommand(c Command) ([]byte, error) {
	c, err := normalizeCommand(c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope(c))
}
