package node

import (
	"context"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
)

// A desk record must never be durable before the ledger records it refers to. Do keeps
// that order by answering a ledger call only once the ledger journal's append of the
// call's records is done: a commit of the ledger journal, and two wake-ups (the ledger's
// writer wakes the worker, the worker the loop), before the loop sees the result, and then
// the desk journal's own commit of the result's record, one after the other.
//
// DoOrdered answers at once, with that append; when the desk journal is a file of this
// process (journal.FileLog.AppendAsyncAfter) the loop journals the result's record behind
// it, so the desk journal's writer writes the batch that holds it only once the ledger's
// records are durable, and the two commits overlap. The append returned is the ledger
// journal's last when the call returned, which covers every record the call journaled
// (the ledger journals under its lock, in apply order, before the call returns). Other
// desk records do not wait for the ledger's journal at all. A ledger append that failed
// fails the desk journal's batch behind it, and with it the desk journal (a failed write is
// sticky), so the desk stops answering; Do answered the call with an unknown outcome
// instead, and the desk went on without a ledger journal. Journals of another backend
// (Options.Journals, a standby's) keep Do: the loop orders only for a journal that can. The
// observer's ledger call latency then ends when the ledger answered, without the commit.

var _ loop.OrderedLedger = durableLedger{}

// DoOrdered implements loop.OrderedLedger.
func (d durableLedger) DoOrdered(ctx context.Context, call machine.LedgerCall) (machine.LedgerResult, *journal.Pending) {
	start := time.Now()
	res := d.n.Ledger.Do(ctx, call)
	d.observe(call, res, start)
	return res, d.n.lastLedger.Load()
}
