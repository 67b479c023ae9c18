package pglog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deskco/rfqdesk/journal"
)

// Log is one log of a Store: a journal.Shared. A Log opens as a follower (epoch 0: it
// reads and follows, and its appends are refused); TakeOver makes it the writer.
type Log struct {
	s    *Store
	name string

	mu       sync.Mutex
	wake     *sync.Cond // the writer waits here for work
	progress *sync.Cond // SaveSnapshot waits here for durability
	epoch    uint64     // 0 until TakeOver
	nextSeq  uint64     // next sequence number to assign (a writer)
	durable  uint64     // last durable sequence number this handle knows of
	first    uint64     // first record held, as last read
	pending  [][]byte
	pendingB int
	waiters  []waiter
	space    chan struct{} // closed when the writer takes the queue
	failed   error         // sticky: fenced, or an append of unknown outcome
	closing  bool
	writing  bool          // the writer goroutine runs
	inflight bool          // the writer is appending a batch taken off the queue
	stopped  chan struct{} // closed when the writer goroutine ends
	closed   chan struct{} // closed by Close: ends Follow

	closeOnce  sync.Once
	fenceOnce  sync.Once
	failedOnce sync.Once
}

type waiter struct {
	last     uint64
	complete func(error)
}

var _ journal.Shared = (*Log)(nil)

