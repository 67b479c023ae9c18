// Package loop is the single goroutine that owns the desk. Transports hand it commands,
// reads and socket changes; it stamps each input with the time, journals it, applies it to
// the machine, and releases what the input caused (replies, stream events, socket closes,
// ledger calls) only once the input is durable. Ledger calls run on a bounded pool of
// workers whose results come back as inputs; deadlines come back as Tick inputs.
//
// The loop holds no business rule: every decision is machine.Apply's.
package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
)

// Ledger is what the loop needs of the ledger: running a call to completion (its own effects
// durable before it returns) and the two reads the machine's queries need.
type Ledger interface {
	Do(ctx context.Context, call machine.LedgerCall) machine.LedgerResult
	Holdings(party string) []machine.LedgerHolding
	Incoming(party string) []machine.LedgerTransfer
}

// Clock is the loop's source of time.
type Clock interface{ Now() time.Time }

// Sink receives what the stream transport must do: socket bindings, events and closes, in
// order. Deliver is called from the loop goroutine and must not block.
type Sink interface{ Deliver(out machine.Outputs) }

// Config wires a loop.
type Config struct {
	Desk   *machine.Desk
	Ledger Ledger
	Clock  Clock
	// Journal makes inputs durable; nil keeps them in memory only (tests, simulation).
	Journal journal.Log
	// NextSeq is the sequence number of the next input; 0 means the journal's LastSeq()+1,
	// or 1 without a journal.
	NextSeq uint64
	Sink    Sink
	// Workers run ledger calls in parallel (default 8).
	Workers int
	// Chain keeps a running digest of every input record (see Loop.Chain); it costs an
	// encoding of every input even without a journal.
	Chain bool
	// CheckpointEvery, when positive, makes the loop checkpoint the desk every that many
	// inputs: journal the digest of its state and hand the same state to Snapshot. The
	// first checkpoint after Start is taken on the loop (a machine.Checkpoint); the others
	// by a follower desk on a goroutine of its own (a machine.CheckpointMark, and later the
	// machine.CheckpointDigest it answered), so the loop does not pause for them.
	CheckpointEvery int
	// CheckpointBytesPerInput, when positive, stretches that interval for a large state:
	// the next checkpoint waits at least the last one's state size over this many inputs,
	// so that checkpoints (an encoding and a hash of the whole state, and the same again
	// when a replay verifies them) cost a bounded amount per input however many finished
	// trades and RFQs the desk keeps.
	CheckpointBytesPerInput int
	// Snapshot, if set, saves the desk state (machine.Desk.EncodeSnapshot, which
	// machine.Restore reads) as of input seq. It is called on a goroutine of its own, one
	// at a time; a snapshot due while one is running is skipped.
	Snapshot func(seq uint64, state []byte)
	// SinceCheckpoint is how many inputs the journal already holds after the newest
	// snapshot on disk (the records a restart replayed), and CheckpointBytes that
	// snapshot's size (0 for none): the checkpoint schedule counts on from them, so a desk
	// that restarts before a whole interval of inputs still checkpoints and snapshots, and
	// the replay of the next start stays bounded by about one interval.
	SinceCheckpoint int
	CheckpointBytes int
	// QueueSize bounds the requests waiting for the loop (default 4096).
	QueueSize int
	Logger    *slog.Logger
}

// ErrStopped is returned for requests made while the loop is not running.
var ErrStopped = errors.New("the desk is stopping")

// Loop owns a machine.Desk. Create it with New, then Start it.
type Loop struct {
	cfg     Config
	in      chan request
	results chan ledgerDone
	calls   chan machine.LedgerCall
	stop    chan struct{}
	done    chan struct{}
	workers sync.WaitGroup

	// Owned by the loop goroutine.
	seq       uint64
	lastAt    time.Time
	waiting   map[uint64]chan machine.Reply
	held      []heldOutputs // outputs waiting for durability, in seq order
	durableTo uint64
	overflow  []machine.LedgerCall
	timer     *time.Timer
	// unsynced are the journal appends not yet seen durable, oldest first, and after the
	// ledger's append the next input's record must follow (commit.go).
	unsynced []*journal.Pending
	after    *journal.Pending

	chainMu sync.Mutex
	chain   [32]byte

	sinceCheckpoint int
	checkpointBytes int       // the size of the last checkpoint's state
	fol             *follower // nil until the first checkpoint, or after it failed
	markOut         uint64    // the outstanding CheckpointMark's sequence number, or 0
	snapshotting    atomic.Bool

	stats Stats
}

