package node

import (
	"context"

	"github.com/deskco/rfqdesk/journal"
)

// A ledger call's result becomes a desk input, and a desk record must never be durable
// before the ledger records it refers to. A ledger worker used to make sure by waiting,
// after each call, for the ledger journal's group commit, and only then handing the result
// to the loop, which journaled it and waited for the desk journal's commit: two commits
// one after the other, and two more wake-ups, on the path of every ledger call.
//
// With both journals files of this process, the desk journal's writer keeps the order
// instead: before it writes a batch it waits until the ledger journal is durable up to the
// last record appended so far. Every ledger record a desk record of the batch refers to
// was appended before that desk record was (the ledger journals an input under its lock
// before the call returns, and the result reaches the loop only after), so it is durable
// before the batch reaches the file. The worker hands the result on at once; the loop
// applies it while the ledger's commit runs, and holds its outputs, as those of every
// input, until the desk record is durable, and so the ledger's too. A failed ledger
// journal fails the desk journal's next batch, and the desk stops answering (it answered
// the call with an unknown outcome before).
//
// Journals served by another backend (Options.Journals, a standby's) keep the worker's
// wait: their appends are not ordered by this process's writers.

// orderAfterLedger returns jo for the desk journal, writing each batch only once the
// ledger journal is durable up to its last record.
func (n *Node) orderAfterLedger(jo journal.Options) journal.Options {
	n.ledgerOrdered = true
	jo.Before = n.awaitLedger
	return jo
}

// awaitLedger waits until the ledger journal's last append is durable (its appends
// complete in order, so every earlier one is too).
func (n *Node) awaitLedger() error {
	if p := n.lastLedger.Load(); p != nil {
		_, err := p.Wait(context.Background())
		return err
	}
	return nil
}
