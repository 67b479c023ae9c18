package machine

import (
	"context"
	"errors"
	"fmt"

	"github.com/qmuntal/stateless"
)

// State and trigger names of the entity machines. They are typed strings: stateless takes
// `any`, and a mistyped value would silently create a new empty state (LIBRARIES.md).
type (
	// State is an entity's state in its machine.
	State string
	// Trigger is what moves an entity from one state to another.
	Trigger string
)

// Registration states and triggers.
const (
	RegOnboarding State = "onboarding" // waiting for the ledger's topology
	RegAwaiting   State = "awaiting-signatures"
	RegCompleting State = "completing" // signatures with the ledger
	RegCompleted  State = "completed"
	RegExpired    State = "expired"
	RegFailed     State = "failed"

	TrigTopologyReady Trigger = "topology-ready"
	TrigSignaturesIn  Trigger = "signatures-in"
	TrigSignaturesBad Trigger = "signatures-bad"
	TrigOnboarded     Trigger = "onboarded"
	TrigLedgerFailed  Trigger = "ledger-failed"
	TrigExpire        Trigger = "expire"
)

// RFQ states and triggers. A settling trade does not change the RFQ's state; it is a flag.
const (
	RFQOpen      State = "open"
	RFQFilled    State = "filled"
	RFQCancelled State = "cancelled"
	RFQExpired   State = "expired"

	TrigFill   Trigger = "fill"
	TrigCancel Trigger = "cancel"
	// TrigExpire is shared with the other machines.
)

// Quote states and triggers. Funding, Live and Settling all show as "pending" on the wire.
const (
	QuoteFunding   State = "funding"  // pending, allocations not landed: invisible to the taker
	QuoteLive      State = "live"     // pending, anchored
	QuoteSettling  State = "settling" // pending, accepted, its trade settling
	QuoteWon       State = "won"
	QuoteLost      State = "lost"
	QuoteRevoked   State = "revoked"
	QuoteCancelled State = "cancelled"
	QuoteExpired   State = "expired"

	TrigAnchored     Trigger = "anchored"
	TrigAccept       Trigger = "accept"
	TrigWin          Trigger = "win"
	TrigLose         Trigger = "lose"
	TrigRevoke       Trigger = "revoke" // replacement, DELETE, unsigned expiry, failed funding
	TrigSettleFailed Trigger = "settle-failed"
	TrigRFQCancelled Trigger = "rfq-cancelled"
)

// Trade states and triggers.
const (
	TradeAllocating State = "allocating" // waiting for every allocation
	TradeSettling   State = "settling-ledger"
	TradeSettled    State = "settled"
	TradeFailed     State = "failed"

	TrigAllocated Trigger = "allocated"
	TrigSettled   Trigger = "settled"
	TrigFail      Trigger = "fail"
)

// Sign action states and triggers.
const (
	ActionPending   State = "pending"
	ActionExecuting State = "executing" // an execute is with the ledger
	ActionDone      State = "done"
	ActionExpired   State = "expired"
	ActionCancelled State = "cancelled"

	TrigExecute         Trigger = "execute"
	TrigExecuted        Trigger = "executed"
	TrigExecuteRejected Trigger = "execute-rejected" // back to pending: sign again
	TrigDrop            Trigger = "drop"             // its flow died
)

// stateful is an entity whose state a machine reads and writes.
type stateful interface {
	getState() State
	setState(State)
}

type entityKey struct{}

// errNoEntity is what the shared machine answers when asked about no entity (ToGraph does).
var errNoEntity = errors.New("no entity in the context")

// entityCtx is the context a fire hands the shared machine: the entity rides in it as a
// plain field, so a fire allocates no context (context.WithValue would, every time).
type entityCtx struct {
	context.Context
	e stateful
}

// Value answers entityKey with the entity and defers everything else to the parent.
func (c *entityCtx) Value(key any) any {
	if key == (entityKey{}) {
		return c.e
	}
	return c.Context.Value(key)
}

// entityOf returns the entity a context carries: the entity of an entityCtx without an
// interface lookup, else whatever context.WithValue stored under entityKey.
func entityOf(ctx context.Context) (stateful, bool) {
	if c, ok := ctx.(*entityCtx); ok {
		return c.e, c.e != nil
	}
	e, ok := ctx.Value(entityKey{}).(stateful)
	return e, ok
}

