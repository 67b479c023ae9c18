package node

import (
	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// OptionsForTest are the options of the node tests: a desk and a ledger with two tokens
// whose faucet gives enough to trade, the real clock, a checkpoint every 5 inputs, no
// fsync. Callers that pass a nil sink set Options.Sink themselves before Open.
func OptionsForTest(dir string, sink *drive.Events) Options {
	cat := []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("1"), RegistryID: "cbtc-registry"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("100000"), RegistryID: "usdcx-registry"},
	}
	cfg := machine.DefaultConfig()
	cfg.Seed = 3
	cfg.Instruments = cat
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}}
	cfg.FaucetCooldown = 0
	return Options{
		Dir: dir, Desk: cfg, Ledger: LedgerSpec{Network: machine.Testnet, Seed: 3, Catalog: cat},
		Clock: drive.RealClock{}, Sink: sink, CheckpointEvery: 5, Sync: journal.SyncNone,
	}
}
