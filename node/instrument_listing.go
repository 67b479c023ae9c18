package node

import (
	"context"
	"fmt"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
)

// listAdded lists on the embedded ledger every instrument that given adds to inForce,
// each with its faucet reservoir funding (the reservoir configured for it, by the rule
// genesis funds the catalog with), and waits until the ledger journal holds the listing:
// the desk journals its config.change naming the instrument only after the ledger's
// listing is durable, so no replay finds a desk instrument the ledger lacks. A listing
// the ledger holds already (a start that stopped before the desk journaled) is no change.
func (n *Node) listAdded(ctx context.Context, inForce, given machine.Config) error {
	added := machine.AddedInstruments(inForce, given)
	for _, in := range added {
		amt := ledgeradapter.ReservoirFunding(n.ledgerSpec.Network, n.givenReservoir, in)
		if err := n.Ledger.ListInstrument(in, amt); err != nil {
			return fmt.Errorf("%w: instrument %s: %v", ErrConfigRefused, in.Symbol, err)
		}
		n.log.Info("instrument listed on the ledger", "symbol", in.Symbol, "registry_id", in.RegistryID, "reservoir", amt.String())
	}
	if p := n.lastLedger.Load(); p != nil && len(added) > 0 {
		if _, err := p.Wait(ctx); err != nil {
			return fmt.Errorf("journal the instrument listing on the ledger: %w", err)
		}
	}
	return nil
}
