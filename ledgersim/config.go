package ledgersim

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Config is everything a Ledger is built from. Two ledgers built from equal Configs and
// fed the same Inputs (see Replay) reach the same state and Digest.
type Config struct {
	// Profile is testnet (default), sandbox or mainnet.
	Profile Profile
	// Clock is the only source of time; required.
	Clock Clock
	// Seed derives every contract id, update id, prepared id and the desk-held keys of
	// internal parties.
	Seed uint64
	// LedgerID names this ledger inside every hash (topology and prepared transactions).
	// Default "ledgersim".
	LedgerID string
	// Instruments is the token registry's catalog at genesis.
	Instruments []InstrumentSpec
	// Parties are the internal (desk-signed) parties created at genesis with their
	// funding. Genesis funding is where supply is created, besides the reservoir funding
	// of an instrument listed later (Ledger.ListInstrument).
	Parties []GenesisParty
	// Faucet names the reservoir party (one of Parties) and what one draw offers.
	Faucet FaucetConfig
	// PreparedLifetime is how long a prepared transaction may be executed. Default 10m.
	PreparedLifetime time.Duration
	// OnboardingLifetime is how long a pending external onboarding may be completed.
	// Default 30m (longer than the desk's 10-minute registration window).
	OnboardingLifetime time.Duration
	// DedupWindow is the deduplication window the ledger promises: a command re-issued
	// by the same party under the same command id (or an execute of the same prepared
	// transaction) within this long of its update's record time is refused as a duplicate
	// and takes no effect again, its completion still readable, as long as the update is also among the newest Limits.MaxRetainedUpdates.
	// Updates older than the window are forgotten, so what the ledger retains is bounded by
	// age as well as by count. Default DefaultDedupWindow; at least PreparedLifetime; a
	// negative value is no age bound (a journal written before the window replays as it
	// ran). The default is DefaultDedupWindow, or three prepared lifetimes if longer.
	DedupWindow time.Duration
	// Limits bound the state that grows with input; zero fields take their defaults.
	Limits Limits
	// FaultPlan is consulted on every ledger call (nil: no faults).
	FaultPlan FaultPlan
	// Sleep is called outside the lock with a fault's delay before the call returns
	// (nil: delays are ignored). The desk passes time.Sleep; a simulation passes a hook.
	Sleep func(time.Duration)
	// Recorder receives every state-changing Input, in apply order, under the ledger's
	// lock: it must be fast and must not call back into the Ledger.
	Recorder func(Input)
	// SequencingDelay is how long an execute stays in flight between its sequencing and
	// its commit (0: none): its inputs are locked and its command id is in flight
	// meanwhile (inflight.go). Execute reports it to Sleep outside the lock; BeginExecute
	// leaves the wait to its caller (a simulation commits on its virtual clock).
	SequencingDelay time.Duration
}

// DefaultPreparedLifetime is Config.PreparedLifetime's default.
const DefaultPreparedLifetime = 10 * time.Minute

// DefaultDedupWindow is Config.DedupWindow's default: three times the lifetime of a
// prepared transaction or of a desk's sign action (10 minutes), so that a command still
// in flight when its issuer stopped is deduplicated when the issuer re-issues it after a
// restart of up to about twenty minutes.
const DefaultDedupWindow = 30 * time.Minute

// Limits bound every map that grows with input.
type Limits struct {
	// MaxPrepared bounds live prepared transactions (default 100000); beyond it Prepare
	// answers ErrUnavailable until some expire or execute.
	MaxPrepared int
	// MaxPendingOnboardings bounds pending external onboardings (default 10000).
	MaxPendingOnboardings int
	// MaxRetainedUpdates bounds the updates kept for Update() and command deduplication
	// (default 100000), beside Config.DedupWindow's bound by age. The oldest are forgotten
	// first: a command id is deduplicated for as long as its update is retained, so a
	// sustained rate above MaxRetainedUpdates per DedupWindow shortens the window (counted
	// by Ledger.DedupShortened).
	MaxRetainedUpdates int
	// MaxInputs bounds the holdings one command may consume (default 256).
	MaxInputs int
	// MaxLegs bounds the legs of a settlement (default 64).
	MaxLegs int
}

func (l Limits) withDefaults() Limits {
	if l.MaxPrepared <= 0 {
		l.MaxPrepared = 100000
	}
	if l.MaxPendingOnboardings <= 0 {
		l.MaxPendingOnboardings = 10000
	}
	if l.MaxRetainedUpdates <= 0 {
		l.MaxRetainedUpdates = 100000
	}
	if l.MaxInputs <= 0 {
		l.MaxInputs = 256
	}
	if l.MaxLegs <= 0 {
		l.MaxLegs = 64
	}
	return l
}

// InstrumentSpec configures one instrument of the token registry.
type InstrumentSpec struct {
	// ID is the registry's instrument id (e.g. "Amulet"); unique.
	ID string `json:"id"`
	// Admin is the hint of the registry admin party. It is created at genesis as an
	// internal party when it is not one of Config.Parties. Default "registry".
	Admin string `json:"admin,omitempty"`
	// Symbol is the catalog symbol (lower case). Default: ID lower-cased.
	Symbol string `json:"symbol,omitempty"`
	// DisplaySymbol is the symbol for humans. Default: ID.
	DisplaySymbol string `json:"displaySymbol,omitempty"`
	// Decimals is how many fractional digits the catalog renders amounts with (0..10):
	// metadata only. Amounts of every instrument may carry up to money.MaxFractionDigits
	// (10) fractional digits whatever its Decimals.
	Decimals int `json:"decimals"`
	// Native marks the network's native coin (the one a preapproval guards).
	Native bool `json:"native,omitempty"`
}

