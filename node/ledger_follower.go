package node

import (
	"errors"
	"fmt"

	"github.com/deskco/rfqdesk/ledgersim"
)

// A ledgerFollower is a second embedded ledger that applies every record the live one
// journals (decoded from the journal's own bytes, signatures not checked again, as a
// replay does) on a goroutine of its own, so that ledger snapshots are encoded from it.
// The live ledger holds its lock while it encodes a snapshot, and every ledger call waits
// meanwhile: 120 ms for a ledger of 9 MB, growing with the updates it retains.
//
// The first ledger snapshot after a start is taken from the live ledger as before, and its
// encoding seeds the follower, which is installed under the live ledger's lock at exactly
// the record the snapshot covers, so that it receives every record after it. Later
// snapshots are asked of the follower, which encodes its own state once it has applied
// every record journaled before the request (so a snapshot covers what it covered when it
// was encoded from the live ledger). A
// follower that fails (a record it cannot apply) answers every later request with its
// error, and the next snapshot is taken from the live ledger again and seeds a new one.
// What it costs: the ledger's state twice in memory, and every ledger input decoded and
// replayed a second time on another core.
//
// A follower is installed and removed only while no call can change the live ledger (in
// SnapshotWith's mark, or Ledger.Exclusive), and records are sent to it only from the
// Recorder, which runs under the same lock: so no record is ever sent to a follower after
// it was removed, and stop can end it.
type ledgerFollower struct {
	seed     chan []byte             // the snapshot it starts from, once
	feed     chan ledgerFollowRecord // records after the seed's, in journal order
	requests chan ledgerFollowRequest
	quit     chan struct{}
	done     chan struct{}
	cfg      ledgersim.Config
	from     uint64 // the record the seed covers
}

// ledgerFollowerQueue bounds the records waiting for the follower. The live ledger's
// Recorder blocks when it is full (the follower is restoring or encoding a large state),
// so memory stays bounded; each record is the journal's own bytes, shared.
const ledgerFollowerQueue = 16384

type ledgerFollowRecord struct {
	seq uint64
	rec []byte
}

// ledgerFollowRequest asks for a snapshot covering at least record target (the journal's
// last when it was asked): the follower answers once it has applied that far.
type ledgerFollowRequest struct {
	target uint64
	reply  chan ledgerFollowSnapshot
}

// ledgerFollowSnapshot answers a snapshot request: the follower's encoded state and the
// journal record it covers, or the error that stopped the follower.
type ledgerFollowSnapshot struct {
	state []byte
	seq   uint64
	err   error
}

// errLedgerFollowerStopped answers a request made after the follower stopped.
var errLedgerFollowerStopped = errors.New("the ledger follower stopped")

// newLedgerFollower builds a follower of a ledger with this configuration, to be seeded
// with the snapshot covering journal record from; start runs it.
func newLedgerFollower(cfg ledgersim.Config, from uint64) *ledgerFollower {
	cfg.Recorder = nil // it replays the journal; it must not write it
	return &ledgerFollower{
		seed:     make(chan []byte, 1),
		feed:     make(chan ledgerFollowRecord, ledgerFollowerQueue),
		requests: make(chan ledgerFollowRequest),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		cfg:      cfg,
		from:     from,
	}
}

func (f *ledgerFollower) start() { go f.run() }

// run is the follower's goroutine; it ends when stop is called.
func (f *ledgerFollower) run() {
	defer close(f.done)
	var seed []byte
	select {
	case seed = <-f.seed:
	case <-f.quit:
		return
	}
	l, failed := ledgersim.Restore(f.cfg, seed)
	if failed != nil {
		failed = fmt.Errorf("restore the ledger follower at record %d: %w", f.from, failed)
	}
	seq := f.from
	var waiting *ledgerFollowRequest // a request for a record not applied yet
	answer := func() {
		if failed != nil {
			waiting.reply <- ledgerFollowSnapshot{err: failed}
		} else {
			state, _, err := l.SnapshotWith(nil)
			waiting.reply <- ledgerFollowSnapshot{state: state, seq: seq, err: err}
		}
		waiting = nil
	}
	for {
		requests := f.requests
		if waiting != nil {
			requests = nil // one at a time
		}
		select {
		case r := <-f.feed:
			if failed == nil {
				failed = apply(l, r, seq)
			}
			if failed == nil {
				seq = r.seq
			}
			if waiting != nil && (failed != nil || seq >= waiting.target) {
				answer()
			}
		case req := <-requests:
			waiting = &req
			if failed != nil || seq >= req.target {
				answer()
			}
		case <-f.quit:
			return
		}
	}
}

// apply replays record r, which must follow record after, on the follower's ledger; the
// error stops the follower. A failed follower still drains its feed, so that the
// Recorder never blocks on it.
func apply(l *ledgersim.Ledger, r ledgerFollowRecord, after uint64) error {
	if r.seq != after+1 {
		return fmt.Errorf("ledger follower: record %d after record %d", r.seq, after)
	}
	in, err := decodeLedgerInput(r.rec)
	if err == nil {
		err = l.Replay(in)
	}
	if err != nil {
		return fmt.Errorf("ledger follower: record %d: %w", r.seq, err)
	}
	return nil
}

// snapshot asks the follower for its state once it has applied record target (the
// journal's last, read by the caller: every record up to it is in the feed, or about to be
// under the ledger's lock).
func (f *ledgerFollower) snapshot(target uint64) ledgerFollowSnapshot {
	req := ledgerFollowRequest{target: target, reply: make(chan ledgerFollowSnapshot, 1)}
	select {
	case f.requests <- req:
	case <-f.done:
		return ledgerFollowSnapshot{err: errLedgerFollowerStopped}
	}
	select {
	case s := <-req.reply:
		return s
	case <-f.done:
		return ledgerFollowSnapshot{err: errLedgerFollowerStopped}
	}
}

// stop ends the follower and waits for it. It must have been removed first.
func (f *ledgerFollower) stop() {
	close(f.quit)
	<-f.done
}
