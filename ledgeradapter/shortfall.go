package ledgeradapter

import (
	"fmt"

	"github.com/deskco/rfqdesk/ledgersim"
)

// shortfallText says an insufficient-funds failure in the terms of the party that meets
// it: the catalog symbol, its free amount and the amount needed. The ledger's own text
// names the full party id and the registry's instrument id, which are not the caller's
// terms (and the party id is nobody else's business in a reply).
func (a *Adapter) shortfallText(s ledgersim.Shortfall) string {
	symbol := s.Instrument
	if in, err := a.L.Instrument(s.Instrument); err == nil && in.Symbol != "" {
		symbol = in.Symbol
	}
	if s.MaxInputs > 0 {
		return fmt.Sprintf("%s %s needed is spread over more than %d free holdings, more than one command may spend; merge some first",
			s.Needed, symbol, s.MaxInputs)
	}
	return fmt.Sprintf("%s %s free, %s %s needed", s.Free, symbol, s.Needed, symbol)
}
