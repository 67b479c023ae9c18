// Package fuzz holds the project's fuzz targets: wire decoders, decimals, timestamps,
// stream frames, journal records and the desk's Apply. Run them with `make fuzz`.
package fuzz

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/deskco/rfqdesk/money"
)

// wireGrammar is SPEC.md's Decimal grammar, used as the oracle for the hand-written parser.
var wireGrammar = regexp.MustCompile(`^\d+(\.\d{1,10})?$`)

// FuzzDecimalParse checks the strict parser against the SPEC.md grammar and that every
// accepted value survives a format/parse round trip, also through JSON.
func FuzzDecimalParse(f *testing.F) {
	for _, seed := range []string{"0", "1.5", "1.50", "007", "1e5", "+1", ".5", "5.", "NaN", "-0", "1.00000000001", "0.0000000001"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := money.Parse(s)
		grammatical := wireGrammar.MatchString(s)
		if err == nil && !grammatical {
			t.Fatalf("Parse accepted %q, which the grammar refuses", s)
		}
		if err != nil {
			if grammatical && len(s) <= money.MaxIntegerDigits {
				t.Fatalf("Parse refused grammatical %q: %v", s, err)
			}
			return
		}
		again, err := money.Parse(d.String())
		if err != nil || !again.Equal(d) {
			t.Fatalf("round trip of %q via %q: %v", s, d.String(), err)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back money.Decimal
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(d) {
			t.Fatalf("JSON round trip of %q: %s %v", s, b, err)
		}
	})
}
