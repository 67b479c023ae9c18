package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Log is a durable, totally ordered log of opaque records with snapshots.
//
// Sequence numbers start at 1 and are contiguous. They are assigned when a
// record is enqueued, in call order, so a record's sequence number is known
// before it is durable. Implementations are safe for concurrent use.
//
// The interface says nothing about files: a later implementation serves it
// from PostgreSQL for a standby that takes over.
type Log interface {
	// Append enqueues records and blocks until all of them are durable. It
	// returns the sequence number of the last one. When ctx ends after the
	// records were enqueued, Append returns ctx.Err() but the records may
	// still become durable. With no records it returns LastSeq().
	Append(ctx context.Context, records ...[]byte) (lastSeq uint64, err error)

	// AppendAsync enqueues records and returns at once (it blocks only
	// while the queue is full) with a Pending that is done when they are
	// durable. Callers must not modify the records until then.
	AppendAsync(records ...[]byte) *Pending

	// ReadFrom calls fn, in order, for every durable record whose sequence
	// number is seq or more (seq 0 is read as 1), as of the call. rec is
	// only valid during the call. An error from fn stops the read and is
	// returned as is. When the log no longer holds seq, ReadFrom returns an
	// error wrapping ErrPruned.
	ReadFrom(seq uint64, fn func(seq uint64, rec []byte) error) error

	// FirstSeq is the sequence number of the first record the log still
	// holds (LastSeq()+1 when it holds none).
	FirstSeq() uint64

	// LastSeq is the sequence number of the last record enqueued so far,
	// durable or not (0 for an empty log).
	LastSeq() uint64

	// SaveSnapshot durably stores data as the state after applying every
	// record up to and including seq. It first waits until the log is
	// durable up to seq.
	SaveSnapshot(seq uint64, data []byte) error

	// LoadSnapshot returns the newest valid snapshot the log still covers
	// (the records after it are all held). ok is false when there is none
	// and the log starts at sequence 1, i.e. a full replay is possible.
	LoadSnapshot() (seq uint64, data []byte, ok bool, err error)

	// Prune deletes records and snapshots no restart can need any more:
	// records covered by the oldest of the snapshots it keeps, and the
	// snapshots older than those.
	Prune() error

	// Close writes what is queued, makes it durable and releases the log.
	Close() error
}

// Errors a Log reports. Match them with errors.Is.
var (
	// ErrLocked means another process (or another open Log in this one)
	// holds the log.
	ErrLocked = errors.New("journal: locked by another writer")
	// ErrClosed means the Log was closed.
	ErrClosed = errors.New("journal: closed")
	// ErrPruned means the records asked for were pruned behind a snapshot.
	ErrPruned = errors.New("journal: records pruned")
	// ErrRecordTooLarge means a record is longer than MaxRecordSize.
	ErrRecordTooLarge = errors.New("journal: record too large")
	// ErrUnsupportedVersion means the data was written by a newer format
	// version than this code reads.
	ErrUnsupportedVersion = errors.New("journal: unsupported format version")
	// ErrStaleEpoch means the log was already written by a newer epoch.
	ErrStaleEpoch = errors.New("journal: stale epoch")
	// ErrCorrupt is matched by every *CorruptionError.
	ErrCorrupt = errors.New("journal: corrupt")
	// ErrNoSnapshot means the log was pruned but no usable snapshot covers
	// its start, so the state cannot be rebuilt.
	ErrNoSnapshot = errors.New("journal: no usable snapshot")
)

// CorruptionError reports damaged data that recovery must not repair on its
// own: a bad record in the middle of the log, a broken header, a gap in the
// sequence numbers. It names the file and the byte offset.
type CorruptionError struct {
	Path   string // the damaged file
	Offset int64  // byte offset of the damaged frame or header in Path
	Reason string // what is wrong
}

// Error implements error.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("journal: corrupt data in %s at offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// Pending is the future of an AppendAsync: it knows the sequence numbers
// its records received and is done once they are durable (or failed).
type Pending struct {
	first, last uint64
	done        chan struct{}
	once        sync.Once
	err         error
}

// NewPending returns a Pending for the records first..last and the function
// that completes it. It is for implementations of Log; the first call of
// complete wins, later calls do nothing.
func NewPending(first, last uint64) (p *Pending, complete func(err error)) {
	p = &Pending{first: first, last: last, done: make(chan struct{})}
	return p, p.complete
}

func (p *Pending) complete(err error) {
	p.once.Do(func() {
		p.err = err
		close(p.done)
	})
}

// CompletedPending returns a Pending of no records that is already done with err: an
// append of nothing (nil), or one refused before it was queued. It is for implementations
// of Log.
func CompletedPending(err error) *Pending {
	p, complete := NewPending(0, 0)
	complete(err)
	return p
}

// Seqs returns the sequence numbers of the first and last records. Both
// are 0 when the append was refused (then Err is set) or had no records.
func (p *Pending) Seqs() (first, last uint64) { return p.first, p.last }

// Done is closed when the records are durable or the append failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Err is the outcome once Done is closed: nil when the records are durable.
// Before that it returns nil.
func (p *Pending) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Wait blocks until the records are durable and returns the last sequence
// number, or until ctx ends.
func (p *Pending) Wait(ctx context.Context) (lastSeq uint64, err error) {
	select {
	case <-p.done:
		if p.err != nil {
			return 0, p.err
		}
		return p.last, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
