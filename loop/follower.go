package loop

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// A follower is a second desk that applies every journal record the loop writes, decoded
// from its bytes, on a goroutine of its own, so that checkpoints are taken from it and the
// loop never stops to encode the whole state.
//
// The first checkpoint after a start is taken on the loop as before (a machine.Checkpoint
// carrying the digest), and its encoding seeds the follower. From then on a checkpoint is
// a machine.CheckpointMark: when the follower reaches it, it encodes its own state (the
// state just before the mark), hands the encoding to Config.Snapshot and the digest back
// to the loop, which journals it as a machine.CheckpointDigest. The loop asks for no new
// mark while one is outstanding.
//
// The follower's state is the journal's, replayed: the digests it reports are those of a
// replay of the same records, which is what a later replay verifies. What it costs: the
// desk's state twice in memory, and every input decoded and applied a second time on
// another core.
type follower struct {
	feed    chan followItem
	digests chan followDigest
	done    chan struct{}
}

// followerQueue bounds the records waiting for the follower. The loop blocks when it is
// full (the follower is encoding a large state while inputs pour in), so memory stays
// bounded; each record is the journal's own bytes, shared, a few hundred bytes.
const followerQueue = 16384

// followItem is a journal record for the follower to apply, or (state set) the encoded
// state it starts from.
type followItem struct {
	seq   uint64
	rec   []byte
	state []byte
}

// followDigest is the follower's answer to a mark: the digest of the state before it and
// how long it took to encode and hash, or the error that stopped the follower.
type followDigest struct {
	mark   uint64
	digest string
	bytes  int
	nanos  uint64
	err    error
}

// startFollower starts a follower from the encoded state the desk had after input seq. The
// loop must feed it every record after seq.
func (l *Loop) startFollower(seq uint64, state []byte) {
	f := &follower{
		feed:    make(chan followItem, followerQueue),
		digests: make(chan followDigest, 2), // a mark's digest and an error: never blocks
		done:    make(chan struct{}),
	}
	f.feed <- followItem{seq: seq, state: state}
	l.fol = f
	go l.follow(f)
}

// follow is the follower's goroutine. After an error it reports once and then only drains
// its feed, which the loop closes once it dropped the follower.
func (l *Loop) follow(f *follower) {
	defer close(f.done)
	var desk *machine.Desk
	stateBytes := 0 // the size of its last encoding: the next one's buffer
	failed := false
	fail := func(err error) {
		failed = true
		f.digests <- followDigest{err: err}
	}
	for it := range f.feed {
		if failed {
			continue
		}
		if it.state != nil {
			d, err := machine.Restore(it.state)
			if err != nil {
				fail(fmt.Errorf("restore the follower from the state after input %d: %w", it.seq, err))
				continue
			}
			desk, stateBytes = d, len(it.state)
			continue
		}
		env, err := machine.DecodeEnvelope(it.rec)
		if err != nil {
			fail(fmt.Errorf("decode desk record %d: %w", it.seq, err))
			continue
		}
		if _, ok := env.Input.(machine.CheckpointMark); ok {
			d, err := l.followerCheckpoint(desk, it.seq, stateBytes)
			if err != nil {
				fail(err)
				continue
			}
			stateBytes = d.bytes
			f.digests <- d
		}
		if err := applyFollowing(desk, env); err != nil {
			fail(err)
		}
	}
}

// followerCheckpoint encodes and hashes the follower's state before mark (about lastBytes
// long), and saves it as the snapshot of the state after input mark-1.
func (l *Loop) followerCheckpoint(desk *machine.Desk, mark uint64, lastBytes int) (followDigest, error) {
	start := time.Now()
	w := newHashingBuffer(max(lastBytes+lastBytes/8, 1<<16))
	err := desk.WriteSnapshot(w)
	state, sum := w.finish()
	if err != nil {
		return followDigest{}, fmt.Errorf("encode the follower's state at mark %d: %w", mark, err)
	}
	l.saveSnapshot(mark-1, state)
	return followDigest{mark: mark, digest: hex.EncodeToString(sum[:]), bytes: len(state),
		nanos: uint64(time.Since(start))}, nil
}

// applyFollowing applies a record to the follower, turning a panic (a bug the loop's own
// safeApply also met) into an error that stops the follower.
func applyFollowing(desk *machine.Desk, env machine.Envelope) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the follower's desk panicked on %s input %d: %v", env.Input.Kind(), env.Seq, p)
		}
	}()
	machine.ApplyQuiet(desk, env)
	return nil
}

// stopFollower closes the follower's feed and waits until it has drained it.
func (l *Loop) stopFollower() {
	if l.fol == nil {
		return
	}
	close(l.fol.feed)
	<-l.fol.done
	l.fol = nil
	l.markOut = 0
	l.stats.MarkPending.Store(0)
	l.stats.FollowerLag.Store(0)
}

// followerDigests is the channel of the follower's answers (nil, never ready, without one).
func (l *Loop) followerDigests() chan followDigest {
	if l.fol == nil {
		return nil
	}
	return l.fol.digests
}

// followed handles the follower's answer to the outstanding mark: it journals the digest,
// or drops a failed follower so that the next checkpoint is taken on the loop and seeds a
// new one.
func (l *Loop) followed(d followDigest) {
	if d.err != nil {
		l.cfg.Logger.Error("the checkpoint follower stopped; the next checkpoint is taken on the loop", "err", d.err)
		l.stats.FollowerFailures.Add(1)
		l.stopFollower()
		return
	}
	l.markOut = 0
	l.stats.MarkPending.Store(0)
	l.checkpointBytes = d.bytes
	l.stats.Checkpoints.Add(1)
	l.stats.FollowerNanos.Add(d.nanos)
	if d.nanos > l.stats.FollowerMaxNanos.Load() { // only the loop goroutine writes it
		l.stats.FollowerMaxNanos.Store(d.nanos)
	}
	l.applyWith(machine.CheckpointDigest{Mark: d.mark, Digest: d.digest}, nil, nil)
}
