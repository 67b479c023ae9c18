package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/deskco/rfqdesk/journal"
)

// Journals opens the desk's two logs ("desk", its inputs, and "ledger", the embedded
// ledger's) somewhere other than files under Options.Dir: package pglog serves them from
// PostgreSQL, where a standby follows them.
type Journals interface {
	// OpenLog opens the log called name; the node takes it over (a new epoch, fencing
	// every earlier writer) before it reads or writes it.
	OpenLog(ctx context.Context, name string) (journal.Shared, error)
}

// Journal names the Journals open.
const (
	DeskJournal   = "desk"
	LedgerJournal = "ledger"
)

// openSharedLogs opens both logs from js and takes them over: from here on no earlier
// writer can append to either, so what the start reads next is all there will be before
// this node's own records.
func (n *Node) openSharedLogs(ctx context.Context, js Journals) error {
	var logs [2]journal.Shared
	for i, name := range []string{LedgerJournal, DeskJournal} {
		l, err := js.OpenLog(ctx, name)
		if err == nil {
			if _, err = l.TakeOver(ctx); err != nil {
				_ = l.Close()
			}
		}
		if err != nil {
			for _, o := range logs[:i] {
				_ = o.Close()
			}
			return fmt.Errorf("open the %s journal: %w", name, err)
		}
		logs[i] = l
	}
	n.ledgerLog, n.deskLog = logs[0], logs[1]
	n.Recovered.Fresh = n.ledgerLog.LastSeq() == 0 && n.deskLog.LastSeq() == 0
	return nil
}

// Epochs returns the epochs the node writes its journals under (0 for a journal that is
// not a journal.Shared, or none).
func (n *Node) Epochs() (desk, ledger uint64) {
	if s, ok := n.deskLog.(journal.Shared); ok {
		desk = s.Epoch()
	}
	if s, ok := n.ledgerLog.(journal.Shared); ok {
		ledger = s.Epoch()
	}
	return desk, ledger
}

// IsFenced reports whether err says another writer took a journal over.
func IsFenced(err error) bool { return errors.Is(err, journal.ErrFenced) }
