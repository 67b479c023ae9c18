package node

import (
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
)

// Observer hears of the desk's I/O for metrics: each ledger call the loop made (including
// the wait for the ledger journal that makes its effects durable) and each fsync'd group
// commit of the two journals. Its methods run on the loop's ledger workers and on the
// journals' writer goroutines: they must be quick and safe for concurrent use.
type Observer interface {
	// LedgerCall reports one ledger call: its kind, how long it took, and its failure
	// category ("" when it succeeded).
	LedgerCall(op machine.LedgerOp, took time.Duration, failure string)
	// JournalSync reports one fsync of journal "desk" or "ledger": the records it made
	// durable and how long the fsync took.
	JournalSync(journal string, records int, took time.Duration)
}

// JournalLastSeqs returns the last sequence number of the desk and ledger journals (0 for a
// desk kept in memory). After Close every one of them is durable.
func (n *Node) JournalLastSeqs() (desk, ledger uint64) {
	if n.deskLog != nil {
		desk = n.deskLog.LastSeq()
	}
	if n.ledgerLog != nil {
		ledger = n.ledgerLog.LastSeq()
	}
	return desk, ledger
}

// withSyncObserver returns jo reporting the fsyncs of journal name to o (jo itself when o is nil).
func withSyncObserver(jo journal.Options, o Observer, name string) journal.Options {
	if o != nil {
		jo.OnSync = func(records int, took time.Duration) { o.JournalSync(name, records, took) }
	}
	return jo
}
