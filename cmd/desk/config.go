package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/strategy"
	"github.com/deskco/rfqdesk/transport"
)

// Bounds of ping_interval, the stream heartbeat: a socket that missed a pong is dropped
// within two intervals (cancel-on-disconnect then fires for a marked one). Below the minimum
// the heartbeat's sweep over every socket would run too often and a pong over a slow link
// could not come back in time; above the maximum a dead socket keeps its party invitable
// (and its quotes live) for too long.
const (
	minPingInterval = 100 * time.Millisecond
	maxPingInterval = 10 * time.Minute
)

// duration is a Go duration string in the configuration file ("30s", "10m").
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a Go duration such as \"30s\" or \"10m\"", b)
	}
	*d = duration(v)
	return nil
}

func (d duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// instrumentConfig is one [[instrument]] table.
type instrumentConfig struct {
	Symbol       string        `toml:"symbol"`
	Display      string        `toml:"display"`
	Decimals     int           `toml:"decimals"`
	USDPrice     money.Decimal `toml:"usd_price"`
	FaucetAmount money.Decimal `toml:"faucet_amount"`
	Reservoir    money.Decimal `toml:"reservoir,omitempty"` // default: a million faucet draws
	Native       bool          `toml:"native"`
	LogoURL      string        `toml:"logo_url"`
}

// feeTierConfig is one [[fee_tier]] table.
type feeTierConfig struct {
	MinNotionalUSD money.Decimal `toml:"min_notional_usd"`
	FeeBps         int           `toml:"fee_bps"`
}

// houseConfig is one [[house]] table: a party the desk signs for. Its API key comes from
// api_key, or from the environment variable api_key_env; with neither, the desk draws one at
// the first start and keeps it in the data directory (house-keys.json, mode 0600), so the
// key hash journaled at genesis stays valid across restarts.
//
// A maker with strategy = true is run by the desk itself: it keeps a stream socket open
// (so it is online and invitable) and quotes every RFQ it is invited to with the reference
// strategy (package strategy) at the reference price ± spread_bps, skipping an RFQ that
// would spend more than max_share_bps of a free holding.
type houseConfig struct {
	Name        string                   `toml:"name"`
	Role        string                   `toml:"role"`
	APIKey      string                   `toml:"api_key,omitempty"`
	APIKeyEnv   string                   `toml:"api_key_env,omitempty"`
	Fund        map[string]money.Decimal `toml:"fund,omitempty"`
	Strategy    bool                     `toml:"strategy,omitempty"`
	SpreadBps   *int                     `toml:"spread_bps,omitempty"`    // default 20 with strategy
	MaxShareBps *int                     `toml:"max_share_bps,omitempty"` // default 2500 with strategy
}

// Defaults of a house maker's strategy knobs.
const (
	defaultHouseSpreadBps   = 20
	defaultHouseMaxShareBps = 2500
)

// params returns the strategy knobs of a house maker that runs the strategy.
func (h houseConfig) params() strategy.Params {
	p := strategy.Params{SpreadBps: defaultHouseSpreadBps, MaxShareBps: defaultHouseMaxShareBps}
	if h.SpreadBps != nil {
		p.SpreadBps = *h.SpreadBps
	}
	if h.MaxShareBps != nil {
		p.MaxShareBps = *h.MaxShareBps
	}
	return p
}

// fileConfig is the configuration file (DECISIONS.md, configuration file conventions),
// decoded over the defaults: a key the file does not set keeps its default, and an
// [[instrument]], [[fee_tier]] or [[house]] list in the file replaces the default list.
type fileConfig struct {
	Network              string             `toml:"network"`
	Seed                 uint64             `toml:"seed"` // 0: drawn at the first start, then journaled
	MinNotionalUSD       money.Decimal      `toml:"min_notional_usd"`
	QuoteLifetime        duration           `toml:"quote_lifetime"`
	ActionLifetime       duration           `toml:"action_lifetime"`
	SettlementGrace      duration           `toml:"settlement_grace"`
	RegistrationLifetime duration           `toml:"registration_lifetime"`
	ChallengeLifetime    duration           `toml:"challenge_lifetime"`
	ClosedRetention      duration           `toml:"closed_retention"`
	MinTTL               duration           `toml:"min_ttl"`
	MaxTTL               duration           `toml:"max_ttl"`
	PingInterval         duration           `toml:"ping_interval"`
	FaucetCooldown       duration           `toml:"faucet_cooldown"`
	PerIPPerMinute       int                `toml:"per_ip_per_minute"`
	Instruments          []instrumentConfig `toml:"instrument"`
	FeeTiers             []feeTierConfig    `toml:"fee_tier"`
	House                []houseConfig      `toml:"house"`

	// MaxPendingRegistrations caps the registrations pending at once, desk-wide.
	MaxPendingRegistrations int `toml:"max_pending_registrations"`
	// StreamRetentionEvents and StreamRetention bound each party's window of stream events
	// a resume (?since=) can replay: the newest so many within so long.
	StreamRetentionEvents int      `toml:"stream_retention_events"`
	StreamRetention       duration `toml:"stream_retention"`
	// LedgerDedupWindow is the embedded ledger's deduplication window.
	LedgerDedupWindow duration `toml:"ledger_dedup_window"`
	// IdempotencyRetention is how long an Idempotency-Key's record is kept (0: 24h).
	IdempotencyRetention duration `toml:"idempotency_retention"`
	// CORSOrigins opens CORS to these browser origins ("https://console.example"); empty,
	// the default, sends no CORS header (transport/cors.go). At most maxCORSOrigins.
	CORSOrigins []string `toml:"cors_origins"`
}

// maxCORSOrigins bounds cors_origins.
const maxCORSOrigins = 64

// checkCORSOrigins refuses a cors_origins list that is too long or names an origin in a
// form a browser never sends (transport.ValidateCORSOrigin), naming the key.
func checkCORSOrigins(origins []string) error {
	if len(origins) > maxCORSOrigins {
		return fmt.Errorf("cors_origins: %d origins, at most %d", len(origins), maxCORSOrigins)
	}
	for _, o := range origins {
		if err := transport.ValidateCORSOrigin(o); err != nil {
			return fmt.Errorf("cors_origins: %w", err)
		}
	}
	return nil
}

// defaultConfig is the embedded default: the testnet profile with a small catalog.
func defaultConfig() fileConfig {
	m := machine.DefaultConfig()
	return fileConfig{
		Network:              string(machine.Testnet),
		MinNotionalUSD:       m.MinNotionalUSD,
		QuoteLifetime:        duration(m.QuoteLifetime),
		ActionLifetime:       duration(m.ActionLifetime),
		SettlementGrace:      duration(m.SettlementGrace),
		RegistrationLifetime: duration(m.RegistrationLifetime),
		ChallengeLifetime:    duration(m.ChallengeLifetime),
		ClosedRetention:      duration(m.ClosedRetention),
		MinTTL:               duration(m.MinTTL),
		MaxTTL:               duration(m.MaxTTL),
		PingInterval:         duration(30 * time.Second),
		FaucetCooldown:       duration(m.FaucetCooldown),
		PerIPPerMinute:       transport.DefaultPerIPPerMinute,
		Instruments: []instrumentConfig{
			{Symbol: "cc", Display: "CC", Decimals: 10, USDPrice: money.MustParse("0.2"), FaucetAmount: money.MustParse("1000"), Native: true},
			{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("10000")},
			{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("0.1")},
			{Symbol: "ceth", Display: "CETH", Decimals: 8, USDPrice: money.MustParse("3500"), FaucetAmount: money.MustParse("2")},
		},
		FeeTiers: []feeTierConfig{
			{MinNotionalUSD: money.Zero, FeeBps: 30},
			{MinNotionalUSD: money.MustParse("10000"), FeeBps: 20},
			{MinNotionalUSD: money.MustParse("100000"), FeeBps: 10},
		},
		// One house maker that quotes from the first start, so a new user has someone to
		// trade with. Its key is drawn at the first start and kept in the data directory.
		House: []houseConfig{{
			Name: "house-maker", Role: string(machine.HouseMaker), Strategy: true,
			Fund: map[string]money.Decimal{
				"cc": money.MustParse("5000000"), "usdcx": money.MustParse("1000000"),
				"cbtc": money.MustParse("10"), "ceth": money.MustParse("300"),
			},
		}},
		MaxPendingRegistrations: machine.DefaultMaxPendingRegistrations,
		StreamRetentionEvents:   machine.DefaultStreamRetentionEvents,
		StreamRetention:         duration(machine.DefaultStreamRetention),
		LedgerDedupWindow:       duration(ledgersim.DefaultDedupWindow),
	}
}

// loadConfig reads a configuration file over the defaults; an unknown key is an error
// that names it, as is a float where money is expected.
func loadConfig(path string) (fileConfig, error) {
	cfg := defaultConfig()
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read configuration: %w", err)
	}
	if err := checkMoneyStrings(b); err != nil {
		return cfg, fmt.Errorf("configuration %s: %w", path, err)
	}
	// The TOML decoder decodes an array of tables into the elements already in a slice, so
	// a file's [[house]] would inherit the default house maker's keys: decode the lists into
	// empty slices and put a default back only where the file has no such list.
	defaults := cfg
	cfg.Instruments, cfg.FeeTiers, cfg.House = nil, nil, nil
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&cfg)
	if err != nil {
		return cfg, fmt.Errorf("configuration %s: %w", path, err)
	}
	if !md.IsDefined("instrument") {
		cfg.Instruments = defaults.Instruments
	}
	if !md.IsDefined("fee_tier") {
		cfg.FeeTiers = defaults.FeeTiers
	}
	if !md.IsDefined("house") {
		cfg.House = defaults.House
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		keys := make([]string, len(undecoded))
		for i, k := range undecoded {
			keys[i] = k.String()
		}
		return cfg, fmt.Errorf("configuration %s: unknown key(s): %s", path, strings.Join(keys, ", "))
	}
	if err := checkCORSOrigins(cfg.CORSOrigins); err != nil {
		return cfg, fmt.Errorf("configuration %s: %w", path, err)
	}
	return cfg, nil
}

