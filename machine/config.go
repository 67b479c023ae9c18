package machine

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Network names the ledger profile the desk runs against (DECISIONS.md, Networks).
type Network string

// The three ledger profiles.
const (
	Testnet Network = "testnet"
	Sandbox Network = "sandbox"
	Mainnet Network = "mainnet"
)

// FaucetRuns reports whether a faucet can run on this network at all.
func (n Network) FaucetRuns() bool { return n == Testnet }

// WithdrawWorks reports whether withdrawals work (the local sandbox answers 501).
func (n Network) WithdrawWorks() bool { return n != Sandbox }

// PreapprovalNeeded reports whether a party needs a transfer preapproval to receive the
// native coin, so the desk makes one at register/complete.
func (n Network) PreapprovalNeeded() bool { return n != Sandbox }

// Instrument is one catalog entry: the wire symbol, how it is shown, its reference USD price
// and faucet amount, and where it lives in the ledger's token registry.
type Instrument struct {
	Symbol       string        `json:"symbol"`  // catalog symbol, lower case
	Display      string        `json:"display"` // display symbol
	Decimals     int           `json:"decimals"`
	USDPrice     money.Decimal `json:"usdPrice"`
	FaucetAmount money.Decimal `json:"faucetAmount"` // zero: not offered by the faucet
	Native       bool          `json:"native"`
	LogoURL      string        `json:"logoUrl"`
	RegistryID   string        `json:"registryId"` // the ledger's instrument id
}

// FeeTier is a fee in basis points applying from a USD notional upward.
type FeeTier struct {
	MinNotionalUSD money.Decimal `json:"minNotionalUsd"`
	FeeBps         int           `json:"feeBps"`
}

// HouseRole is what a desk-signed house party does.
type HouseRole string

// House party roles.
const (
	HouseTaker HouseRole = "taker"
	HouseMaker HouseRole = "maker"
)

// HouseParty is a party the desk signs for, with a fixed API key whose hash is configured.
type HouseParty struct {
	Hint    string    `json:"hint"`
	PartyID string    `json:"partyId"`
	Role    HouseRole `json:"role"`
	KeyHash string    `json:"keyHash"` // hex SHA-256 of the API key
}

// Config is everything the desk is told at start. It is part of the state (it is replayed
// with it) and never changes while the desk runs.
type Config struct {
	Network Network `json:"network"`
	Seed    uint64  `json:"seed"`

	MinNotionalUSD       money.Decimal `json:"minNotionalUsd"`
	QuoteLifetime        time.Duration `json:"quoteLifetime"`
	ActionLifetime       time.Duration `json:"actionLifetime"`
	SettlementGrace      time.Duration `json:"settlementGrace"`
	RegistrationLifetime time.Duration `json:"registrationLifetime"`
	ChallengeLifetime    time.Duration `json:"challengeLifetime"`
	ClosedRetention      time.Duration `json:"closedRetention"`
	MinTTL               time.Duration `json:"minTtl"`
	MaxTTL               time.Duration `json:"maxTtl"`
	FaucetCooldown       time.Duration `json:"faucetCooldown"`
	// ExecuteWait bounds how long a POST /tx/execute answer waits for ledger outcomes; entries
	// still unknown then are answered "in-flight".
	ExecuteWait time.Duration `json:"executeWait"`
	// HistoryRetention bounds the retained history rows and trades per party.
	HistoryRetention int `json:"historyRetention"`
	// MaxPendingRegistrations caps the registrations pending at once, desk-wide
	// (register/start answers 429 at the cap); 0, in a desk journaled before the cap, is
	// no cap.
	MaxPendingRegistrations int `json:"maxPendingRegistrations,omitempty"`
	// StreamRetentionEvents and StreamRetention bound each party's window of retained stream
	// events for a resume (stream_resume.go): the newest StreamRetentionEvents within
	// StreamRetention. 0, in a desk journaled before the window, retains nothing.
	StreamRetentionEvents int           `json:"streamRetentionEvents,omitempty"`
	StreamRetention       time.Duration `json:"streamRetention,omitempty"`
	// IdempotencyRetention is how long an Idempotency-Key's record is kept, by input time
	// (idempotency.go); 0 is DefaultIdempotencyRetention (24h).
	IdempotencyRetention time.Duration `json:"idempotencyRetention,omitempty"`

	Instruments []Instrument `json:"instruments"`
	FeeTiers    []FeeTier    `json:"feeTiers"`

	// Desk-signed ledger parties, created by the ledger at genesis.
	Operator  string       `json:"operator"`  // executor of every settlement
	FeeParty  string       `json:"feeParty"`  // receives the fees
	Reservoir string       `json:"reservoir"` // the faucet's source; empty: no faucet
	House     []HouseParty `json:"house"`
}

// DefaultConfig returns the lifetimes and limits of SPEC.md and DECISIONS.md, with no
// catalog, fee tiers or parties: the caller fills those in.
func DefaultConfig() Config {
	return Config{
		Network:              Testnet,
		MinNotionalUSD:       money.FromInt(10),
		QuoteLifetime:        30 * time.Second,
		ActionLifetime:       10 * time.Minute,
		SettlementGrace:      time.Minute,
		RegistrationLifetime: 10 * time.Minute,
		ChallengeLifetime:    5 * time.Minute,
		ClosedRetention:      10 * time.Minute,
		MinTTL:               5 * time.Second,
		MaxTTL:               time.Hour,
		FaucetCooldown:       time.Hour,
		ExecuteWait:          5 * time.Second,
		HistoryRetention:     500,
		// A new desk journals the cap with its genesis.
		MaxPendingRegistrations: DefaultMaxPendingRegistrations,
		StreamRetentionEvents:   DefaultStreamRetentionEvents,
		StreamRetention:         DefaultStreamRetention,
	}
}

