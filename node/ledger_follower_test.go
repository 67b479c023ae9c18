package node

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgersim"
)

// TestLedgerSnapshotsFromFollower: the first ledger snapshot is encoded from the live
// ledger and seeds a follower; the next comes from the follower; a follower that failed is
// replaced by the next snapshot, taken from the live ledger again; and a restart recovers,
// from the newest (follower's) snapshot and the records after it, the ledger it left.
func TestLedgerSnapshotsFromFollower(t *testing.T) {
	// No checkpoints: the test takes the ledger snapshots itself.
	opts := OptionsForTest(t.TempDir(), drive.NewEvents())
	opts.CheckpointEvery = 1 << 30
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	closeNode := func(n *Node) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	d := drive.Driver{T: t, Desk: n.Loop}
	maker := d.Register("Maker")
	d.Fund(maker, 2)
	st := &n.LedgerSnapshots
	want := func(fromLedger, fromFollower, failures uint64) {
		t.Helper()
		if st.FromLedger.Load() != fromLedger || st.FromFollower.Load() != fromFollower || st.FollowerFailures.Load() != failures {
			t.Fatalf("snapshots from the ledger %d, from the follower %d, follower failures %d; want %d, %d, %d",
				st.FromLedger.Load(), st.FromFollower.Load(), st.FollowerFailures.Load(), fromLedger, fromFollower, failures)
		}
	}
	n.saveLedgerSnapshot()
	want(1, 0, 0)
	first := n.ledgerFollower.Load()
	if first == nil {
		t.Fatal("the first snapshot seeded no follower")
	}
	taker := d.Register("Taker")
	d.Fund(taker, 2)
	n.saveLedgerSnapshot()
	want(1, 1, 0)
	sameAsLive(t, n)

	first.feed <- ledgerFollowRecord{seq: 1 << 40} // out of order: the follower fails
	d.Fund(maker, 2)
	n.saveLedgerSnapshot()
	want(2, 1, 1)
	if f := n.ledgerFollower.Load(); f == nil || f == first {
		t.Fatal("the failed follower was not replaced")
	}
	d.Fund(taker, 2)
	n.saveLedgerSnapshot()
	want(2, 2, 1)
	sameAsLive(t, n)
	last := st.LastSeq.Load()
	before := n.Ledger.L.Digest()
	closeNode(n)

	n, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer closeNode(n)
	if n.Recovered.LedgerSnapshotSeq != last {
		t.Errorf("the ledger came back from the snapshot at record %d, want the follower's at %d", n.Recovered.LedgerSnapshotSeq, last)
	}
	if n.Ledger.L.Digest() != before {
		t.Error("the recovered ledger differs from the one that was closed")
	}
	if err := n.Ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// sameAsLive asks the ledger follower for its state as of the journal's last record (the
// desk is idle) and checks that it is, byte for byte, the live ledger's.
func sameAsLive(t *testing.T, n *Node) {
	t.Helper()
	s := n.ledgerFollower.Load().snapshot(n.ledgerLog.LastSeq())
	if s.err != nil {
		t.Fatal(s.err)
	}
	live, seq, err := n.Ledger.L.SnapshotWith(n.ledgerLog.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	if seq != s.seq || string(live) != string(s.state) {
		t.Fatalf("the follower's snapshot at record %d differs from the live ledger's at %d", s.seq, seq)
	}
}

// TestLedgerFollowerQueueFullIsCounted: a ledger record that finds the follower's queue
// full waits for room, and is counted; the lag is the queue's length after each record.
func TestLedgerFollowerQueueFullIsCounted(t *testing.T) {
	n := &Node{ledgerLog: journal.NewMemLog(true), log: slog.New(slog.DiscardHandler)}
	// A follower that never reads by itself: its one slot fills with the first record.
	stuck := &ledgerFollower{feed: make(chan ledgerFollowRecord, 1)}
	n.ledgerFollower.Store(stuck)
	tick := ledgersim.Input{Kind: ledgersim.InputTick, At: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	n.recordLedger(tick)
	lag, stalls := n.LedgerSnapshots.FollowerLag.Load(), n.LedgerSnapshots.FollowerStalls.Load()
	if lag != 1 || stalls != 0 {
		t.Fatalf("before the queue was full: lag %d, stalls %d; want 1, 0", lag, stalls)
	}
	taken := make(chan uint64)
	go func() {
		// Long enough for the send below to have found the queue full.
		time.Sleep(50 * time.Millisecond)
		taken <- (<-stuck.feed).seq
	}()
	n.recordLedger(tick) // the queue is full: waits for the reader above
	if seq := <-taken; seq != 1 {
		t.Fatalf("the follower took record %d first, want 1", seq)
	}
	if s, ns := n.LedgerSnapshots.FollowerStalls.Load(), n.LedgerSnapshots.FollowerStallNanos.Load(); s != 1 || ns == 0 {
		t.Fatalf("stalls %d over %d ns; want one, of some time", s, ns)
	}
	if got := n.LedgerSnapshots.FollowerLag.Load(); got != 1 {
		t.Fatalf("lag %d, want 1", got)
	}
}
