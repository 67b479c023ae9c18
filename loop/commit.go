package loop

import (
	"context"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
)

// The loop learns that its inputs are durable from the journal's appends themselves: it
// keeps each append's Pending, oldest first, and waits in its own select for the oldest
// one to be done. The journal completes appends in order, so when the oldest is done every
// later append that is done too can be taken at once, without waiting. One group commit
// then wakes the loop once, where a goroutine between the two (waiting for each append and
// passing its sequence number on) cost a wake-up of its own per commit and a second one
// of the loop.

// awaitAppend keeps p until it is done. The appends not yet seen durable are bounded by
// Config.QueueSize: past it, the loop waits for the oldest before it takes the next input,
// as it waited for room in a queue before.
func (l *Loop) awaitAppend(p *journal.Pending) {
	if len(l.unsynced) >= l.cfg.QueueSize {
		<-l.unsynced[0].Done()
		l.synced()
	}
	l.unsynced = append(l.unsynced, p)
}

// oldestUnsynced is the Done channel of the oldest append not yet seen durable, or nil (a
// channel that never fires in a select) when there is none.
func (l *Loop) oldestUnsynced() <-chan struct{} {
	if len(l.unsynced) == 0 {
		return nil
	}
	return l.unsynced[0].Done()
}

// synced takes every append that is done, from the oldest on, and releases the outputs
// of the inputs they made durable. A failed append is logged and dropped: its outputs stay
// held (the journal's failure is sticky, so no later append becomes durable either).
func (l *Loop) synced() {
	var durable uint64
	n := 0
	for n < len(l.unsynced) && isDone(l.unsynced[n]) {
		p := l.unsynced[n]
		n++
		if err := p.Err(); err != nil {
			l.cfg.Logger.Error("journal append failed; outputs stay held", "err", err)
			continue
		}
		_, durable = p.Seqs()
	}
	clear(l.unsynced[:n])
	l.unsynced = append(l.unsynced[:0], l.unsynced[n:]...)
	if durable > 0 {
		l.markDurable(durable)
	}
}

// isDone reports whether p is done, without waiting.
func isDone(p *journal.Pending) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// A ledger call's result is an input whose record refers to the ledger's records of the
// call: it must not be durable before them. A Ledger makes sure by answering only once its
// records are durable, which costs every call a commit of the ledger's journal and two
// wake-ups before the loop even sees the result. An OrderedLedger answers at once, with
// the append that makes its records durable, and the loop journals the result behind it
// (OrderedJournal): the desk's journal writes the record only once that append is done.
// The loop applies the result meanwhile; what it causes leaves, as for every input, only
// once its record is durable, and so the ledger's too.

// OrderedLedger is a Ledger whose calls' records are made durable by an append to a
// journal of its own. DoOrdered runs a call like Do but returns without waiting for that
// append, and returns it (nil when the call journaled nothing). The loop uses it only when
// its Journal is an OrderedJournal.
type OrderedLedger interface {
	Ledger
	DoOrdered(ctx context.Context, call machine.LedgerCall) (machine.LedgerResult, *journal.Pending)
}

// OrderedJournal is a journal that holds records back until another log's append is done
// (journal.FileLog.AppendAsyncAfter).
type OrderedJournal interface {
	AppendAsyncAfter(after *journal.Pending, records ...[]byte) *journal.Pending
}

// callLedger runs a ledger call for a worker: ordered when both the ledger and the journal
// can, with the append the result's record must follow.
func (l *Loop) callLedger(c machine.LedgerCall) (machine.LedgerResult, *journal.Pending) {
	if ol, ok := l.cfg.Ledger.(OrderedLedger); ok {
		if _, ok := l.cfg.Journal.(OrderedJournal); ok {
			return ol.DoOrdered(context.Background(), c)
		}
	}
	return l.cfg.Ledger.Do(context.Background(), c), nil
}

// appendRecord journals an input's record, behind after when it is set (callLedger set it
// only for an OrderedJournal).
func (l *Loop) appendRecord(rec []byte, after *journal.Pending) *journal.Pending {
	if after != nil {
		return l.cfg.Journal.(OrderedJournal).AppendAsyncAfter(after, rec)
	}
	return l.cfg.Journal.AppendAsync(rec)
}
