package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// ErrConfigRefused wraps the reason a start refused a configuration change that cannot
// apply to the data directory's desk; nothing was journaled or changed.
var ErrConfigRefused = errors.New("the configuration change cannot apply to this data")

// ConfigChange is what a start changed of the configuration in force: the keys, old and
// new, in DiffConfig's order; empty when the configuration given was the one in force.
type ConfigChange []machine.ConfigDelta

// planReconfigure compares the desk configuration given (parties filled in from the
// ledger's genesis) with the one in force. It returns the Reconfigure input to journal
// (nil when nothing changes), or an error wrapping ErrConfigRefused that names every
// change that cannot apply.
func (n *Node) planReconfigure(inForce, given machine.Config) (*machine.Reconfigure, ConfigChange, error) {
	deltas, err := machine.DiffConfig(inForce, given)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrConfigRefused, err)
	}
	// An instrument added is listed on the embedded ledger by reconfigure (listAdded).
	if len(deltas) == 0 {
		return nil, nil, nil
	}
	return &machine.Reconfigure{Config: given}, deltas, nil
}

// checkLedgerSpec compares the ledger genesis given with the journaled one: the network,
// the seed (unless drawn), the house parties with their keys and funding, and the faucet
// reservoir of the instruments of the genesis catalog, all made at genesis, cannot change.
// The catalog's other differences are the desk configuration's to judge (planReconfigure).
func checkLedgerSpec(given, journaled LedgerSpec, seedDrawn bool) error {
	var refused []string
	if given.Network != journaled.Network {
		refused = append(refused, fmt.Sprintf("network cannot change on a desk with data (%q in force, %q configured)", journaled.Network, given.Network))
	}
	if given.DedupWindow != journaled.DedupWindow {
		refused = append(refused, fmt.Sprintf("ledger_dedup_window cannot change on a desk with data (%s in force, %s configured)", journaled.DedupWindow, given.DedupWindow))
	}
	if !seedDrawn && given.Seed != journaled.Seed {
		refused = append(refused, fmt.Sprintf("seed cannot change on a desk with data (%d in force, %d configured)", journaled.Seed, given.Seed))
	}
	houses := func(hs []ledgeradapter.House) map[string]ledgeradapter.House {
		m := map[string]ledgeradapter.House{}
		for _, h := range hs {
			m[h.Hint] = h
		}
		return m
	}
	was, now := houses(journaled.House), houses(given.House)
	for _, hint := range slices.Sorted(maps.Keys(now)) {
		h, old := now[hint], was[hint]
		switch {
		case old.Hint == "":
			refused = append(refused, fmt.Sprintf("house party %q cannot be added: house parties are made at genesis", hint))
		case h.Role != old.Role:
			refused = append(refused, fmt.Sprintf("house party %q: role cannot change (%s in force)", hint, old.Role))
		case h.KeyHash != old.KeyHash:
			refused = append(refused, fmt.Sprintf("house party %q: its API key differs from the one journaled at genesis; restore it (api_key, api_key_env or <data>/house-keys.json)", hint))
		case !sameAmounts(h.Fund, old.Fund):
			refused = append(refused, fmt.Sprintf("house party %q: fund is paid at genesis only and cannot change (%s in force)", hint, amountsText(old.Fund)))
		}
	}
	for _, hint := range slices.Sorted(maps.Keys(was)) {
		if _, ok := now[hint]; !ok {
			refused = append(refused, fmt.Sprintf("house party %q cannot be removed: keep its [[house]] table", hint))
		}
	}
	for _, in := range journaled.Catalog {
		if a, b := given.Reservoir[in.Symbol], journaled.Reservoir[in.Symbol]; a.Cmp(b) != 0 {
			refused = append(refused, fmt.Sprintf("instrument.%s.reservoir is funded at genesis only and cannot change (%s in force)", in.Symbol, b))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("%w: %s", ErrConfigRefused, strings.Join(refused, "; "))
	}
	return nil
}

func sameAmounts(a, b map[string]money.Decimal) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func amountsText(m map[string]money.Decimal) string {
	b, _ := json.Marshal(m) // sorted keys
	return string(b)
}

// reconfigure lists the instruments the change adds on the ledger (durably), then
// journals and applies the change as the input right after Boot, before any request can
// reach the loop, and logs it key by key.
func (n *Node) reconfigure(change machine.Reconfigure, deltas ConfigChange) error {
	if err := n.listAdded(context.Background(), n.Config, change.Config); err != nil {
		return err
	}
	if err := n.Loop.Reconfigure(context.Background(), change); err != nil {
		return fmt.Errorf("journal the configuration change: %w", err)
	}
	for _, d := range deltas {
		n.log.Info("configuration changed", "key", d.Key, "old", d.Old, "new", d.New)
	}
	n.Config = change.Config
	n.Changed = deltas
	return nil
}