// Log opens the log called name (creating its row when missing) as a follower.
func (s *Store) Log(ctx context.Context, name string) (*Log, error) {
	l := &Log{s: s, name: name, space: make(chan struct{}), stopped: make(chan struct{}), closed: make(chan struct{})}
	l.wake = sync.NewCond(&l.mu)
	l.progress = sync.NewCond(&l.mu)
	if _, err := s.pool.Exec(ctx, `INSERT INTO rfqdesk_log (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, name); err != nil {
		return nil, fmt.Errorf("pglog: open log %q in %s: %w", name, s.where, err)
	}
	head, first, _, err := l.readHead(ctx)
	if err != nil {
		return nil, err
	}
	l.durable, l.first, l.nextSeq = head, first, head+1
	return l, nil
}

// readHead reads the log's row.
func (l *Log) readHead(ctx context.Context) (head, first, epoch uint64, err error) {
	var h, f, e int64
	if err := l.s.pool.QueryRow(ctx, `SELECT head, first_seq, epoch FROM rfqdesk_log WHERE name = $1`, l.name).Scan(&h, &f, &e); err != nil {
		return 0, 0, 0, fmt.Errorf("pglog: read the head of log %q: %w", l.name, err)
	}
	return uint64(h), uint64(f), uint64(e), nil
}

// Name is the log's name.
func (l *Log) Name() string { return l.name }

// Epoch implements journal.Shared.
func (l *Log) Epoch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// TakeOver implements journal.Shared: one statement raises the log's epoch by one, so
// every append of an older epoch is refused from its commit on; this handle then appends
// after the head it read in the same statement.
func (l *Log) TakeOver(ctx context.Context) (uint64, error) {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return 0, journal.ErrClosed
	}
	// Wait until the queue of an earlier epoch of this handle is written (or refused).
	for len(l.pending) > 0 || len(l.waiters) > 0 || l.inflight {
		l.progress.Wait()
	}
	l.mu.Unlock()
	var epoch, head, first int64
	err := l.s.pool.QueryRow(ctx, `UPDATE rfqdesk_log SET epoch = epoch + 1 WHERE name = $1 RETURNING epoch, head, first_seq`,
		l.name).Scan(&epoch, &head, &first)
	if err != nil {
		return 0, fmt.Errorf("pglog: take over log %q in %s: %w", l.name, l.s.where, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epoch, l.durable, l.nextSeq, l.first = uint64(epoch), uint64(head), uint64(head)+1, uint64(first)
	l.failed = nil
	if !l.writing && !l.closing {
		l.writing = true
		go l.run()
	}
	return l.epoch, nil
}

// FirstSeq implements journal.Log: the first record held as this handle last saw it.
func (l *Log) FirstSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// LastSeq implements journal.Log: a writer's last enqueued record, a follower's last
// durable one as it last read.
func (l *Log) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextSeq - 1
}

// Append implements journal.Log.
func (l *Log) Append(ctx context.Context, records ...[]byte) (uint64, error) {
	if len(records) == 0 {
		return l.LastSeq(), nil
	}
	p, err := l.enqueue(ctx, records)
	if err != nil {
		return 0, err
	}
	return p.Wait(ctx)
}

// AppendAsync implements journal.Log.
func (l *Log) AppendAsync(records ...[]byte) *journal.Pending {
	if len(records) == 0 {
		return journal.CompletedPending(nil)
	}
	p, err := l.enqueue(context.Background(), records)
	if err != nil {
		return journal.CompletedPending(err)
	}
	return p
}

func (l *Log) maxBatch() int {
	if l.s.opts.MaxBatchBytes > 0 {
		return l.s.opts.MaxBatchBytes
	}
	return journal.DefaultMaxBatchBytes
}

// enqueue gives records their sequence numbers and queues them for the writer, waiting
// while the queue is full.
func (l *Log) enqueue(ctx context.Context, records [][]byte) (*journal.Pending, error) {
	size := 0
	for i, r := range records {
		if len(r) > journal.MaxRecordSize {
			return nil, fmt.Errorf("%w: record %d is %d bytes, the maximum is %d", journal.ErrRecordTooLarge, i, len(r), journal.MaxRecordSize)
		}
		size += len(r)
	}
	l.mu.Lock()
	for {
		switch {
		case l.closing:
			l.mu.Unlock()
			return nil, journal.ErrClosed
		case l.failed != nil:
			err := l.failed
			l.mu.Unlock()
			return nil, err
		case l.epoch == 0:
			l.mu.Unlock()
			return nil, fmt.Errorf("pglog: log %q: this desk follows the log and may not write it: %w", l.name, journal.ErrFenced)
		}
		if l.pendingB == 0 || l.pendingB+size <= l.maxBatch() {
			break
		}
		if err := journal.WaitSpace(ctx, &l.mu, l.space); err != nil {
			return nil, err
		}
	}
	first := l.nextSeq
	l.pending = append(l.pending, records...)
	l.pendingB += size
	l.nextSeq += uint64(len(records))
	p, complete := journal.NewPending(first, l.nextSeq-1)
	l.waiters = append(l.waiters, waiter{last: l.nextSeq - 1, complete: complete})
	l.wake.Signal()
	l.mu.Unlock()
	return p, nil
}

// appendSQL is the fenced append: the head moves only if (epoch, head) is what the
// writer expects, and the records are inserted only if it moved, in one statement (one
// transaction). It returns how many records it inserted: 0 when fenced.
const appendSQL = `
WITH upd AS (
	UPDATE rfqdesk_log SET head = $4 WHERE name = $1 AND epoch = $2 AND head = $3 RETURNING name
), ins AS (
	INSERT INTO rfqdesk_record (log, seq, epoch, rec)
	SELECT upd.name, $3 + r.i, $2, r.rec FROM upd, unnest($5::bytea[]) WITH ORDINALITY AS r(rec, i)
	RETURNING 1
)
SELECT count(*) FROM ins`

// run is the writer goroutine: group commit. It takes what was queued while the
// previous statement ran (up to MaxBatchBytes), appends it in one statement, and
// completes the appends it carried in order.
func (l *Log) run() {
	defer close(l.stopped)
	for {
		l.mu.Lock()
		for len(l.pending) == 0 && !l.closing {
			l.wake.Wait()
		}
		if len(l.pending) == 0 {
			l.writing = false
			l.progress.Broadcast()
			l.mu.Unlock()
			return
		}
		// Take whole appends up to the batch bound (at least one).
		n, bytes, w := 0, 0, 0
		for w < len(l.waiters) {
			k := int(l.waiters[w].last - l.durable - uint64(n))
			size := 0
			for _, r := range l.pending[n : n+k] {
				size += len(r)
			}
			if w > 0 && bytes+size > l.maxBatch() {
				break
			}
			n, bytes, w = n+k, bytes+size, w+1
		}
		batch, waiters := l.pending[:n:n], l.waiters[:w:w]
		l.pending, l.waiters = l.pending[n:], l.waiters[w:]
		l.pendingB -= bytes
		head, epoch, err := l.durable, l.epoch, l.failed
		l.inflight = true
		close(l.space)
		l.space = make(chan struct{})
		l.mu.Unlock()

		if err == nil {
			err = l.write(epoch, head, batch)
		}

		l.noteFenced(err)
		if f := l.s.opts.OnWriteFailure; f != nil && err != nil {
			l.failedOnce.Do(func() { f(l.name, err) })
		}
		l.mu.Lock()
		l.inflight = false
		if err != nil && l.failed == nil {
			l.failed = err
		}
		if l.failed != nil {
			err = l.failed
		}
		for _, wt := range waiters {
			wt.complete(err)
		}
		if err == nil {
			l.durable = head + uint64(n)
		} else {
			// Nothing queued after a failure can be written: fail it now.
			for _, wt := range l.waiters {
				wt.complete(err)
			}
			l.pending, l.waiters, l.pendingB = nil, nil, 0
		}
		l.progress.Broadcast()
		l.mu.Unlock()
	}
}

// write appends batch after head under epoch.
func (l *Log) write(epoch, head uint64, batch [][]byte) error {
	start := time.Now()
	var n int64
	err := l.s.pool.QueryRow(context.Background(), appendSQL, l.name, int64(epoch), int64(head),
		int64(head)+int64(len(batch)), batch).Scan(&n)
	if err != nil {
		return fmt.Errorf("pglog: append to log %q (outcome unknown, no further appends until it is taken over again): %w", l.name, err)
	}
	if int(n) != len(batch) {
		cur, _, curEpoch, rerr := l.readHead(context.Background())
		if rerr != nil {
			return fmt.Errorf("pglog: log %q refused an append under epoch %d at head %d: %w", l.name, epoch, head, journal.ErrFenced)
		}
		return fmt.Errorf("pglog: log %q refused an append under epoch %d at head %d, it is at epoch %d, head %d: %w",
			l.name, epoch, head, curEpoch, cur, journal.ErrFenced)
	}
	if f := l.s.opts.OnCommit; f != nil {
		f(l.name, len(batch), time.Since(start))
	}
	return nil
}

// ReadFrom implements journal.Log: it reads the records durable in the database when
// called, in one read-only transaction (a consistent view while Prune runs).
func (l *Log) ReadFrom(seq uint64, fn func(seq uint64, rec []byte) error) error {
	_, err := l.readFrom(context.Background(), seq, fn)
	return err
}

// readFrom reads from seq to the head and returns the head it read to.
func (l *Log) readFrom(ctx context.Context, seq uint64, fn func(seq uint64, rec []byte) error) (uint64, error) {
	l.mu.Lock()
	closing := l.closing
	l.mu.Unlock()
	if closing {
		return 0, journal.ErrClosed
	}
	seq = max(seq, 1)
	var head uint64
	err := pgx.BeginTxFunc(ctx, l.s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var h, f int64
		if err := tx.QueryRow(ctx, `SELECT head, first_seq FROM rfqdesk_log WHERE name = $1`, l.name).Scan(&h, &f); err != nil {
			return fmt.Errorf("pglog: read the head of log %q: %w", l.name, err)
		}
		head = uint64(h)
		l.mu.Lock()
		l.first = uint64(f)
		if l.epoch == 0 && head >= l.nextSeq {
			l.durable, l.nextSeq = head, head+1
		}
		l.mu.Unlock()
		if seq < uint64(f) {
			return fmt.Errorf("%w: log %q asked for sequence %d, it starts at %d", journal.ErrPruned, l.name, seq, f)
		}
		if seq > head {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT seq, rec FROM rfqdesk_record WHERE log = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq`,
			l.name, int64(seq), int64(head))
		if err != nil {
			return fmt.Errorf("pglog: read log %q: %w", l.name, err)
		}
		defer rows.Close()
		next := seq
		for rows.Next() {
			var s int64
			var rec []byte
			if err := rows.Scan(&s, &rec); err != nil {
				return fmt.Errorf("pglog: read log %q: %w", l.name, err)
			}
			if uint64(s) != next {
				return fmt.Errorf("%w: log %q holds record %d where %d was expected", journal.ErrCorrupt, l.name, s, next)
			}
			if err := fn(uint64(s), rec); err != nil {
				return &callbackError{err}
			}
			next++
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("pglog: read log %q: %w", l.name, err)
		}
		if next != head+1 {
			return fmt.Errorf("%w: log %q ends at record %d, its head says %d", journal.ErrCorrupt, l.name, next-1, head)
		}
		return nil
	})
	var ce *callbackError
	if errors.As(err, &ce) {
		return head, ce.err
	}
	return head, err
}