// houseParties resolves each house party's API key (from the file, the environment, or
// drawnKey when neither names one) to the hash the desk stores, and checks the strategy keys.
func (c fileConfig) houseParties(getenv func(string) string, drawnKey func(name string) (string, error)) ([]ledgeradapter.House, error) {
	var out []ledgeradapter.House
	for _, h := range c.House {
		key := h.APIKey
		switch {
		case h.APIKeyEnv != "":
			key = getenv(h.APIKeyEnv)
			if key == "" {
				return nil, fmt.Errorf("house party %q: environment variable %s is empty", h.Name, h.APIKeyEnv)
			}
		case key == "" && drawnKey != nil:
			var err error
			if key, err = drawnKey(h.Name); err != nil {
				return nil, fmt.Errorf("house party %q: %w", h.Name, err)
			}
		}
		if len(key) < 16 {
			return nil, fmt.Errorf("house party %q: api_key (or api_key_env) must hold at least 16 characters", h.Name)
		}
		role := machine.HouseRole(h.Role)
		if role != machine.HouseTaker && role != machine.HouseMaker {
			return nil, fmt.Errorf("house party %q: role must be taker or maker", h.Name)
		}
		if (h.SpreadBps != nil || h.MaxShareBps != nil) && !h.Strategy {
			return nil, fmt.Errorf("house party %q: spread_bps and max_share_bps need strategy = true", h.Name)
		}
		if h.Strategy {
			if role != machine.HouseMaker {
				return nil, fmt.Errorf("house party %q: strategy = true needs role = \"maker\"", h.Name)
			}
			if err := h.params().Validate(); err != nil {
				return nil, fmt.Errorf("house party %q: %w", h.Name, err)
			}
		}
		out = append(out, ledgeradapter.House{Hint: h.Name, Role: role, KeyHash: transport.HashKey(key), Fund: h.Fund})
	}
	return out, nil
}