// entityMachine is one configured stateless machine shared by every entity of a kind;
// the entity travels through the context (external storage). A desk is applied on one
// goroutine at a time, and so is its entityMachine: fire reuses one context.
type entityMachine struct {
	kind string
	sm   *stateless.StateMachine
	ctx  entityCtx
}

func newEntityMachine(kind string, configure func(sm *stateless.StateMachine)) *entityMachine {
	sm := stateless.NewStateMachineWithExternalStorage(
		func(ctx context.Context) (stateless.State, error) {
			e, ok := entityOf(ctx)
			if !ok {
				return nil, errNoEntity
			}
			return boxState(e.getState()), nil
		},
		func(ctx context.Context, s stateless.State) error {
			e, ok := entityOf(ctx)
			if !ok {
				return errNoEntity
			}
			e.setState(s.(State))
			return nil
		},
		stateless.FiringImmediate,
	)
	configure(sm)
	return &entityMachine{kind: kind, sm: sm, ctx: entityCtx{Context: context.Background()}}
}

// fire moves e by trigger t, or fails without changing it when the transition is not allowed.
func (m *entityMachine) fire(e stateful, t Trigger) error {
	m.ctx.e = e
	defer func() { m.ctx.e = nil }()
	trig := boxTrigger(t)
	if ok, _ := m.sm.CanFireCtx(&m.ctx, trig); !ok {
		return fmt.Errorf("%s in state %s cannot take %s", m.kind, e.getState(), t)
	}
	return m.sm.FireCtx(&m.ctx, trig)
}

// can tells whether the machine permits trigger t for e in its current state: the guard a
// continuation uses before it fires t, so that legality is decided by the machine alone.
func (m *entityMachine) can(e stateful, t Trigger) bool {
	m.ctx.e = e
	defer func() { m.ctx.e = nil }()
	ok, _ := m.sm.CanFireCtx(&m.ctx, boxTrigger(t))
	return ok
}

// must moves e by trigger t and panics when the machine does not permit it. The core fires
// only transitions its own checks have made legal, so a refusal here is a bug: the loop
// answers the input with an internal error and the simulator reports a failure.
func (m *entityMachine) must(e stateful, t Trigger) {
	if err := m.fire(e, t); err != nil {
		panic(fmt.Sprintf("machine: illegal transition: %v", err))
	}
}

// boxState returns s as the machine's state value. A known state comes from a constant,
// which Go boxes without allocating; converting a State variable would allocate each time.
func boxState(s State) stateless.State {
	switch s {
	case RegOnboarding:
		return RegOnboarding
	case RegAwaiting:
		return RegAwaiting
	case RegCompleting:
		return RegCompleting
	case RegCompleted:
		return RegCompleted
	case RegExpired:
		return RegExpired
	case RegFailed:
		return RegFailed
	case RFQOpen:
		return RFQOpen
	case RFQFilled:
		return RFQFilled
	case RFQCancelled:
		return RFQCancelled
	case QuoteFunding:
		return QuoteFunding
	case QuoteLive:
		return QuoteLive
	case QuoteSettling:
		return QuoteSettling
	case QuoteWon:
		return QuoteWon
	case QuoteLost:
		return QuoteLost
	case QuoteRevoked:
		return QuoteRevoked
	case TradeAllocating:
		return TradeAllocating
	case TradeSettling:
		return TradeSettling
	case TradeSettled:
		return TradeSettled
	case ActionPending:
		return ActionPending
	case ActionExecuting:
		return ActionExecuting
	case ActionDone:
		return ActionDone
	}
	// "expired", "cancelled" and "failed" are shared by several machines and listed once; a state
	// no machine knows is boxed as it is.
	return s
}

// boxTrigger returns t as the machine's trigger value, from a constant when known (see
// boxState).
func boxTrigger(t Trigger) stateless.Trigger {
	switch t {
	case TrigTopologyReady:
		return TrigTopologyReady
	case TrigSignaturesIn:
		return TrigSignaturesIn
	case TrigSignaturesBad:
		return TrigSignaturesBad
	case TrigOnboarded:
		return TrigOnboarded
	case TrigLedgerFailed:
		return TrigLedgerFailed
	case TrigExpire:
		return TrigExpire
	case TrigFill:
		return TrigFill
	case TrigCancel:
		return TrigCancel
	case TrigAnchored:
		return TrigAnchored
	case TrigAccept:
		return TrigAccept
	case TrigWin:
		return TrigWin
	case TrigLose:
		return TrigLose
	case TrigRevoke:
		return TrigRevoke
	case TrigSettleFailed:
		return TrigSettleFailed
	case TrigRFQCancelled:
		return TrigRFQCancelled
	case TrigAllocated:
		return TrigAllocated
	case TrigSettled:
		return TrigSettled
	case TrigFail:
		return TrigFail
	case TrigExecute:
		return TrigExecute
	case TrigExecuted:
		return TrigExecuted
	case TrigExecuteRejected:
		return TrigExecuteRejected
	case TrigDrop:
		return TrigDrop
	}
	return t
}

