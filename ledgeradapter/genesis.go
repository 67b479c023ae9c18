package ledgeradapter

import (
	"errors"
	"fmt"
	"time"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Hints of the desk's own ledger parties.
const (
	OperatorHint  = "desk-operator"
	FeeHint       = "desk-fees"
	ReservoirHint = "faucet-reservoir"
	RegistryHint  = "token-registry"
)

// DefaultReservoirDraws is how many faucet draws of each instrument the reservoir holds
// when its funding is not configured (DECISIONS.md: a test desk never runs dry by accident).
const DefaultReservoirDraws = 1_000_000

// House is a desk-signed house party to create at genesis with its funding.
type House struct {
	Hint    string
	Role    machine.HouseRole
	KeyHash string                   // hex SHA-256 of its API key
	Fund    map[string]money.Decimal // catalog symbol → amount
}

// Embedded describes the embedded ledger a desk runs on.
type Embedded struct {
	Network machine.Network
	Seed    uint64
	Clock   ledgersim.Clock
	// Catalog is the desk's instrument catalog; each RegistryID names the ledger instrument.
	Catalog []machine.Instrument
	// Reservoir funds the faucet per catalog symbol; nil: DefaultReservoirDraws draws of
	// every instrument with a faucet amount.
	Reservoir map[string]money.Decimal
	House     []House
	FaultPlan ledgersim.FaultPlan
	Sleep     func(time.Duration)
	Recorder  func(ledgersim.Input)
	// DedupWindow is the ledger's deduplication window (ledgersim.Config.DedupWindow; 0:
	// ledgersim.DefaultDedupWindow). It decides what the ledger forgets, so a replay must
	// pass the one the ledger ran with.
	DedupWindow time.Duration
	// SequencingDelay keeps each execute in flight this long (ledgersim.Config.
	// SequencingDelay; 0: none). An adapter's Begin leaves the wait to its caller.
	SequencingDelay time.Duration
}

// Parties are the ledger ids of the desk's own parties after genesis.
type Parties struct {
	Operator  string
	FeeParty  string
	Reservoir string // "" when no faucet runs
	House     []machine.HouseParty
}

// NewEmbedded builds the embedded ledger at genesis and an adapter over it.
func NewEmbedded(e Embedded) (*Adapter, Parties, error) {
	if e.Clock == nil {
		return nil, Parties{}, errors.New("embedded ledger: a clock is required")
	}
	bySymbol := map[string]machine.Instrument{}
	cfg := ledgersim.Config{
		Profile: ledgersim.Profile(e.Network), Clock: e.Clock, Seed: e.Seed,
		FaultPlan: e.FaultPlan, Sleep: e.Sleep, Recorder: e.Recorder, DedupWindow: e.DedupWindow,
		SequencingDelay: e.SequencingDelay,
	}
	for _, in := range e.Catalog {
		bySymbol[in.Symbol] = in
		cfg.Instruments = append(cfg.Instruments, ledgersim.InstrumentSpec{
			ID: in.RegistryID, Admin: RegistryHint, Symbol: in.Symbol, DisplaySymbol: in.Display,
			Decimals: in.Decimals, Native: in.Native,
		})
	}
	funding := func(amounts map[string]money.Decimal) ([]ledgersim.Funding, error) {
		var out []ledgersim.Funding
		for _, in := range e.Catalog { // catalog order: deterministic genesis
			amt, ok := amounts[in.Symbol]
			if !ok || amt.Sign() <= 0 {
				continue
			}
			out = append(out, ledgersim.Funding{Instrument: in.RegistryID, Amount: amt})
		}
		for sym := range amounts {
			if _, ok := bySymbol[sym]; !ok {
				return nil, fmt.Errorf("funding names %q, which is not in the catalog", sym)
			}
		}
		return out, nil
	}
	cfg.Parties = []ledgersim.GenesisParty{{Hint: OperatorHint}, {Hint: FeeHint, Preapproval: true}}
	faucet := e.Network.FaucetRuns()
	if faucet {
		reservoir := e.Reservoir
		if reservoir == nil {
			reservoir = map[string]money.Decimal{}
			for _, in := range e.Catalog {
				if in.FaucetAmount.Sign() > 0 {
					reservoir[in.Symbol] = in.FaucetAmount.MulHalfEven(money.FromInt(DefaultReservoirDraws))
				}
			}
		}
		fund, err := funding(reservoir)
		if err != nil {
			return nil, Parties{}, fmt.Errorf("faucet reservoir: %w", err)
		}
		cfg.Parties = append(cfg.Parties, ledgersim.GenesisParty{Hint: ReservoirHint, Funding: fund})
		cfg.Faucet = ledgersim.FaucetConfig{Reservoir: ReservoirHint}
	}
	for _, h := range e.House {
		fund, err := funding(h.Fund)
		if err != nil {
			return nil, Parties{}, fmt.Errorf("house party %s: %w", h.Hint, err)
		}
		cfg.Parties = append(cfg.Parties, ledgersim.GenesisParty{Hint: h.Hint, Funding: fund, Preapproval: true})
	}
	l, err := ledgersim.New(cfg)
	if err != nil {
		return nil, Parties{}, fmt.Errorf("embedded ledger: %w", err)
	}
	id := func(hint string) string { p, _ := l.InternalParty(hint); return p }
	ps := Parties{Operator: id(OperatorHint), FeeParty: id(FeeHint)}
	if faucet {
		ps.Reservoir = id(ReservoirHint)
	}
	for _, h := range e.House {
		ps.House = append(ps.House, machine.HouseParty{Hint: h.Hint, PartyID: id(h.Hint), Role: h.Role, KeyHash: h.KeyHash})
	}
	return &Adapter{L: l}, ps, nil
}

// Apply fills the desk configuration's party fields from genesis.
func (p Parties) Apply(cfg *machine.Config) {
	cfg.Operator, cfg.FeeParty, cfg.Reservoir = p.Operator, p.FeeParty, p.Reservoir
	cfg.House = append([]machine.HouseParty(nil), p.House...)
}
