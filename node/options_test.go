package node

import (
	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
)

// OptionsForTest are the options of the node tests: a desk and a ledger with two tokens
// whose faucet gives enough to trade, the real clock, a checkpoint every 5 inputs, no
// fsync. Callers that pass a nil sink set Options.Sink themselves before Open.
func OptionsForTest(dir string, sink *drive.Events) Options {
	cat := drive.Catalog("1", "100000")
	cfg := drive.Config(3, cat, 25)
	return Options{
		Dir: dir, Desk: cfg, Ledger: LedgerSpec{Network: machine.Testnet, Seed: 3, Catalog: cat},
		Clock: drive.RealClock{}, Sink: sink, CheckpointEvery: 5, Sync: journal.SyncNone,
	}
}
