package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reconfigure puts a changed configuration in force on a desk that has data: the process
// computes it at start from its configuration file and the configuration in force
// (DiffConfig), journals it as one input and applies it like any other, so a replay of the
// journal, a snapshot and the simulator all see the change at the same point.
//
// Config is the whole configuration to put in force. Apply accepts it only if DiffConfig
// allows every difference from the configuration in force and it validates; otherwise the
// input changes nothing (the process refuses to start before journaling such a change, so
// only a damaged journal could carry one).
type Reconfigure struct {
	Config Config `json:"config"`
}

// Kind names the input in the journal.
func (Reconfigure) Kind() string { return "config.change" }

// ConfigDelta is one key whose value a Reconfigure changes, in the configuration file's
// terms: Key is the file's key ("quote_lifetime", "instrument.cbtc.usd_price",
// "fee_tier", "instrument.cbtc" for an instrument added), Old and New its values as text
// ("" for none).
type ConfigDelta struct {
	Key, Old, New string
}

// String renders the delta as "key: old -> new".
func (d ConfigDelta) String() string {
	old, nu := d.Old, d.New
	if old == "" {
		old = "(none)"
	}
	if nu == "" {
		nu = "(none)"
	}
	return d.Key + ": " + old + " -> " + nu
}

// DiffConfig lists what changes from the configuration in force (old) to next, key by key
// in a fixed order: the limits and lifetimes, the fee tiers (as one list), then each
// instrument of next in its order (its price, faucet amount and logo, or the whole
// instrument when it is added), then the catalog's order. It returns an error, naming
// every key, when a difference cannot apply to a desk that has data: the network and seed,
// the desk's own parties and house parties (made at the ledger's genesis), an
// instrument's decimals, display symbol, native flag or registry id (amounts, holdings and
// ledger instruments already carry them), or an instrument removed (holdings, RFQs and
// quotes may name it).
func DiffConfig(old, next Config) ([]ConfigDelta, error) {
	var out []ConfigDelta
	var refused []string
	add := func(key, o, n string) {
		if o != n {
			out = append(out, ConfigDelta{Key: key, Old: o, New: n})
		}
	}
	fixed := func(key, o, n string) {
		if o != n {
			refused = append(refused, fmt.Sprintf("%s cannot change on a desk with data (%q in force, %q configured)", key, o, n))
		}
	}
	fixed("network", string(old.Network), string(next.Network))
	fixed("seed", strconv.FormatUint(old.Seed, 10), strconv.FormatUint(next.Seed, 10))
	fixed("operator party", old.Operator, next.Operator)
	fixed("fee party", old.FeeParty, next.FeeParty)
	fixed("faucet reservoir party", old.Reservoir, next.Reservoir)
	fixed("house", houseText(old.House), houseText(next.House))

	add("min_notional_usd", old.MinNotionalUSD.String(), next.MinNotionalUSD.String())
	durations := []struct {
		key      string
		old, new time.Duration
	}{
		{"quote_lifetime", old.QuoteLifetime, next.QuoteLifetime},
		{"action_lifetime", old.ActionLifetime, next.ActionLifetime},
		{"settlement_grace", old.SettlementGrace, next.SettlementGrace},
		{"registration_lifetime", old.RegistrationLifetime, next.RegistrationLifetime},
		{"challenge_lifetime", old.ChallengeLifetime, next.ChallengeLifetime},
		{"closed_retention", old.ClosedRetention, next.ClosedRetention},
		{"min_ttl", old.MinTTL, next.MinTTL},
		{"max_ttl", old.MaxTTL, next.MaxTTL},
		{"faucet_cooldown", old.FaucetCooldown, next.FaucetCooldown},
		{"execute_wait", old.ExecuteWait, next.ExecuteWait},
		{"idempotency_retention", old.idempotencyRetention(), next.idempotencyRetention()},
	}
	for _, d := range durations {
		add(d.key, d.old.String(), d.new.String())
	}
	add("history_retention", strconv.Itoa(old.HistoryRetention), strconv.Itoa(next.HistoryRetention))
	add("max_pending_registrations", strconv.Itoa(old.MaxPendingRegistrations), strconv.Itoa(next.MaxPendingRegistrations))
	add("stream_retention_events", strconv.Itoa(old.StreamRetentionEvents), strconv.Itoa(next.StreamRetentionEvents))
	add("stream_retention", old.StreamRetention.String(), next.StreamRetention.String())
	add("fee_tier", tiersText(old.FeeTiers), tiersText(next.FeeTiers))

	inForce := map[string]Instrument{}
	for _, in := range old.Instruments {
		inForce[in.Symbol] = in
	}
	configured := map[string]bool{}
	for _, in := range next.Instruments {
		configured[in.Symbol] = true
		was, ok := inForce[in.Symbol]
		key := "instrument." + in.Symbol
		if !ok {
			add(key, "", instrumentText(in))
			continue
		}
		fixed(key+".decimals", strconv.Itoa(was.Decimals), strconv.Itoa(in.Decimals))
		fixed(key+".display", was.Display, in.Display)
		fixed(key+".native", strconv.FormatBool(was.Native), strconv.FormatBool(in.Native))
		fixed(key+".registry_id", was.RegistryID, in.RegistryID)
		add(key+".usd_price", was.USDPrice.String(), in.USDPrice.String())
		add(key+".faucet_amount", was.FaucetAmount.String(), in.FaucetAmount.String())
		add(key+".logo_url", was.LogoURL, in.LogoURL)
	}
	for _, in := range old.Instruments {
		if !configured[in.Symbol] {
			refused = append(refused, fmt.Sprintf("instrument %q cannot be removed from a desk with data (holdings, RFQs and quotes may name it): keep its [[instrument]] table", in.Symbol))
		}
	}
	symbols := func(c Config) string {
		s := make([]string, len(c.Instruments))
		for i, in := range c.Instruments {
			s[i] = in.Symbol
		}
		return strings.Join(s, ",")
	}
	if len(refused) == 0 {
		add("instrument order", symbols(old), symbols(next))
	}
	if len(refused) > 0 {
		return nil, errors.New(strings.Join(refused, "; "))
	}
	return out, nil
}

