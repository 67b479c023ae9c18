package main

import (
	"log/slog"
	"time"

	"github.com/deskco/rfqdesk/node"
)

// shutdownReport gathers what a graceful shutdown flushed, for the desk's last log line.
type shutdownReport struct {
	sockets int64 // stream sockets open when the shutdown began (closed with 1001)
	houses  int   // in-desk house makers stopped
}

// log writes the last line of a desk's life: what was made durable and closed, so that an
// operator reading the log of a stopped desk knows nothing acknowledged was left behind
// (or, with closeErr, what was not).
func (r shutdownReport) log(logger *slog.Logger, n *node.Node, m *deskMetrics, started time.Time, closeErr error) {
	deskSeq, ledgerSeq := n.JournalLastSeqs()
	s := n.Loop.Stats()
	attrs := []any{
		"desk_journal_last_seq", deskSeq, "ledger_journal_last_seq", ledgerSeq,
		"desk_records_synced", m.synced[0].Load(), "ledger_records_synced", m.synced[1].Load(),
		"inputs_applied", s.Inputs.Load(), "checkpoints", s.Checkpoints.Load(),
		"ledger_snapshots", n.LedgerSnapshots.FromLedger.Load() + n.LedgerSnapshots.FromFollower.Load(),
		"sockets_closed", r.sockets, "house_makers_stopped", r.houses,
		"uptime", time.Since(started).Round(time.Millisecond).String(),
	}
	if closeErr != nil {
		logger.Error("desk stopped: the journals could not all be flushed", append(attrs, "err", closeErr)...)
		return
	}
	logger.Info("desk stopped: journals flushed and closed", attrs...)
}