// Stats are the loop's counters, read with Snapshot.
type Stats struct {
	Inputs        atomic.Uint64
	Reads         atomic.Uint64
	LedgerCalls   atomic.Uint64
	LedgerFails   atomic.Uint64
	ApplyNanos    atomic.Uint64
	LedgerNanos   atomic.Uint64
	QueueDepth    atomic.Int64
	HeldOutputs   atomic.Int64
	PanicsHandled atomic.Uint64
	Checkpoints   atomic.Uint64
	// CheckpointNanos is the loop's time spent taking checkpoints itself (the first after
	// a start, or after the follower failed: nothing else runs on the loop meanwhile), and
	// CheckpointMaxNanos the longest one, the pause a request may meet.
	CheckpointNanos    atomic.Uint64
	CheckpointMaxNanos atomic.Uint64
	// FollowerNanos is the follower's time spent encoding and hashing checkpoints, beside
	// the loop, and FollowerMaxNanos the longest one; FollowerFailures counts followers
	// dropped after an error.
	FollowerNanos    atomic.Uint64
	FollowerMaxNanos atomic.Uint64
	FollowerFailures atomic.Uint64
	// MarkPending is 1 while a CheckpointMark waits for the follower's digest.
	MarkPending atomic.Int64
	// FollowerLag is how many records waited for the follower after the loop's last
	// input; FollowerStalls counts the inputs after which the loop found the follower's
	// queue full and waited, FollowerStallNanos for how long in all: the pauses the
	// follower costs the loop when it falls behind.
	FollowerLag        atomic.Int64
	FollowerStalls     atomic.Uint64
	FollowerStallNanos atomic.Uint64
	// SignQueue is how many sign actions wait for their party's signature after the
	// loop's last input (the machine's action queue).
	SignQueue atomic.Int64
}

// request is one thing a transport asks of the loop.
type request struct {
	input   machine.Input // a journaled input, or nil for a read
	keyHash string
	query   machine.Query
	reply   chan machine.Reply
	// ack means the input has no reply of its own (a socket change): it is answered with
	// an empty reply once durable.
	ack bool
	// ops marks the operator's read (ops.go): a machine.QOps answered by machine.ReadOps.
	ops bool
}

type ledgerDone struct {
	res   machine.LedgerResult
	after *journal.Pending // the ledger's append the result's record must follow (commit.go)
}

// heldOutputs are the outputs of input seq (and read replies) waiting for durability.
type heldOutputs struct {
	seq   uint64
	out   machine.Outputs
	reads []readReply
	ack   chan machine.Reply // answered with an empty reply when released
}

type readReply struct {
	ch    chan machine.Reply
	reply machine.Reply
}

// New checks the configuration and builds a loop; nothing runs until Start.
func New(cfg Config) (*Loop, error) {
	if cfg.Desk == nil || cfg.Ledger == nil || cfg.Clock == nil || cfg.Sink == nil {
		return nil, errors.New("loop: desk, ledger, clock and sink are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Loop{
		cfg:     cfg,
		in:      make(chan request, cfg.QueueSize),
		results: make(chan ledgerDone, cfg.QueueSize),
		calls:   make(chan machine.LedgerCall, cfg.QueueSize),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		waiting: map[uint64]chan machine.Reply{},
		seq:     cfg.NextSeq,
		lastAt:  cfg.Desk.Now,
	}
	if l.seq == 0 {
		l.seq = 1
		if cfg.Journal != nil {
			l.seq = cfg.Journal.LastSeq() + 1
		}
	}
	l.durableTo = l.seq - 1
	l.sinceCheckpoint, l.checkpointBytes = max(cfg.SinceCheckpoint, 0), max(cfg.CheckpointBytes, 0)
	return l, nil
}

// Stats returns the loop's live counters.
func (l *Loop) Stats() *Stats { return &l.stats }

// Start runs the loop: it applies a Boot input (sockets from before are gone, ledger calls
// in flight are issued again), then serves.
func (l *Loop) Start() {
	for i := 0; i < l.cfg.Workers; i++ {
		l.workers.Add(1)
		go l.worker()
	}
	l.timer = time.NewTimer(time.Hour)
	l.timer.Stop()
	go l.run()
}

// Stop stops accepting requests, lets the inputs already applied become durable and
// their outputs leave, and stops the workers (and waits for a snapshot being saved).
// Requests still queued get ErrStopped.
func (l *Loop) Stop(ctx context.Context) error {
	close(l.stop)
	select {
	case <-l.done:
	case <-ctx.Done():
		return fmt.Errorf("stop the desk loop: %w", ctx.Err())
	}
	close(l.calls)
	wait := make(chan struct{})
	go func() { l.workers.Wait(); close(wait) }()
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop the ledger workers: %w", ctx.Err())
	}
}