// machines are the configured entity machines, built once per process.
type machines struct {
	registration, rfq, quote, trade, action *entityMachine
}

func buildMachines() *machines {
	return &machines{
		registration: newEntityMachine("registration", func(sm *stateless.StateMachine) {
			sm.Configure(RegOnboarding).
				Permit(TrigTopologyReady, RegAwaiting).
				Permit(TrigLedgerFailed, RegFailed).
				Permit(TrigExpire, RegExpired)
			sm.Configure(RegAwaiting).
				Permit(TrigSignaturesIn, RegCompleting).
				Permit(TrigExpire, RegExpired)
			sm.Configure(RegCompleting).
				Permit(TrigOnboarded, RegCompleted).
				Permit(TrigSignaturesBad, RegAwaiting).
				Permit(TrigLedgerFailed, RegAwaiting).
				Permit(TrigExpire, RegExpired)
			sm.Configure(RegCompleted)
			sm.Configure(RegExpired)
			sm.Configure(RegFailed)
		}),
		rfq: newEntityMachine("rfq", func(sm *stateless.StateMachine) {
			sm.Configure(RFQOpen).
				Permit(TrigFill, RFQFilled).
				Permit(TrigCancel, RFQCancelled).
				Permit(TrigExpire, RFQExpired)
			sm.Configure(RFQFilled)
			sm.Configure(RFQCancelled)
			sm.Configure(RFQExpired)
		}),
		quote: newEntityMachine("quote", func(sm *stateless.StateMachine) {
			sm.Configure(QuoteFunding).
				Permit(TrigAnchored, QuoteLive).
				Permit(TrigRevoke, QuoteRevoked).
				Permit(TrigRFQCancelled, QuoteCancelled).
				Permit(TrigLose, QuoteLost).
				Permit(TrigExpire, QuoteExpired)
			sm.Configure(QuoteLive).
				Permit(TrigAccept, QuoteSettling).
				Permit(TrigRevoke, QuoteRevoked).
				Permit(TrigRFQCancelled, QuoteCancelled).
				Permit(TrigLose, QuoteLost).
				Permit(TrigExpire, QuoteExpired)
			sm.Configure(QuoteSettling).
				Permit(TrigWin, QuoteWon).
				Permit(TrigSettleFailed, QuoteRevoked)
			sm.Configure(QuoteWon)
			sm.Configure(QuoteLost)
			sm.Configure(QuoteRevoked)
			sm.Configure(QuoteCancelled)
			sm.Configure(QuoteExpired)
		}),
		trade: newEntityMachine("trade", func(sm *stateless.StateMachine) {
			sm.Configure(TradeAllocating).
				Permit(TrigAllocated, TradeSettling).
				Permit(TrigFail, TradeFailed)
			sm.Configure(TradeSettling).
				Permit(TrigSettled, TradeSettled).
				Permit(TrigFail, TradeFailed)
			sm.Configure(TradeSettled)
			sm.Configure(TradeFailed)
		}),
		action: newEntityMachine("action", func(sm *stateless.StateMachine) {
			sm.Configure(ActionPending).
				Permit(TrigExecute, ActionExecuting).
				Permit(TrigExpire, ActionExpired).
				Permit(TrigDrop, ActionCancelled)
			sm.Configure(ActionExecuting).
				Permit(TrigExecuted, ActionDone).
				Permit(TrigExecuteRejected, ActionPending).
				Permit(TrigExpire, ActionExpired).
				Permit(TrigDrop, ActionCancelled)
			sm.Configure(ActionDone)
			sm.Configure(ActionExpired)
			sm.Configure(ActionCancelled)
		}),
	}
}

// graphs returns the DOT diagram of every entity machine, by kind, for the docs.
func (m *machines) graphs() map[string]string {
	return map[string]string{
		"registration": m.registration.sm.ToGraph(),
		"rfq":          m.rfq.sm.ToGraph(),
		"quote":        m.quote.sm.ToGraph(),
		"trade":        m.trade.sm.ToGraph(),
		"action":       m.action.sm.ToGraph(),
	}
}
