package strategy

import "errors"

// The reasons a maker gives the desk when it declines an RFQ (POST /maker/rfq/{id}/decline),
// as the desk spells them.
const (
	DeclinePrice      = "price"      // the maker has no price for the pair
	DeclineSize       = "size"       // the size is more than the maker takes, or too small to price
	DeclineInventory  = "inventory"  // the maker lacks the instrument the quote would spend
	DeclineInstrument = "instrument" // the maker does not trade the instrument (unused by Decide)
	DeclineOther      = "other"      // anything else
)

// DeclineReason is the reason to decline an RFQ that Decide skipped with err: no reference
// price is price; a quote that would spend more than the allowed share of a holding, or
// that rounds to zero, is size; no free holding of what the quote spends is inventory;
// anything else (a direction the strategy does not know) is other. A nil err (Decide
// quotes) has no reason: "".
func DeclineReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNoReference):
		return DeclinePrice
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrDust):
		return DeclineSize
	case errors.Is(err, ErrNoHolding):
		return DeclineInventory
	}
	return DeclineOther
}
