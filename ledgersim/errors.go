package ledgersim

import (
	"errors"
	"fmt"
)

// Category classifies every error the ledger returns. Callers branch on the category
// (with errors.Is against the Err* sentinels, or CategoryOf), never on message text.
type Category uint8

// Error categories. CategoryNone is the zero value: "no error" in a Fault.
const (
	CategoryNone                Category = iota // no error (a Fault that rejects nothing)
	CategoryContention                          // an input contract is locked by a transaction in flight (Canton's LOCKED_CONTRACTS); retry
	CategoryUnavailable                         // the ledger is unavailable or busy; retry
	CategoryRejected                            // the ledger rejected the command for a reason outside the sim's model
	CategoryInternal                            // an internal ledger error; retry
	CategoryUnknownOutcome                      // the call may or may not have taken effect; retry with the same command id
	CategoryBadSignature                        // a signature did not verify with the party's key, or the count was wrong
	CategoryExpired                             // a prepared transaction, a window or a lock's deadline has passed
	CategoryInsufficientFunds                   // free holdings cannot cover the amount
	CategoryNotFound                            // unknown party, contract, update, instrument or prepared transaction
	CategoryNotSupported                        // the profile does not support the operation (sandbox faucet and withdraw)
	CategoryPreapprovalRequired                 // the receiver has no transfer preapproval for the native coin
	CategoryForbidden                           // the acting party may not do this
	CategoryInvalid                             // a malformed argument or command
	CategoryAlreadyExists                       // the party, allocation leg or onboarding already exists
	CategoryAlreadyExecuted                     // Prepare of a command id that already took effect (see Error.UpdateID)
	CategoryMismatch                            // a settlement's legs and allocations do not match
	CategoryInactive                            // an input contract was archived since prepare (Canton's INACTIVE_CONTRACTS): the prepared transaction can never commit
	CategoryDuplicate                           // the command id of the acting party already took effect (Canton's DUPLICATE_COMMAND, see Error.SubmissionID)
	CategoryAlreadyInFlight                     // a submission of the same command id of the acting party is in flight (Canton's SUBMISSION_ALREADY_IN_FLIGHT): its outcome comes through the completion stream
)

var categoryNames = [...]string{
	CategoryNone:                "none",
	CategoryContention:          "contention",
	CategoryUnavailable:         "unavailable",
	CategoryRejected:            "rejected",
	CategoryInternal:            "internal",
	CategoryUnknownOutcome:      "unknown outcome",
	CategoryBadSignature:        "bad signature",
	CategoryExpired:             "expired",
	CategoryInsufficientFunds:   "insufficient funds",
	CategoryNotFound:            "not found",
	CategoryNotSupported:        "not supported",
	CategoryPreapprovalRequired: "preapproval required",
	CategoryForbidden:           "forbidden",
	CategoryInvalid:             "invalid",
	CategoryAlreadyExists:       "already exists",
	CategoryAlreadyExecuted:     "already executed",
	CategoryMismatch:            "mismatch",
	CategoryInactive:            "inactive",
	CategoryDuplicate:           "duplicate command",
	CategoryAlreadyInFlight:     "submission already in flight",
}

// String names the category.
func (c Category) String() string {
	if int(c) < len(categoryNames) {
		return categoryNames[c]
	}
	return fmt.Sprintf("category(%d)", uint8(c))
}

// Retryable reports whether an error of this category is transient: contention,
// unavailable, internal, unknown outcome and a submission already in flight are;
// everything else is terminal for the same command.
func (c Category) Retryable() bool {
	switch c {
	case CategoryContention, CategoryUnavailable, CategoryInternal, CategoryUnknownOutcome, CategoryAlreadyInFlight:
		return true
	}
	return false
}

// Error is the one error type of the ledger. Op names the call ("prepare", "execute",
// ...), Msg says what went wrong, UpdateID is set for CategoryAlreadyExecuted (the update
// the command id already produced), Err is an optional wrapped cause.
type Error struct {
	Category Category
	Op       string
	Msg      string
	UpdateID string
	// SubmissionID is set for CategoryDuplicate: the earlier submission of the command,
	// as its Completion names it (not its update: the outcome is the completion's).
	SubmissionID string
	Err          error
	// Shortfall details a CategoryInsufficientFunds error of holding selection (shortfall.go).
	Shortfall *Shortfall
}

// Error formats "ledgersim: op: category: msg: cause".
func (e *Error) Error() string {
	s := "ledgersim"
	if e.Op != "" {
		s += ": " + e.Op
	}
	s += ": " + e.Category.String()
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the wrapped cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrX) true when err is an *Error of the sentinel's category.
// A sentinel is an *Error carrying only a category.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Op != "" || t.Msg != "" || t.Err != nil || t.UpdateID != "" {
		return false
	}
	return e.Category == t.Category
}

// Retryable reports whether the error is transient (see Category.Retryable).
func (e *Error) Retryable() bool { return e.Category.Retryable() }

// Sentinels for errors.Is, one per category.
var (
	ErrContention          = &Error{Category: CategoryContention}
	ErrUnavailable         = &Error{Category: CategoryUnavailable}
	ErrRejected            = &Error{Category: CategoryRejected}
	ErrInternal            = &Error{Category: CategoryInternal}
	ErrUnknownOutcome      = &Error{Category: CategoryUnknownOutcome}
	ErrBadSignature        = &Error{Category: CategoryBadSignature}
	ErrExpired             = &Error{Category: CategoryExpired}
	ErrInsufficientFunds   = &Error{Category: CategoryInsufficientFunds}
	ErrNotFound            = &Error{Category: CategoryNotFound}
	ErrNotSupported        = &Error{Category: CategoryNotSupported}
	ErrPreapprovalRequired = &Error{Category: CategoryPreapprovalRequired}
	ErrForbidden           = &Error{Category: CategoryForbidden}
	ErrInvalid             = &Error{Category: CategoryInvalid}
	ErrAlreadyExists       = &Error{Category: CategoryAlreadyExists}
	ErrAlreadyExecuted     = &Error{Category: CategoryAlreadyExecuted}
	ErrInactive            = &Error{Category: CategoryInactive}
	ErrDuplicate           = &Error{Category: CategoryDuplicate}
	ErrMismatch            = &Error{Category: CategoryMismatch}
	ErrAlreadyInFlight     = &Error{Category: CategoryAlreadyInFlight}
)

// CategoryOf returns the category of err: CategoryNone for nil, CategoryInternal for an
// error that is not (and does not wrap) an *Error.
func CategoryOf(err error) Category {
	if err == nil {
		return CategoryNone
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Category
	}
	return CategoryInternal
}

// Retryable reports whether err is transient (see Category.Retryable).
func Retryable(err error) bool { return err != nil && CategoryOf(err).Retryable() }

// newErr builds an *Error; msg is formatted with args.
func newErr(c Category, op, format string, args ...any) *Error {
	return &Error{Category: c, Op: op, Msg: fmt.Sprintf(format, args...)}
}

// withOp returns err with its Op set when it has none (command checks run without one).
func withOp(err error, op string) error {
	var e *Error
	if errors.As(err, &e) && e.Op == "" {
		c := *e
		c.Op = op
		return &c
	}
	return err
}
