package journal

import (
	"context"
	"errors"
	"fmt"
)

// Shared is a Log that a second process can follow and take over: the interface both
// backends serve, the file log (one machine, one writer) and the PostgreSQL log (package
// pglog: a leader and hot standbys on several machines).
//
// Every append is made at an expected head under an epoch: it is durable only if the
// log's (epoch, head) is still what the writer expects, so a writer that another one
// took over from (a paused or partitioned leader, a zombie) has every later append
// refused with ErrFenced, and can never write a record after the new writer's.
type Shared interface {
	Log

	// Epoch is the epoch this handle appends under: the one it opened with or the one
	// its last TakeOver set (0 for a handle that only follows).
	Epoch() uint64

	// Follow calls fn, in order, for every durable record from seq on (seq 0 is read as
	// 1), then waits for more and calls fn for them as they become durable, until ctx
	// ends (it returns ctx.Err()), fn returns an error (returned as is), or the handle is
	// closed (ErrClosed). A read of a pruned position returns an error wrapping ErrPruned.
	// Wake-ups are only hints: Follow always reads by position, so a lost or duplicated
	// notification never loses or repeats a record.
	Follow(ctx context.Context, seq uint64, fn func(seq uint64, rec []byte) error) error

	// TakeOver makes this handle the log's writer under a new epoch, higher than every
	// epoch the log has seen, and returns it. Once it returned, every append of a writer
	// under an older epoch fails with ErrFenced, and this handle appends after the log's
	// durable head (LastSeq). Records a fenced writer had enqueued but not made durable
	// are not in the log.
	TakeOver(ctx context.Context) (epoch uint64, err error)
}

// ErrFenced means another writer took the log over under a newer epoch: this writer's
// append was refused, and every later one will be. A process that meets it must stop
// serving at once: what it did not make durable is not in the log.
var ErrFenced = errors.New("journal: fenced: another writer took the log over under a newer epoch")

var _ Shared = (*FileLog)(nil)

// Epoch implements Shared.
func (l *FileLog) Epoch() uint64 { return l.epoch.Load() }

// TakeOver implements Shared. A file log has one writer at a time (the directory's
// lock), so taking it over cannot fence another process: it makes what is queued
// durable and starts a segment under the next epoch, so that opening the directory
// again under an older epoch fails with ErrStaleEpoch.
func (l *FileLog) TakeOver(ctx context.Context) (uint64, error) {
	reply := make(chan error, 1)
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	if l.failed != nil {
		err := l.failed
		l.mu.Unlock()
		return 0, err
	}
	l.takeovers = append(l.takeovers, reply)
	l.wake.Signal()
	l.mu.Unlock()
	select {
	case err := <-reply:
		if err != nil {
			return 0, fmt.Errorf("journal: take over %s: %w", l.dir, err)
		}
		return l.epoch.Load(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Follow implements Shared: it reads what is durable, then waits for the writer to make
// more durable.
func (l *FileLog) Follow(ctx context.Context, seq uint64, fn func(seq uint64, rec []byte) error) error {
	return follow(ctx, seq, fn, l.ReadFrom, func() followState {
		l.mu.Lock()
		defer l.mu.Unlock()
		return followState{durable: l.durable, advanced: l.advanced, stopped: l.closing || l.stopped}
	})
}

// followState is what follow needs to know of a log, read under its lock.
type followState struct {
	durable  uint64          // the last durable sequence number
	advanced <-chan struct{} // closed when durable next advances
	closed   <-chan struct{} // closed when the follower's handle closes (nil: never)
	stopped  bool            // the log will not advance any more
}

// follow is Follow over a log's ReadFrom (read) and its state: it reads what is durable
// from seq on, then waits for more until ctx ends or the log stops or closes (ErrClosed).
func follow(ctx context.Context, seq uint64, fn func(seq uint64, rec []byte) error,
	read func(seq uint64, fn func(seq uint64, rec []byte) error) error, state func() followState) error {
	seq = max(seq, 1)
	for {
		st := state()
		if st.durable >= seq {
			if err := read(seq, func(s uint64, rec []byte) error {
				seq = s + 1
				return fn(s, rec)
			}); err != nil {
				return err
			}
			continue
		}
		if st.stopped {
			return ErrClosed
		}
		select {
		case <-st.advanced:
		case <-st.closed:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
