package ledgeradapter_test

import (
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// TestShortfallInCallersTerms: an insufficient-funds failure names the catalog symbol, the
// free amount and the amount needed, and neither the party id nor the registry's instrument
// id.
func TestShortfallInCallersTerms(t *testing.T) {
	a, ps := embeddedWith(t, ledgeradapter.Embedded{
		House: []ledgeradapter.House{{Hint: "small", Role: machine.HouseTaker, KeyHash: strings.Repeat("a", 64),
			Fund: map[string]money.Decimal{"usdcx": money.MustParse("5")}}},
	})
	small := ps.House[0].PartyID
	cases := []struct {
		name, sender, amount, want string
	}{
		{"some free", small, "7.5", "5 usdcx free, 7.5 usdcx needed"},
		{"none free", ps.FeeParty, "1", "0 usdcx free, 1 usdcx needed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := do(t, a, machine.LedgerCall{CommandID: "t-" + c.name, Op: machine.OpSubmit, ActAs: c.sender,
				Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: c.sender, Receiver: ps.Operator,
					Instrument: "usdcx-registry", Amount: money.MustParse(c.amount)}}})
			f := res.Failure
			if f == nil || f.Category != machine.LedgerInsufficientFunds || f.Message != c.want {
				t.Fatalf("got %+v, want %q", f, c.want)
			}
			if strings.Contains(f.Message, "::") || strings.Contains(f.Message, "registry") {
				t.Fatalf("the message leaks ledger ids: %q", f.Message)
			}
		})
	}
}