// Validate checks the configuration for the mistakes that would make the desk misbehave.
func (c *Config) Validate() error {
	var errs []error
	switch c.Network {
	case Testnet, Sandbox, Mainnet:
	default:
		errs = append(errs, fmt.Errorf("network %q is not testnet, sandbox or mainnet", c.Network))
	}
	positive := map[string]time.Duration{
		"quote_lifetime": c.QuoteLifetime, "action_lifetime": c.ActionLifetime,
		"registration_lifetime": c.RegistrationLifetime, "challenge_lifetime": c.ChallengeLifetime,
		"closed_retention": c.ClosedRetention, "min_ttl": c.MinTTL, "max_ttl": c.MaxTTL,
		"execute_wait": c.ExecuteWait,
	}
	names := make([]string, 0, len(positive))
	for name := range positive {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if positive[name] <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	if c.SettlementGrace < 0 || c.FaucetCooldown < 0 {
		errs = append(errs, errors.New("settlement_grace and faucet_cooldown must not be negative"))
	}
	if c.MinTTL > c.MaxTTL {
		errs = append(errs, errors.New("min_ttl is above max_ttl"))
	}
	if c.HistoryRetention < 1 || c.HistoryRetention > 100000 {
		errs = append(errs, errors.New("history retention must be between 1 and 100000"))
	}
	if c.IdempotencyRetention < 0 {
		errs = append(errs, errors.New("idempotency_retention must not be negative"))
	}
	if c.MaxPendingRegistrations < 0 {
		errs = append(errs, errors.New("max_pending_registrations must not be negative"))
	}
	if err := c.validateStreamRetention(); err != nil {
		errs = append(errs, err)
	}
	if c.Operator == "" || c.FeeParty == "" {
		errs = append(errs, errors.New("operator and fee party must be set"))
	}
	seen := map[string]bool{}
	for _, in := range c.Instruments {
		switch {
		case in.Symbol == "" || in.Symbol != strings.ToLower(in.Symbol):
			errs = append(errs, fmt.Errorf("instrument symbol %q must be non-empty lower case", in.Symbol))
		case seen[in.Symbol]:
			errs = append(errs, fmt.Errorf("instrument %q is listed twice", in.Symbol))
		case in.RegistryID == "":
			errs = append(errs, fmt.Errorf("instrument %q has no registry id", in.Symbol))
		case in.USDPrice.Sign() <= 0:
			errs = append(errs, fmt.Errorf("instrument %q needs a positive usd_price", in.Symbol))
		}
		seen[in.Symbol] = true
	}
	if len(c.FeeTiers) == 0 {
		errs = append(errs, errors.New("at least one fee tier is needed"))
	}
	for _, t := range c.FeeTiers {
		if t.FeeBps < 0 || t.FeeBps > 10000 {
			errs = append(errs, fmt.Errorf("fee tier of %d bps is outside 0..10000", t.FeeBps))
		}
	}
	for _, h := range c.House {
		if h.PartyID == "" || h.Hint == "" || len(h.KeyHash) != 64 {
			errs = append(errs, fmt.Errorf("house party %q needs a party id, a hint and a key hash", h.Hint))
		}
		if h.Role != HouseTaker && h.Role != HouseMaker {
			errs = append(errs, fmt.Errorf("house party %q has role %q, not taker or maker", h.Hint, h.Role))
		}
	}
	return errors.Join(errs...)
}

// feeBpsFor returns the fee of the tier with the largest minimum at or below notional.
func (c *Config) feeBpsFor(notional money.Decimal) int {
	best := -1
	bps := 0
	for i, t := range c.FeeTiers {
		if t.MinNotionalUSD.Cmp(notional) <= 0 && (best < 0 || t.MinNotionalUSD.Cmp(c.FeeTiers[best].MinNotionalUSD) > 0) {
			best, bps = i, t.FeeBps
		}
	}
	if best < 0 {
		return c.baseFeeBps()
	}
	return bps
}

// baseFeeBps is the fee of the lowest tier: what GET /desk calls the base tier.
func (c *Config) baseFeeBps() int {
	best := 0
	for i, t := range c.FeeTiers {
		if t.MinNotionalUSD.Cmp(c.FeeTiers[best].MinNotionalUSD) < 0 {
			best = i
		}
	}
	if len(c.FeeTiers) == 0 {
		return 0
	}
	return c.FeeTiers[best].FeeBps
}

// instrument resolves a client-sent symbol, case-insensitively. The catalog symbol always
// wins; a display form names an instrument only when no other instrument shares it.
func (c *Config) instrument(symbol string) (*Instrument, bool) {
	lower := strings.ToLower(symbol)
	for i := range c.Instruments {
		if c.Instruments[i].Symbol == lower {
			return &c.Instruments[i], true
		}
	}
	var found *Instrument
	for i := range c.Instruments {
		if strings.ToLower(c.Instruments[i].Display) == lower {
			if found != nil {
				return nil, false // ambiguous display form
			}
			found = &c.Instruments[i]
		}
	}
	return found, found != nil
}

// instrumentByRegistryID finds the catalog entry of a ledger instrument id.
func (c *Config) instrumentByRegistryID(id string) (*Instrument, bool) {
	for i := range c.Instruments {
		if c.Instruments[i].RegistryID == id {
			return &c.Instruments[i], true
		}
	}
	return nil, false
}