// callbackError carries fn's error out of the transaction unchanged.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

// Follow implements journal.Shared: it reads by position up to the head, then waits for
// a notification on NotifyChannel (or PollInterval, whichever comes first) and reads
// again. It holds a connection of its own while it runs.
func (l *Log) Follow(ctx context.Context, seq uint64, fn func(seq uint64, rec []byte) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-l.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := l.s.dedicated(ctx)
	if err != nil {
		return l.followErr(ctx, err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return l.followErr(ctx, fmt.Errorf("pglog: listen for log %q: %w", l.name, err))
	}
	seq = max(seq, 1)
	for {
		if _, err := l.readFrom(ctx, seq, func(s uint64, rec []byte) error {
			seq = s + 1
			return fn(s, rec)
		}); err != nil {
			return l.followErr(ctx, err)
		}
		wctx, wcancel := context.WithTimeout(ctx, l.s.opts.PollInterval)
		_, err := conn.WaitForNotification(wctx)
		wcancel()
		if err != nil && ctx.Err() != nil {
			return l.followErr(ctx, err)
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("pglog: wait for log %q: %w", l.name, err)
		}
	}
}

// followErr turns the error that ended a Follow into its contract: ErrClosed after
// Close, the caller's ctx.Err() when its context ended.
func (l *Log) followErr(ctx context.Context, err error) error {
	select {
	case <-l.closed:
		return journal.ErrClosed
	default:
	}
	if ctx.Err() != nil && !errors.Is(err, journal.ErrPruned) && !errors.Is(err, journal.ErrCorrupt) {
		var ce *callbackError
		if !errors.As(err, &ce) {
			return context.Cause(ctx)
		}
	}
	return err
}

// waitDurable waits until this writer made every record up to seq durable.
func (l *Log) waitDurable(seq uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.durable < seq {
		switch {
		case l.failed != nil:
			return l.failed
		case l.closing && !l.writing:
			return journal.ErrClosed
		case l.epoch == 0 || seq >= l.nextSeq:
			return fmt.Errorf("pglog: snapshot at %d is ahead of log %q (%d)", seq, l.name, l.nextSeq-1)
		}
		l.progress.Wait()
	}
	return nil
}

func (l *Log) maxSnapshot() int64 {
	if l.s.opts.MaxSnapshotSize > 0 {
		return l.s.opts.MaxSnapshotSize
	}
	return journal.DefaultMaxSnapshot
}

// SaveSnapshot implements journal.Log; only the writer of the current epoch can save one.
// It takes no lock on the log's row, so appends go on while a large snapshot is written:
// a snapshot at a record that is durable is the state those records make, whichever
// writer encoded it, so one whose writer was fenced meanwhile is still true.
func (l *Log) SaveSnapshot(seq uint64, data []byte) error {
	if int64(len(data)) > l.maxSnapshot() {
		return fmt.Errorf("pglog: snapshot of %d bytes exceeds the maximum of %d", len(data), l.maxSnapshot())
	}
	if err := l.waitDurable(seq); err != nil {
		return err
	}
	if data == nil {
		data = []byte{}
	}
	epoch := l.Epoch()
	tag, err := l.s.pool.Exec(context.Background(), `
INSERT INTO rfqdesk_snapshot (log, seq, epoch, data)
SELECT name, $2, epoch, $4 FROM rfqdesk_log WHERE name = $1 AND epoch = $3 AND head >= $2
ON CONFLICT (log, seq) DO UPDATE SET data = EXCLUDED.data, epoch = EXCLUDED.epoch`,
		l.name, int64(seq), int64(epoch), data)
	if err != nil {
		return fmt.Errorf("pglog: save snapshot at %d of log %q: %w", seq, l.name, err)
	}
	if tag.RowsAffected() == 0 {
		err := fmt.Errorf("pglog: save snapshot at %d of log %q under epoch %d: %w", seq, l.name, epoch, journal.ErrFenced)
		l.noteFenced(err)
		return err
	}
	return nil
}

// LoadSnapshot implements journal.Log: the newest snapshot the log still covers.
func (l *Log) LoadSnapshot() (uint64, []byte, bool, error) {
	ctx := context.Background()
	var seq uint64
	var data []byte
	var found bool
	err := pgx.BeginTxFunc(ctx, l.s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var head, first int64
		if err := tx.QueryRow(ctx, `SELECT head, first_seq FROM rfqdesk_log WHERE name = $1`, l.name).Scan(&head, &first); err != nil {
			return fmt.Errorf("pglog: read the head of log %q: %w", l.name, err)
		}
		var s int64
		err := tx.QueryRow(ctx, `SELECT seq, data FROM rfqdesk_snapshot WHERE log = $1 ORDER BY seq DESC LIMIT 1`, l.name).Scan(&s, &data)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if first > 1 {
				return fmt.Errorf("%w: log %q starts at record %d and has no snapshot", journal.ErrNoSnapshot, l.name, first)
			}
			return nil
		case err != nil:
			return fmt.Errorf("pglog: load the snapshot of log %q: %w", l.name, err)
		case s > head:
			return fmt.Errorf("%w: log %q has a snapshot at %d beyond its head %d", journal.ErrCorrupt, l.name, s, head)
		case s+1 < first:
			return fmt.Errorf("%w: log %q starts at record %d after its newest snapshot %d", journal.ErrNoSnapshot, l.name, first, s)
		}
		if int64(len(data)) > l.maxSnapshot() {
			return fmt.Errorf("pglog: snapshot of log %q is %d bytes, over the maximum of %d", l.name, len(data), l.maxSnapshot())
		}
		seq, found = uint64(s), true
		return nil
	})
	if err != nil {
		return 0, nil, false, err
	}
	return seq, data, found, nil
}

