package journal

import (
	"context"
	"fmt"
	"sync"
)

// MemLog is a Log held in memory, for simulations and tests that crash a desk without
// touching a disk. Durability is explicit: records appended with AppendAsync become
// durable only when Sync (or a synchronous Append) is called, or at once with autoSync, and
// Crash forgets every record that was not, as a
// power cut forgets what was not fsynced. The records and snapshots survive a Crash; a new
// desk reads them as a restarted process reads its files.
type MemLog struct {
	mu        sync.Mutex
	autoSync  bool
	first     uint64 // sequence number of records[0]
	records   [][]byte
	durable   uint64 // last durable sequence number
	waiting   []memPending
	snapshots []memSnapshot // oldest first
	closed    bool
	// epoch is the log's epoch, raised by a MemHandle's TakeOver (memshared.go); the
	// MemLog's own methods write as the current writer, whatever the epoch.
	epoch uint64
	// advanced is closed (and replaced) whenever the durable point moves or the log
	// closes: Follow waits on it.
	advanced chan struct{}
}

type memPending struct {
	last     uint64
	complete func(error)
}

type memSnapshot struct {
	seq  uint64
	data []byte
}

// NewMemLog returns an empty log; with autoSync every append is durable at once.
func NewMemLog(autoSync bool) *MemLog {
	return &MemLog{autoSync: autoSync, first: 1, advanced: make(chan struct{})}
}

// Append writes records and makes them durable, as a write followed by an fsync would:
// everything appended before them becomes durable too.
func (m *MemLog) Append(ctx context.Context, records ...[]byte) (uint64, error) {
	p := m.AppendAsync(records...)
	m.Sync()
	return p.Wait(ctx)
}

// AppendAsync enqueues records; they are durable at the next Sync (at once with autoSync).
func (m *MemLog) AppendAsync(records ...[]byte) *Pending {
	return m.appendIf(nil, records)
}

// appendIf appends records if check (run under the lock) allows it.
func (m *MemLog) appendIf(check func() error, records [][]byte) *Pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	if check != nil {
		if err := check(); err != nil {
			return CompletedPending(err)
		}
	}
	first := m.lastLocked() + 1
	last := first + uint64(len(records)) - 1
	p, complete := NewPending(first, last)
	if m.closed {
		complete(ErrClosed)
		return p
	}
	for _, r := range records {
		m.records = append(m.records, append([]byte(nil), r...))
	}
	m.waiting = append(m.waiting, memPending{last: last, complete: complete})
	if m.autoSync {
		m.syncLocked()
	}
	return p
}

func (m *MemLog) lastLocked() uint64 { return m.first + uint64(len(m.records)) - 1 }

// Sync makes every record appended so far durable and completes their appends.
func (m *MemLog) Sync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncLocked()
}

func (m *MemLog) syncLocked() {
	m.durable = m.lastLocked()
	for _, w := range m.waiting {
		w.complete(nil)
	}
	m.waiting = nil
	close(m.advanced)
	m.advanced = make(chan struct{})
}

// Crash forgets every record that is not durable; their appends fail with ErrClosed. The
// log stays usable, as the files are after a restart.
func (m *MemLog) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if keep := int(m.durable + 1 - m.first); keep < len(m.records) {
		m.records = m.records[:keep]
	}
	for _, w := range m.waiting {
		w.complete(ErrClosed)
	}
	m.waiting = nil
	m.closed = false
}

// ReadFrom calls fn for every durable record from seq on.
func (m *MemLog) ReadFrom(seq uint64, fn func(seq uint64, rec []byte) error) error {
	m.mu.Lock()
	if seq == 0 {
		seq = 1
	}
	if seq < m.first {
		m.mu.Unlock()
		return fmt.Errorf("read from %d: %w", seq, ErrPruned)
	}
	durable, first := m.durable, m.first
	recs := m.records
	m.mu.Unlock()
	for s := seq; s <= durable; s++ {
		if err := fn(s, recs[s-first]); err != nil {
			return err
		}
	}
	return nil
}

// FirstSeq is the first record the log holds.
func (m *MemLog) FirstSeq() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.first
}

// LastSeq is the last record appended, durable or not.
func (m *MemLog) LastSeq() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastLocked()
}

// SaveSnapshot stores data as the state after seq, once seq is durable.
func (m *MemLog) SaveSnapshot(seq uint64, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq > m.durable {
		return fmt.Errorf("snapshot at %d is ahead of the durable log (%d)", seq, m.durable)
	}
	m.snapshots = append(m.snapshots, memSnapshot{seq: seq, data: append([]byte(nil), data...)})
	return nil
}

// LoadSnapshot returns the newest snapshot.
func (m *MemLog) LoadSnapshot() (uint64, []byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.snapshots) == 0 {
		return 0, nil, false, nil
	}
	s := m.snapshots[len(m.snapshots)-1]
	return s.seq, append([]byte(nil), s.data...), true, nil
}

// Prune keeps the newest DefaultKeepSnapshots snapshots and drops the records the oldest
// of them covers.
func (m *MemLog) Prune() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.snapshots) > DefaultKeepSnapshots {
		m.snapshots = append([]memSnapshot(nil), m.snapshots[len(m.snapshots)-DefaultKeepSnapshots:]...)
	}
	if len(m.snapshots) < DefaultKeepSnapshots {
		return nil
	}
	upTo := m.snapshots[0].seq
	if drop := int(upTo + 1 - m.first); drop > 0 && drop <= len(m.records) {
		m.records = append([][]byte(nil), m.records[drop:]...)
		m.first = upTo + 1
	}
	return nil
}

// Close makes what is queued durable and refuses further appends.
func (m *MemLog) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncLocked()
	m.closed = true
	return nil
}

var _ Log = (*MemLog)(nil)