// Do journals and applies a command and returns its reply once the input is durable (for
// a reply that waits on the ledger, once the answering input is).
func (l *Loop) Do(ctx context.Context, cmd machine.Command_) (machine.Reply, error) {
	return l.ask(ctx, request{input: cmd})
}

// Read answers a query for the caller with this key hash, consistently with every input
// applied before it, once those inputs are durable.
func (l *Loop) Read(ctx context.Context, keyHash string, q machine.Query) (machine.Reply, error) {
	return l.ask(ctx, request{keyHash: keyHash, query: q})
}

// OpenSocket reports a stream socket that finished its handshake, marked for
// cancel-on-disconnect or not; the machine's answer comes through the Sink.
func (l *Loop) OpenSocket(ctx context.Context, socket uint64, keyHash string, cancelOnDisconnect bool) error {
	in := machine.SocketOpened{Socket: socket, KeyHash: keyHash, CancelOnDisconnect: cancelOnDisconnect}
	_, err := l.ask(ctx, request{input: in, ack: true})
	return err
}

// CloseSocket reports that a stream socket is gone.
func (l *Loop) CloseSocket(ctx context.Context, socket uint64) error {
	_, err := l.ask(ctx, request{input: machine.SocketClosed{Socket: socket}, ack: true})
	return err
}

func (l *Loop) ask(ctx context.Context, r request) (machine.Reply, error) {
	r.reply = make(chan machine.Reply, 1)
	select {
	case l.in <- r:
		l.stats.QueueDepth.Add(1)
	case <-l.stop:
		return machine.Reply{}, ErrStopped
	case <-ctx.Done():
		return machine.Reply{}, ctx.Err()
	}
	select {
	case rep, ok := <-r.reply:
		if !ok {
			return machine.Reply{}, ErrStopped
		}
		return rep, nil
	case <-l.done:
		// The loop stopped; a reply may still have been released just before.
		select {
		case rep, ok := <-r.reply:
			if ok {
				return rep, nil
			}
		default:
		}
		return machine.Reply{}, ErrStopped
	case <-ctx.Done():
		return machine.Reply{}, ctx.Err()
	}
}

// run is the loop goroutine.
func (l *Loop) run() {
	defer close(l.done)
	l.apply(machine.Boot{}, nil)
	for {
		l.dispatchOverflow()
		select {
		case r := <-l.in:
			l.stats.QueueDepth.Add(-1)
			switch {
			case r.input == nil:
				l.read(r)
			case r.ack:
				l.applyAck(r.input, r.reply)
			default:
				l.apply(r.input, r.reply)
			}
		case d := <-l.results:
			l.after = d.after
			l.apply(d.res, nil)
		case <-l.timer.C:
			l.apply(machine.Tick{}, nil)
		case <-l.oldestUnsynced():
			l.synced()
		case d := <-l.followerDigests():
			l.followed(d)
		case <-l.stop:
			l.finishCheckpoints()
			l.drain()
			l.stopFollower()
			return
		}
	}
}

// drain waits until every applied input is durable and its outputs left.
func (l *Loop) drain() {
	for len(l.held) > 0 && len(l.unsynced) > 0 {
		<-l.unsynced[0].Done()
		l.synced()
	}
	l.dispatchOverflow()
	for len(l.overflow) > 0 {
		// The workers are still running: hand them what is left.
		l.calls <- l.overflow[0]
		l.overflow = l.overflow[1:]
	}
	for seq, ch := range l.waiting {
		delete(l.waiting, seq)
		close(ch)
	}
}

// now stamps an input: the clock's time, never earlier than the previous input's.
func (l *Loop) now() time.Time {
	t := l.cfg.Clock.Now().UTC().Round(0)
	if t.Before(l.lastAt) {
		t = l.lastAt
	}
	l.lastAt = t
	return t
}

// applyAck applies an input without a reply of its own and acknowledges it when durable.
func (l *Loop) applyAck(in machine.Input, ack chan machine.Reply) {
	l.applyWith(in, nil, ack)
}

