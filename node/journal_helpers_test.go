package node_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// closeWithin closes n, failing the test unless it closes cleanly within limit.
func closeWithin(tb testing.TB, n *node.Node, limit time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		tb.Fatal(err)
	}
}

// deskJournal opens the desk journal a node wrote under dir (without fsync); the caller
// closes it.
func deskJournal(tb testing.TB, dir string) *journal.FileLog {
	tb.Helper()
	log, err := journal.OpenDir(filepath.Join(dir, "desk"), journal.Options{Sync: journal.SyncNone})
	if err != nil {
		tb.Fatal(err)
	}
	return log
}

// replayDesk rebuilds the desk from log (from its latest snapshot when fromSnapshot, else
// from genesis), failing the test on an error.
func replayDesk(tb testing.TB, log journal.Log, fromSnapshot bool) *machine.Desk {
	tb.Helper()
	desk, _, err := node.ReplayDesk(log, fromSnapshot, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return desk
}

// replaysAgree replays the desk journal under dir from genesis and from its snapshot,
// fails the test unless both reach the same digest, and returns the replay from genesis.
func replaysAgree(t *testing.T, dir string) *machine.Desk {
	t.Helper()
	log := deskJournal(t, dir)
	defer log.Close()
	g, s := replayDesk(t, log, false), replayDesk(t, log, true)
	dg, _ := g.Digest()
	ds, _ := s.Digest()
	if dg != ds {
		t.Fatal("the desk journal replayed from genesis and from its snapshot reached different digests")
	}
	return g
}