// houseText renders the house parties for a comparison.
func houseText(hs []HouseParty) string {
	b, _ := json.Marshal(hs)
	return string(b)
}

// tiersText renders fee tiers as "0:30bps, 10000:20bps".
func tiersText(ts []FeeTier) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = fmt.Sprintf("%s:%dbps", t.MinNotionalUSD, t.FeeBps)
	}
	return strings.Join(s, ", ")
}

// instrumentText renders an added instrument.
func instrumentText(in Instrument) string {
	return fmt.Sprintf("%s (decimals %d, usd_price %s, faucet_amount %s, native %t)",
		in.Display, in.Decimals, in.USDPrice, in.FaucetAmount, in.Native)
}

// AddedInstruments returns the instruments of next whose symbol old does not have, in
// next's order: the ones a Reconfigure adds, which the ledger must list first.
func AddedInstruments(old, next Config) []Instrument {
	var out []Instrument
	for _, in := range next.Instruments {
		if !slices.ContainsFunc(old.Instruments, func(o Instrument) bool { return o.Symbol == in.Symbol }) {
			out = append(out, in)
		}
	}
	return out
}

// reconfigure applies a Reconfigure: the new configuration replaces the one in force if
// every difference may apply and it validates; otherwise nothing changes. Deadlines already
// set keep the times they were set with; the new values apply to what comes after.
func (a *applier) reconfigure(in Reconfigure) {
	next := cloneConfig(in.Config)
	if _, err := DiffConfig(a.d.Cfg, next); err != nil {
		return
	}
	if err := next.Validate(); err != nil {
		return
	}
	a.d.Cfg = next
}

// cloneConfig copies a configuration so that the desk shares no slice with its input.
func cloneConfig(c Config) Config {
	c.Instruments = slices.Clone(c.Instruments)
	c.FeeTiers = slices.Clone(c.FeeTiers)
	c.House = slices.Clone(c.House)
	return c
}