// apply journals and applies one input; reply, if set, waits for the request's reply.
func (l *Loop) apply(in machine.Input, reply chan machine.Reply) {
	l.applyWith(in, reply, nil)
}

func (l *Loop) applyWith(in machine.Input, reply, ack chan machine.Reply) {
	after := l.after
	l.after = nil
	seq := l.seq
	l.seq++
	env := machine.Envelope{Seq: seq, At: l.now(), Input: in}
	if reply != nil {
		l.waiting[seq] = reply
	}
	var rec []byte
	var err error
	if l.cfg.Journal != nil || l.cfg.Chain || l.fol != nil {
		rec, err = machine.EncodeEnvelope(env)
	}
	if err != nil {
		// An input that cannot be encoded cannot be journaled, so it must not be applied.
		l.cfg.Logger.Error("encode input", "seq", seq, "kind", in.Kind(), "err", err)
		l.seq--
		delete(l.waiting, seq)
		for _, ch := range []chan machine.Reply{reply, ack} {
			if ch != nil {
				ch <- machine.Reply{Status: 500, Err: &machine.APIError{Status: 500, Message: "internal error"}}
			}
		}
		return
	}
	if l.cfg.Journal != nil {
		p := l.appendRecord(rec, after)
		if first, _ := p.Seqs(); first != seq {
			l.cfg.Logger.Error("journal sequence diverged from the loop's", "journal", first, "loop", seq)
		}
		l.awaitAppend(p)
	}
	if l.cfg.Chain {
		l.chainMu.Lock()
		l.chain = sha256.Sum256(append(l.chain[:], rec...))
		l.chainMu.Unlock()
	}
	start := time.Now()
	out := l.safeApply(env)
	l.stats.ApplyNanos.Add(uint64(time.Since(start)))
	l.stats.Inputs.Add(1)
	l.stats.SignQueue.Store(int64(len(l.cfg.Desk.Actions)))
	l.schedule(out.NextDeadline)
	l.hold(heldOutputs{seq: seq, out: out, ack: ack})
	if l.fol != nil {
		l.feedFollower(followItem{seq: seq, rec: rec})
	}
	if l.cfg.CheckpointEvery > 0 && !machine.IsCheckpoint(in) {
		l.sinceCheckpoint++
		if l.sinceCheckpoint >= l.checkpointInterval() && l.markOut == 0 {
			l.checkpoint()
		}
	}
}

// feedFollower hands the follower one record, waiting (and counting the wait) when its queue
// is full.
func (l *Loop) feedFollower(it followItem) {
	select {
	case l.fol.feed <- it:
	default:
		start := time.Now()
		l.fol.feed <- it
		l.stats.FollowerStalls.Add(1)
		l.stats.FollowerStallNanos.Add(uint64(time.Since(start)))
	}
	l.stats.FollowerLag.Store(int64(len(l.fol.feed)))
}

// checkpointInterval is how many inputs pass before the next checkpoint.
func (l *Loop) checkpointInterval() int {
	if l.cfg.CheckpointBytesPerInput <= 0 {
		return l.cfg.CheckpointEvery
	}
	return max(l.cfg.CheckpointEvery, l.checkpointBytes/l.cfg.CheckpointBytesPerInput)
}

// checkpoint asks the follower for a checkpoint with a mark or, without a follower, takes
// it on the loop and seeds a follower with it.
func (l *Loop) checkpoint() {
	l.sinceCheckpoint = 0
	if l.fol != nil {
		mark := l.seq
		l.applyWith(machine.CheckpointMark{}, nil, nil)
		if l.seq > mark { // journaled and applied
			l.markOut = mark
			l.stats.MarkPending.Store(1)
		}
		return
	}
	l.checkpointHere(true)
}

// finishCheckpoints, as the loop stops, waits for the outstanding mark's digest and takes
// one more checkpoint if one is due, so that a clean stop leaves the last state verified
// (and, with a follower, snapshotted).
func (l *Loop) finishCheckpoints() {
	l.awaitMark()
	if l.cfg.CheckpointEvery > 0 && l.sinceCheckpoint >= l.checkpointInterval() {
		if l.fol == nil {
			l.sinceCheckpoint = 0
			l.checkpointHere(false) // no follower to seed: the loop is stopping
			return
		}
		l.checkpoint()
		l.awaitMark()
	}
}

// awaitMark waits for the follower's answer to the outstanding mark, if any, and handles it.
func (l *Loop) awaitMark() {
	if l.fol != nil && l.markOut != 0 {
		l.followed(<-l.fol.digests)
	}
}