// GenesisParty is an internal party created at genesis.
type GenesisParty struct {
	// Hint is the party hint; the party id is derived from it and the seed.
	Hint string
	// Funding is minted to the party at genesis, one holding per entry.
	Funding []Funding
	// Preapproval creates the party's transfer preapproval at genesis.
	Preapproval bool
}

// Funding is an amount of an instrument.
type Funding struct {
	Instrument string
	Amount     money.Decimal
}

// FaucetConfig describes the faucet: transfers from the reservoir party.
type FaucetConfig struct {
	// Reservoir is the hint of the genesis party that funds faucet draws ("" = no faucet).
	Reservoir string
	// Drip is what one draw offers, per instrument.
	Drip []Funding
}

const (
	maxIDLen   = 256
	maxHintLen = 128
)

// validHint reports whether s can be a party hint: 1..128 of letters, digits, '-', '_', '.'.
func validHint(s string) bool {
	if len(s) == 0 || len(s) > maxHintLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// normalize fills defaults and validates c; it returns a copy.
func (c Config) normalize() (Config, error) {
	if c.Profile == "" {
		c.Profile = ProfileTestnet
	}
	if !c.Profile.Valid() {
		return c, fmt.Errorf("ledgersim: config: unknown profile %q", c.Profile)
	}
	if c.Clock == nil {
		return c, fmt.Errorf("ledgersim: config: a Clock is required")
	}
	if c.LedgerID == "" {
		c.LedgerID = "ledgersim"
	}
	if len(c.LedgerID) > maxIDLen {
		return c, fmt.Errorf("ledgersim: config: ledger id longer than %d bytes", maxIDLen)
	}
	if c.PreparedLifetime <= 0 {
		c.PreparedLifetime = DefaultPreparedLifetime
	}
	if c.OnboardingLifetime <= 0 {
		c.OnboardingLifetime = 30 * time.Minute
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = max(DefaultDedupWindow, 3*c.PreparedLifetime)
	}
	if c.DedupWindow > 0 && c.DedupWindow < c.PreparedLifetime {
		return c, fmt.Errorf("ledgersim: config: the deduplication window (%s) is shorter than a prepared transaction's lifetime (%s)", c.DedupWindow, c.PreparedLifetime)
	}
	c.Limits = c.Limits.withDefaults()
	ins := make([]InstrumentSpec, len(c.Instruments))
	seen := map[string]bool{}
	for i, s := range c.Instruments {
		if s.ID == "" || len(s.ID) > maxIDLen {
			return c, fmt.Errorf("ledgersim: config: instrument %d: id must be 1..%d bytes", i, maxIDLen)
		}
		if seen[s.ID] {
			return c, fmt.Errorf("ledgersim: config: instrument %q listed twice", s.ID)
		}
		seen[s.ID] = true
		if s.Admin == "" {
			s.Admin = "registry"
		}
		if !validHint(s.Admin) {
			return c, fmt.Errorf("ledgersim: config: instrument %q: bad admin hint %q", s.ID, s.Admin)
		}
		if s.Symbol == "" {
			s.Symbol = strings.ToLower(s.ID)
		}
		if s.DisplaySymbol == "" {
			s.DisplaySymbol = s.ID
		}
		if s.Decimals < 0 || s.Decimals > money.MaxFractionDigits {
			return c, fmt.Errorf("ledgersim: config: instrument %q: decimals %d outside 0..%d", s.ID, s.Decimals, money.MaxFractionDigits)
		}
		ins[i] = s
	}
	c.Instruments = ins
	byID := map[string]InstrumentSpec{}
	for _, s := range ins {
		byID[s.ID] = s
	}
	checkFunding := func(where string, f Funding) error {
		if _, ok := byID[f.Instrument]; !ok {
			return fmt.Errorf("ledgersim: config: %s: unknown instrument %q", where, f.Instrument)
		}
		if f.Amount.Sign() <= 0 || f.Amount.FractionDigits() > money.MaxFractionDigits {
			return fmt.Errorf("ledgersim: config: %s: amount %s of %q must be positive with at most %d fractional digits", where, f.Amount, f.Instrument, money.MaxFractionDigits)
		}
		return nil
	}
	hints := map[string]bool{}
	parties := make([]GenesisParty, len(c.Parties))
	for i, p := range c.Parties {
		if !validHint(p.Hint) {
			return c, fmt.Errorf("ledgersim: config: party %d: bad hint %q", i, p.Hint)
		}
		if hints[p.Hint] {
			return c, fmt.Errorf("ledgersim: config: party %q listed twice", p.Hint)
		}
		hints[p.Hint] = true
		for _, f := range p.Funding {
			if err := checkFunding("party "+p.Hint, f); err != nil {
				return c, err
			}
		}
		p.Funding = append([]Funding(nil), p.Funding...)
		parties[i] = p
	}
	c.Parties = parties
	if c.Faucet.Reservoir != "" && !hints[c.Faucet.Reservoir] {
		return c, fmt.Errorf("ledgersim: config: faucet reservoir %q is not one of the genesis parties", c.Faucet.Reservoir)
	}
	for _, f := range c.Faucet.Drip {
		if err := checkFunding("faucet drip", f); err != nil {
			return c, err
		}
	}
	c.Faucet.Drip = append([]Funding(nil), c.Faucet.Drip...)
	return c, nil
}