// Prune implements journal.Log: in one transaction, under the writer's epoch, it keeps
// the newest KeepSnapshots snapshots and deletes the records the oldest of them covers.
func (l *Log) Prune() error {
	keep := l.s.opts.KeepSnapshots
	if keep <= 0 {
		keep = journal.DefaultKeepSnapshots
	}
	epoch := l.Epoch()
	ctx := context.Background()
	var first uint64
	err := pgx.BeginFunc(ctx, l.s.pool, func(tx pgx.Tx) error {
		var e, f int64
		if err := tx.QueryRow(ctx, `SELECT epoch, first_seq FROM rfqdesk_log WHERE name = $1`, l.name).Scan(&e, &f); err != nil {
			return err
		}
		first = uint64(f)
		if epoch == 0 || uint64(e) != epoch {
			return fmt.Errorf("pglog: prune log %q under epoch %d, it is at epoch %d: %w", l.name, epoch, e, journal.ErrFenced)
		}
		rows, err := tx.Query(ctx, `SELECT seq FROM rfqdesk_snapshot WHERE log = $1 ORDER BY seq DESC LIMIT $2`, l.name, keep)
		if err != nil {
			return err
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(seqs) < keep {
			return nil
		}
		oldest := seqs[len(seqs)-1]
		if _, err := tx.Exec(ctx, `DELETE FROM rfqdesk_snapshot WHERE log = $1 AND seq < $2`, l.name, oldest); err != nil {
			return err
		}
		if oldest+1 <= f {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rfqdesk_record WHERE log = $1 AND seq <= $2`, l.name, oldest); err != nil {
			return err
		}
		// The row is locked only here, at the end, so appends wait for the commit alone;
		// a take over meanwhile leaves the epoch changed, and the prune is undone.
		tag, err := tx.Exec(ctx, `UPDATE rfqdesk_log SET first_seq = $2 WHERE name = $1 AND epoch = $3`, l.name, oldest+1, int64(epoch))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("pglog: prune log %q under epoch %d, it was taken over: %w", l.name, epoch, journal.ErrFenced)
		}
		first = uint64(oldest + 1)
		return nil
	})
	if err != nil {
		if errors.Is(err, journal.ErrFenced) {
			l.noteFenced(err)
			return err
		}
		return fmt.Errorf("pglog: prune log %q: %w", l.name, err)
	}
	l.mu.Lock()
	l.first = first
	l.mu.Unlock()
	return nil
}

// Close implements journal.Log: it writes what is queued (a writer), ends every Follow
// and releases the handle. The Store stays open.
func (l *Log) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closing = true
		writing := l.writing
		l.wake.Broadcast()
		close(l.space)
		l.space = make(chan struct{})
		l.mu.Unlock()
		if writing {
			<-l.stopped
		}
		close(l.closed)
		l.mu.Lock()
		if l.failed != nil && !errors.Is(l.failed, journal.ErrFenced) {
			err = l.failed
		}
		l.mu.Unlock()
	})
	return err
}

// noteFenced tells Options.OnFenced, once, when err says the log was taken over.
func (l *Log) noteFenced(err error) {
	if f := l.s.opts.OnFenced; f != nil && errors.Is(err, journal.ErrFenced) {
		l.fenceOnce.Do(func() { f(l.name, err) })
	}
}
