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

// entityMachine is one configured stateless machine shared by every entity of a kind;
// the entity travels through the context (external storage).
type entityMachine struct {
	kind string
	sm   *stateless.StateMachine
}

func newEntityMachine(kind string, configure func(sm *stateless.StateMachine)) *entityMachine {
	sm := stateless.NewStateMachineWithExternalStorage(
		func(ctx context.Context) (stateless.State, error) {
			e, ok := ctx.Value(entityKey{}).(stateful)
			if !ok {
				return nil, errNoEntity
			}
			return e.getState(), nil
		},
		func(ctx context.Context, s stateless.State) error {
			e, ok := ctx.Value(entityKey{}).(stateful)
			if !ok {
				return errNoEntity
			}
			e.setState(s.(State))
			return nil
		},
		stateless.FiringImmediate,
	)
	configure(sm)
	return &entityMachine{kind: kind, sm: sm}
}

// fire moves e by trigger t, or fails without changing it when the transition is not allowed.
func (m *entityMachine) fire(e stateful, t Trigger) error {
	ctx := context.WithValue(context.Background(), entityKey{}, e)
	if ok, _ := m.sm.CanFireCtx(ctx, t); !ok {
		return fmt.Errorf("%s in state %s cannot take %s", m.kind, e.getState(), t)
	}
	return m.sm.FireCtx(ctx, t)
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
