package ledgeradapter

import (
	"fmt"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// ListCommandID is the ledger command id under which ListInstrument lists an instrument:
// one per registry id, so that a listing re-issued after a crash takes effect once.
func ListCommandID(registryID string) string { return "list-instrument:" + registryID }

// ReservoirFunding is what the faucet reservoir is funded with of the catalog instrument
// in: the configured amount (reservoir keyed by catalog symbol), or, when no reservoir is
// configured at all (nil), DefaultReservoirDraws draws of its faucet amount; zero on a
// network without a faucet. NewEmbedded funds the genesis catalog by the same rule.
func ReservoirFunding(network machine.Network, reservoir map[string]money.Decimal, in machine.Instrument) money.Decimal {
	switch {
	case !network.FaucetRuns():
		return money.Zero
	case reservoir == nil:
		if in.FaucetAmount.Sign() > 0 {
			return in.FaucetAmount.MulHalfEven(money.FromInt(DefaultReservoirDraws))
		}
		return money.Zero
	}
	if amt, ok := reservoir[in.Symbol]; ok && amt.Sign() > 0 {
		return amt
	}
	return money.Zero
}

// ListInstrument lists a catalog instrument on the embedded ledger after genesis, with
// reservoir minted to the faucet reservoir in the same update (ledgersim.Ledger.
// ListInstrument), under ListCommandID. It is idempotent: an instrument the ledger lists
// already with the same symbol, display symbol, decimals and native flag is no change (a
// start that crashed after listing it lists nothing again); one listed with other
// metadata is an error. The caller waits for the ledger journal to hold the input.
func (a *Adapter) ListInstrument(in machine.Instrument, reservoir money.Decimal) error {
	if have, err := a.L.Instrument(in.RegistryID); err == nil {
		if have.Symbol != in.Symbol || have.DisplaySymbol != in.Display || have.Decimals != in.Decimals || have.Native != in.Native {
			return fmt.Errorf("list instrument %s: the ledger lists %q already as %s (%s, %d decimals, native %v)",
				in.Symbol, in.RegistryID, have.Symbol, have.DisplaySymbol, have.Decimals, have.Native)
		}
		return nil
	}
	spec := ledgersim.InstrumentSpec{ID: in.RegistryID, Admin: RegistryHint, Symbol: in.Symbol,
		DisplaySymbol: in.Display, Decimals: in.Decimals, Native: in.Native}
	if _, err := a.L.ListInstrument(spec, reservoir, ListCommandID(in.RegistryID)); err != nil {
		return fmt.Errorf("list instrument %s on the ledger: %w", in.Symbol, err)
	}
	return nil
}