// resolve turns the file configuration into the desk's and the ledger's. drawnKey supplies
// the key of a house party whose table names none (nil: such a table is refused).
func (c fileConfig) resolve(getenv func(string) string, drawnKey func(name string) (string, error)) (machine.Config, node.LedgerSpec, error) {
	network := machine.Network(c.Network)
	switch network {
	case machine.Testnet, machine.Sandbox, machine.Mainnet:
	default:
		return machine.Config{}, node.LedgerSpec{}, fmt.Errorf("network %q is not testnet, sandbox or mainnet", c.Network)
	}
	seed := c.Seed // 0: the node draws one at the first start
	m := machine.DefaultConfig()
	m.Network, m.Seed = network, seed
	m.MinNotionalUSD = c.MinNotionalUSD
	m.QuoteLifetime, m.ActionLifetime = time.Duration(c.QuoteLifetime), time.Duration(c.ActionLifetime)
	m.SettlementGrace, m.RegistrationLifetime = time.Duration(c.SettlementGrace), time.Duration(c.RegistrationLifetime)
	m.ChallengeLifetime, m.ClosedRetention = time.Duration(c.ChallengeLifetime), time.Duration(c.ClosedRetention)
	m.MinTTL, m.MaxTTL = time.Duration(c.MinTTL), time.Duration(c.MaxTTL)
	m.FaucetCooldown = time.Duration(c.FaucetCooldown)
	m.IdempotencyRetention = time.Duration(c.IdempotencyRetention)
	if c.MaxPendingRegistrations < 1 {
		return machine.Config{}, node.LedgerSpec{}, fmt.Errorf("max_pending_registrations must be at least 1, got %d", c.MaxPendingRegistrations)
	}
	m.MaxPendingRegistrations = c.MaxPendingRegistrations
	if c.StreamRetentionEvents < 0 || c.StreamRetentionEvents > machine.MaxStreamRetentionEvents {
		return machine.Config{}, node.LedgerSpec{}, fmt.Errorf("stream_retention_events must be between 0 and %d, got %d", machine.MaxStreamRetentionEvents, c.StreamRetentionEvents)
	}
	if r := time.Duration(c.StreamRetention); r < time.Second || r > machine.MaxStreamRetention {
		return machine.Config{}, node.LedgerSpec{}, fmt.Errorf("stream_retention must be between 1s and %s, got %s", machine.MaxStreamRetention, r)
	}
	m.StreamRetentionEvents, m.StreamRetention = c.StreamRetentionEvents, time.Duration(c.StreamRetention)
	if p := time.Duration(c.PingInterval); p < minPingInterval || p > maxPingInterval {
		return machine.Config{}, node.LedgerSpec{}, fmt.Errorf("ping_interval must be between %s and %s, got %s", minPingInterval, maxPingInterval, p)
	}
	reservoir := map[string]money.Decimal{}
	for _, in := range c.Instruments {
		sym := strings.ToLower(in.Symbol)
		m.Instruments = append(m.Instruments, machine.Instrument{
			Symbol: sym, Display: in.Display, Decimals: in.Decimals, USDPrice: in.USDPrice,
			FaucetAmount: in.FaucetAmount, Native: in.Native, LogoURL: in.LogoURL, RegistryID: sym + "-registry",
		})
		switch {
		case in.Reservoir.Sign() > 0:
			reservoir[sym] = in.Reservoir
		case in.FaucetAmount.Sign() > 0:
			reservoir[sym] = in.FaucetAmount.MulHalfEven(money.FromInt(ledgeradapter.DefaultReservoirDraws))
		}
	}
	for _, t := range c.FeeTiers {
		m.FeeTiers = append(m.FeeTiers, machine.FeeTier{MinNotionalUSD: t.MinNotionalUSD, FeeBps: t.FeeBps})
	}
	house, err := c.houseParties(getenv, drawnKey)
	if err != nil {
		return machine.Config{}, node.LedgerSpec{}, err
	}
	spec := node.LedgerSpec{Network: network, Seed: seed, Catalog: m.Instruments, Reservoir: reservoir, House: house}
	if spec.DedupWindow = time.Duration(c.LedgerDedupWindow); spec.DedupWindow < ledgersim.DefaultPreparedLifetime {
		return machine.Config{}, node.LedgerSpec{}, fmt.Errorf("ledger_dedup_window must be at least %s (a prepared transaction's lifetime), got %s",
			ledgersim.DefaultPreparedLifetime, spec.DedupWindow)
	}
	// Parties come from the ledger's genesis; check everything else now, with placeholders.
	check := m
	check.Operator, check.FeeParty = "operator", "fees"
	for _, h := range house {
		check.House = append(check.House, machine.HouseParty{Hint: h.Hint, PartyID: h.Hint + "::check", Role: h.Role, KeyHash: h.KeyHash})
	}
	if err := check.Validate(); err != nil {
		return machine.Config{}, node.LedgerSpec{}, err
	}
	return m, spec, nil
}

// printable renders the effective configuration as TOML, with house API keys redacted.
func (c fileConfig) printable() (string, error) {
	redacted := c
	redacted.House = append([]houseConfig(nil), c.House...)
	for i := range redacted.House {
		if redacted.House[i].APIKey != "" {
			redacted.House[i].APIKey = "(redacted)"
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(redacted); err != nil {
		return "", fmt.Errorf("encode configuration: %w", err)
	}
	return buf.String(), nil
}