// checkpointHere journals the desk's digest and hands the same state to the snapshotter
// and, if seed is set, to a new follower. The state is encoded on the loop (nothing may
// change it meanwhile) while another goroutine hashes the pieces already encoded, so the
// loop pauses for about the encoding rather than the encoding and then the hash.
func (l *Loop) checkpointHere(seed bool) {
	start := time.Now()
	defer func() {
		took := uint64(time.Since(start))
		l.stats.CheckpointNanos.Add(took)
		if took > l.stats.CheckpointMaxNanos.Load() { // only the loop goroutine writes it
			l.stats.CheckpointMaxNanos.Store(took)
		}
	}()
	w := newHashingBuffer(max(l.checkpointBytes+l.checkpointBytes/8, 1<<16))
	err := l.cfg.Desk.WriteSnapshot(w)
	state, sum := w.finish()
	if err != nil {
		l.cfg.Logger.Error("encode desk state for a checkpoint", "err", err)
		return
	}
	l.checkpointBytes = len(state)
	l.stats.Checkpoints.Add(1)
	seq := l.seq - 1
	l.saveSnapshot(seq, state)
	// The follower starts from this state (it only reads it, as the snapshotter does) and
	// applies every record from the checkpoint on.
	if seed {
		l.startFollower(seq, state)
	}
	// sum = Desk.Digest, without encoding the state twice
	l.applyWith(machine.Checkpoint{Digest: hex.EncodeToString(sum[:])}, nil, nil)
}

// saveSnapshot hands the state after input seq to Config.Snapshot on a goroutine of its
// own, unless a save is still running. It is called from the loop or the follower, both of
// which stop before Stop waits for the workers.
func (l *Loop) saveSnapshot(seq uint64, state []byte) {
	if l.cfg.Snapshot == nil || !l.snapshotting.CompareAndSwap(false, true) {
		return
	}
	l.workers.Add(1) // Stop waits for the save, so a closed journal never sees it
	go func() {
		defer l.workers.Done()
		defer l.snapshotting.Store(false)
		l.cfg.Snapshot(seq, state)
	}()
}

// hashingBuffer collects an encoding written in pieces and hashes each piece on its own
// goroutine as it arrives. A piece handed over is a full slice of the buffer that later
// writes never touch (they append past it, or into a new array once it grows), so the
// hasher reads it without a copy or a lock.
type hashingBuffer struct {
	buf    []byte
	pieces chan []byte
	sum    chan [32]byte
}

// hashingPiecesQueued bounds the pieces waiting for the hasher (slice headers only: the
// bytes are the buffer's).
const hashingPiecesQueued = 1024

func newHashingBuffer(sizeHint int) *hashingBuffer {
	b := &hashingBuffer{
		buf:    make([]byte, 0, sizeHint),
		pieces: make(chan []byte, hashingPiecesQueued),
		sum:    make(chan [32]byte, 1),
	}
	go func() {
		h := sha256.New()
		for p := range b.pieces {
			h.Write(p)
		}
		var sum [32]byte
		h.Sum(sum[:0])
		b.sum <- sum
	}()
	return b
}

// Write appends p and hands the appended piece to the hasher.
func (b *hashingBuffer) Write(p []byte) (int, error) {
	start := len(b.buf)
	b.buf = append(b.buf, p...)
	b.pieces <- b.buf[start:len(b.buf):len(b.buf)]
	return len(p), nil
}

// finish ends the encoding: the whole of it and its SHA-256, once the hasher caught up.
func (b *hashingBuffer) finish() ([]byte, [32]byte) {
	close(b.pieces)
	return b.buf, <-b.sum
}

// safeApply applies an input, turning a panic (a bug) into an internal-error reply for the
// request rather than a dead desk.
func (l *Loop) safeApply(env machine.Envelope) (out machine.Outputs) {
	defer func() {
		if p := recover(); p != nil {
			l.stats.PanicsHandled.Add(1)
			l.cfg.Logger.Error("machine panicked", "seq", env.Seq, "kind", env.Input.Kind(), "panic", fmt.Sprint(p))
			out = machine.Outputs{Replies: []machine.Reply{{Seq: env.Seq, Status: 500, Err: &machine.APIError{Status: 500, Message: "internal error"}}}}
		}
	}()
	return machine.Apply(l.cfg.Desk, env)
}

