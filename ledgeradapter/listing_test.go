package ledgeradapter_test

import (
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// TestListInstrument: an instrument listed through the adapter is on the ledger with the
// reservoir funded; listing it again is no change (no second mint), and listing its
// registry id with other metadata is an error.
func TestListInstrument(t *testing.T) {
	a, ps := embedded(t)
	xau := machine.Instrument{Symbol: "xau", Display: "XAU", Decimals: 4, USDPrice: money.MustParse("2000"),
		FaucetAmount: money.MustParse("5"), RegistryID: "xau-registry"}
	if err := a.ListInstrument(xau, money.MustParse("1000")); err != nil {
		t.Fatal(err)
	}
	digest := a.L.Digest()
	if err := a.ListInstrument(xau, money.MustParse("1000")); err != nil {
		t.Fatalf("listing again: %v", err)
	}
	if a.L.Digest() != digest {
		t.Fatal("listing again changed the ledger")
	}
	held := money.Zero
	for _, h := range a.Holdings(ps.Reservoir) {
		if h.Instrument == "xau-registry" {
			held = held.Add(h.Amount)
		}
	}
	if held.String() != "1000" {
		t.Fatalf("reservoir holds %s xau, want 1000", held)
	}
	other := xau
	other.Decimals = 6
	if err := a.ListInstrument(other, money.Zero); err == nil || !strings.Contains(err.Error(), "lists \"xau-registry\" already") {
		t.Fatalf("listing with other decimals: %v", err)
	}
}

// TestReservoirFunding: the configured amount, else a million draws when nothing is
// configured, and nothing without a faucet.
func TestReservoirFunding(t *testing.T) {
	in := machine.Instrument{Symbol: "xau", FaucetAmount: money.MustParse("5")}
	for _, c := range []struct {
		network   machine.Network
		reservoir map[string]money.Decimal
		want      string
	}{
		{machine.Testnet, map[string]money.Decimal{"xau": money.MustParse("7")}, "7"},
		{machine.Testnet, map[string]money.Decimal{"cbtc": money.MustParse("7")}, "0"},
		{machine.Testnet, nil, "5000000"},
		{machine.Mainnet, map[string]money.Decimal{"xau": money.MustParse("7")}, "0"},
	} {
		if got := ledgeradapter.ReservoirFunding(c.network, c.reservoir, in); got.String() != c.want {
			t.Errorf("%s %v: %s, want %s", c.network, c.reservoir, got, c.want)
		}
	}
}
