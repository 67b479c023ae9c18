package pglog

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultLeaseTimeout is how long the database keeps a silent leader's lock: a leader
// that stops (SIGSTOP, a hung machine) loses it this long after its last keep-alive, and
// a standby takes over.
const DefaultLeaseTimeout = 2 * time.Second

// Lease is the leader's session advisory lock (LeaderLockKey), held on a connection of
// its own. PostgreSQL releases it when that session ends: the process died, its
// connection broke, or it was silent for longer than the lease timeout (the session's
// idle_session_timeout, kept from firing by a keep-alive every third of it). The lock
// says who should lead; the logs' epochs say who may write, so a leader that lost its
// lease but does not know it yet is fenced all the same.
type Lease struct {
	conn *pgx.Conn
	lost chan struct{}
	err  error
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// TryLead takes the leader's lock if no other session holds it. ok is false when
// another one does.
func (s *Store) TryLead(ctx context.Context, timeout time.Duration) (l *Lease, ok bool, err error) {
	if timeout <= 0 {
		timeout = DefaultLeaseTimeout
	}
	conn, err := s.dedicated(ctx)
	if err != nil {
		return nil, false, err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET idle_session_timeout = %d", timeout.Milliseconds())); err != nil {
		_ = conn.Close(ctx)
		return nil, false, fmt.Errorf("pglog: set the lease timeout (PostgreSQL 14 or later is needed): %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(LeaderLockKey)).Scan(&ok); err != nil {
		_ = conn.Close(ctx)
		return nil, false, fmt.Errorf("pglog: take the leader's lock in %s: %w", s.where, err)
	}
	if !ok {
		_ = conn.Close(ctx)
		return nil, false, nil
	}
	l = &Lease{conn: conn, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.keepAlive(timeout / 3)
	return l, true, nil
}

// Lead waits until this process holds the leader's lock, trying every poll, or until
// ctx ends.
func (s *Store) Lead(ctx context.Context, timeout, poll time.Duration) (*Lease, error) {
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	for {
		l, ok, err := s.TryLead(ctx, timeout)
		if err != nil {
			return nil, err
		}
		if ok {
			return l, nil
		}
		select {
		case <-time.After(poll):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// keepAlive pings the lease's session until Release, and closes Lost at the first
// failure: the session, and the lock with it, is gone.
func (l *Lease) keepAlive(every time.Duration) {
	defer close(l.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every*2)
			err := l.conn.Ping(ctx)
			cancel()
			if err != nil {
				l.err = fmt.Errorf("pglog: lost the leader's lock: %w", err)
				close(l.lost)
				return
			}
		}
	}
}

// Lost is closed when the lease is lost (Err says how).
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is why the lease was lost, once Lost is closed.
func (l *Lease) Err() error {
	select {
	case <-l.lost:
		return l.err
	default:
		return nil
	}
}

// Release gives the lock up (closing its session).
func (l *Lease) Release() {
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		_ = l.conn.Close(context.Background())
	})
}
