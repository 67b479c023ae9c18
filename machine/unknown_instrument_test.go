package machine

import (
	"strings"
	"testing"
)

// TestUnknownInstrumentListsSymbols: every refusal of an unknown instrument (an RFQ's base
// or quote, a withdrawal, a reference price) lists the catalog's symbols.
func TestUnknownInstrumentListsSymbols(t *testing.T) {
	h := newHarness(t)
	m := h.maker("M")
	const want = `unknown instrument "doge": the instruments are cbtc, usdcx, cc`
	base := rfqOf(h, houseTaker, "1", h.hint(m))
	base.Base = "doge"
	quote := rfqOf(h, houseTaker, "1", h.hint(m))
	quote.Quote = "doge"
	for name, in := range map[string]Input{"rfq base": base, "rfq quote": quote, "withdraw": withdrawOf(m, "doge")} {
		r := h.replies[h.apply(in)]
		if r.Err == nil || !strings.Contains(r.Err.Message, want) {
			t.Errorf("%s: %+v, want %q", name, r.Err, want)
		}
	}
	if r := h.read(m.key, QReferencePrice{Base: "doge", Quote: "usdcx"}); r.Err == nil || r.Err.Message != want {
		t.Errorf("reference price: %+v, want %q", r.Err, want)
	}
}
