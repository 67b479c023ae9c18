package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// inForceConfig returns the desk configuration in force in a data directory (its journal
// replayed from the newest snapshot), or nil when the directory holds no desk yet. A desk
// running on the directory holds its lock: that is an error saying where to look instead.
// Opening the journal repairs it as a start would (a torn tail is cut).
func inForceConfig(dir string) (*machine.Config, error) {
	deskDir := filepath.Join(dir, "desk")
	if _, err := os.Stat(deskDir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	log, err := journal.OpenDir(deskDir, journal.Options{})
	if errors.Is(err, journal.ErrLocked) {
		return nil, fmt.Errorf("a desk is running on %s: GET /config and /desk show what it has in force; stop it to print its whole configuration", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open the desk journal: %w", err)
	}
	defer log.Close()
	if log.LastSeq() == 0 {
		return nil, nil
	}
	desk, _, err := node.ReplayDesk(log, true, nil)
	if err != nil {
		return nil, fmt.Errorf("replay the desk journal: %w", err)
	}
	return &desk.Cfg, nil
}

// withInForce returns the file configuration with the values the desk has in force in
// their place: the limits, lifetimes, instruments and fee tiers. Keys the desk's state does
// not carry (seed, ping_interval, per_ip_per_minute, reservoirs, house tables) stay the
// file's.
func (c fileConfig) withInForce(m machine.Config) fileConfig {
	out := c
	out.Network = string(m.Network)
	out.MinNotionalUSD = m.MinNotionalUSD
	out.QuoteLifetime, out.ActionLifetime = duration(m.QuoteLifetime), duration(m.ActionLifetime)
	out.SettlementGrace, out.RegistrationLifetime = duration(m.SettlementGrace), duration(m.RegistrationLifetime)
	out.ChallengeLifetime, out.ClosedRetention = duration(m.ChallengeLifetime), duration(m.ClosedRetention)
	out.MinTTL, out.MaxTTL = duration(m.MinTTL), duration(m.MaxTTL)
	out.FaucetCooldown = duration(m.FaucetCooldown)
	out.MaxPendingRegistrations = m.MaxPendingRegistrations
	out.StreamRetentionEvents, out.StreamRetention = m.StreamRetentionEvents, duration(m.StreamRetention)
	reservoir := map[string]money.Decimal{}
	for _, in := range c.Instruments {
		reservoir[in.Symbol] = in.Reservoir
	}
	out.Instruments = nil
	for _, in := range m.Instruments {
		out.Instruments = append(out.Instruments, instrumentConfig{Symbol: in.Symbol, Display: in.Display, Decimals: in.Decimals,
			USDPrice: in.USDPrice, FaucetAmount: in.FaucetAmount, Reservoir: reservoir[in.Symbol], Native: in.Native, LogoURL: in.LogoURL})
	}
	out.FeeTiers = nil
	for _, t := range m.FeeTiers {
		out.FeeTiers = append(out.FeeTiers, feeTierConfig{MinNotionalUSD: t.MinNotionalUSD, FeeBps: t.FeeBps})
	}
	return out
}

// printInForce is -print-config: the configuration in force in the data directory as TOML
// (the file's own when the directory holds no desk yet), and on stderr what the next start
// with this file would change, or why it would refuse to start.
func printInForce(fc fileConfig, dataDir string, getenv func(string) string, stdout, stderr io.Writer) error {
	inForce, err := inForceConfig(dataDir)
	if err != nil {
		return err
	}
	shown := fc
	if inForce != nil {
		shown = fc.withInForce(*inForce)
	}
	out, err := shown.printable()
	if err != nil {
		return err
	}
	if _, err := fmt.Fprint(stdout, out); err != nil {
		return err
	}
	if inForce == nil {
		return nil
	}
	// House keys do not matter here (their changes are the ledger genesis's to judge) and
	// none may be drawn or written by a print.
	placeholder := func(string) (string, error) { return "placeholder-key-0123456789", nil }
	given, _, err := fc.resolve(getenv, placeholder)
	if err != nil {
		fmt.Fprintf(stderr, "# the configuration file cannot be compared with what is in force: %v\n", err)
		return nil
	}
	given.Seed, given.Operator, given.FeeParty, given.Reservoir = inForce.Seed, inForce.Operator, inForce.FeeParty, inForce.Reservoir
	given.House = inForce.House
	deltas, err := machine.DiffConfig(*inForce, given)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "# the configuration file cannot apply to the desk in %s; a start with it refuses: %v\n", dataDir, err)
	case len(deltas) > 0:
		fmt.Fprintln(stderr, "# the next start with this file changes:")
		for _, d := range deltas {
			fmt.Fprintf(stderr, "#   %s\n", d)
		}
	}
	return nil
}
