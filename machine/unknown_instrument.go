package machine

import (
	"fmt"
	"strings"
)

// unknownInstrument is the text of a refusal of a symbol the catalog does not have: it
// lists the symbols that are, so the caller can correct the request without a second call.
func (c *Config) unknownInstrument(symbol string) string {
	symbols := make([]string, len(c.Instruments))
	for i, in := range c.Instruments {
		symbols[i] = in.Symbol
	}
	return fmt.Sprintf("unknown instrument %q: the instruments are %s", symbol, strings.Join(symbols, ", "))
}