// read answers a query; its reply waits for the inputs it may reflect to be durable.
func (l *Loop) read(r request) {
	l.stats.Reads.Add(1)
	q := r.query
	if party, ok := l.cfg.Desk.Caller(r.keyHash); ok {
		switch q.(type) {
		case machine.QBalances:
			q = machine.QBalances{Holdings: l.cfg.Ledger.Holdings(party)}
		case machine.QIncoming:
			q = machine.QIncoming{Transfers: l.cfg.Ledger.Incoming(party)}
		}
	}
	var rep machine.Reply
	if oq, ok := q.(machine.QOps); ok && r.ops {
		rep = machine.Reply{Status: 200, Body: machine.ReadOps(l.cfg.Desk, l.now(), oq.Limit)}
	} else {
		rep = machine.Read(l.cfg.Desk, l.now(), r.keyHash, q)
	}
	if l.durableTo >= l.seq-1 {
		r.reply <- rep
		return
	}
	last := &l.held[len(l.held)-1]
	last.reads = append(last.reads, readReply{ch: r.reply, reply: rep})
}

// hold queues outputs until their input is durable (at once without a journal).
func (l *Loop) hold(h heldOutputs) {
	if l.cfg.Journal == nil {
		l.durableTo = h.seq
		l.release(h)
		return
	}
	l.held = append(l.held, h)
	l.stats.HeldOutputs.Store(int64(len(l.held)))
}

// markDurable releases every held output up to seq.
func (l *Loop) markDurable(seq uint64) {
	if seq > l.durableTo {
		l.durableTo = seq
	}
	n := 0
	for n < len(l.held) && l.held[n].seq <= l.durableTo {
		l.release(l.held[n])
		n++
	}
	l.held = append(l.held[:0], l.held[n:]...)
	l.stats.HeldOutputs.Store(int64(len(l.held)))
}

// release lets a durable input's outputs leave.
func (l *Loop) release(h heldOutputs) {
	for _, rep := range h.out.Replies {
		if ch, ok := l.waiting[rep.Seq]; ok {
			delete(l.waiting, rep.Seq)
			ch <- rep
		}
	}
	if h.ack != nil {
		h.ack <- machine.Reply{Seq: h.seq, Status: 204}
	}
	if len(h.out.Events) > 0 || len(h.out.Closes) > 0 || len(h.out.Bindings) > 0 {
		l.cfg.Sink.Deliver(machine.Outputs{Bindings: h.out.Bindings, Events: h.out.Events, Closes: h.out.Closes})
	}
	for _, c := range h.out.Calls {
		l.dispatch(c)
	}
	for _, r := range h.reads {
		r.ch <- r.reply
	}
}

// dispatch hands a ledger call to the workers without ever blocking the loop.
func (l *Loop) dispatch(c machine.LedgerCall) {
	if len(l.overflow) == 0 {
		select {
		case l.calls <- c:
			return
		default:
		}
	}
	l.overflow = append(l.overflow, c)
}

func (l *Loop) dispatchOverflow() {
	for len(l.overflow) > 0 {
		select {
		case l.calls <- l.overflow[0]:
			l.overflow = l.overflow[1:]
		default:
			return
		}
	}
}

// schedule arms the timer for the machine's next deadline.
func (l *Loop) schedule(next time.Time) {
	if next.IsZero() {
		return
	}
	if !l.timer.Stop() {
		select {
		case <-l.timer.C:
		default:
		}
	}
	wait := next.Sub(l.cfg.Clock.Now())
	if wait < 0 {
		wait = 0
	}
	l.timer.Reset(wait)
}

// worker runs ledger calls and feeds their results back.
func (l *Loop) worker() {
	defer l.workers.Done()
	for c := range l.calls {
		start := time.Now()
		res, after := l.callLedger(c)
		l.stats.LedgerNanos.Add(uint64(time.Since(start)))
		l.stats.LedgerCalls.Add(1)
		if res.Failure != nil {
			l.stats.LedgerFails.Add(1)
		}
		select {
		case l.results <- ledgerDone{res: res, after: after}:
		case <-l.done:
			// The loop stopped; the result is lost, and the call will be issued again
			// after a restart under the same command id.
		}
	}
}

// Chain is a running SHA-256 over every input record, kept when Config.Chain is set: two
// runs that saw the same inputs have the same chain.
func (l *Loop) Chain() [32]byte {
	l.chainMu.Lock()
	defer l.chainMu.Unlock()
	return l.chain
}
