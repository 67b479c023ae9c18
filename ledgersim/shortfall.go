package ledgersim

import (
	"errors"

	"github.com/deskco/rfqdesk/money"
)

// Shortfall details an insufficient-funds error, so a caller can say it in its own terms:
// the instrument (its registry id), what the owner holds free of it, and what was needed.
// MaxInputs is set (to the ledger's limit of input holdings per command) when the free
// amount would cover it but is spread over more holdings than one command may spend.
type Shortfall struct {
	Owner      string
	Instrument string
	Free       money.Decimal
	Needed     money.Decimal
	MaxInputs  int
}

// ShortfallOf returns the details of an insufficient-funds error, if err carries them.
func ShortfallOf(err error) (Shortfall, bool) {
	var e *Error
	if errors.As(err, &e) && e.Shortfall != nil {
		return *e.Shortfall, true
	}
	return Shortfall{}, false
}

// shortfallErr is the insufficient-funds error of selectHoldings, with its details.
func shortfallErr(s Shortfall, format string, args ...any) *Error {
	e := newErr(CategoryInsufficientFunds, "", format, args...)
	e.Shortfall = &s
	return e
}
