package journal

import (
	"context"
	"fmt"
	"sync"
)

// MemHandle is a writer's or a follower's handle on a MemLog: a journal.Shared in
// memory, for simulations and tests of a takeover. Handles share the MemLog's records
// and snapshots; each appends under its own epoch, and only while that epoch is the
// log's (TakeOver raises it), so a handle taken over from (a zombie) has every later
// append, snapshot and prune refused with ErrFenced. A handle opens following (epoch 0).
// Durability is the MemLog's: Sync, or autoSync.
type MemHandle struct {
	m      *MemLog
	mu     sync.Mutex
	epoch  uint64
	closed chan struct{}
	once   sync.Once
}

var _ Shared = (*MemHandle)(nil)

// Handle returns a new handle on m that follows it (epoch 0).
func (m *MemLog) Handle() *MemHandle { return &MemHandle{m: m, closed: make(chan struct{})} }

// Epoch is the log's epoch (0 until a handle took it over).
func (m *MemLog) Epoch() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

// Epoch implements Shared.
func (h *MemHandle) Epoch() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.epoch
}

// TakeOver implements Shared: the log's epoch goes up by one and becomes this handle's.
// Records appended and not yet durable stay queued (Sync makes them durable): a fenced
// writer's unsynced records are dropped by Crash, as a process's are.
func (h *MemHandle) TakeOver(context.Context) (uint64, error) {
	if h.isClosed() {
		return 0, ErrClosed
	}
	h.m.mu.Lock()
	h.m.epoch++
	e := h.m.epoch
	h.m.mu.Unlock()
	h.mu.Lock()
	h.epoch = e
	h.mu.Unlock()
	return e, nil
}

func (h *MemHandle) isClosed() bool {
	select {
	case <-h.closed:
		return true
	default:
		return false
	}
}

// check refuses a write of a closed, following or fenced handle; m.mu is held.
func (h *MemHandle) check(what string) error {
	if h.isClosed() {
		return ErrClosed
	}
	h.mu.Lock()
	e := h.epoch
	h.mu.Unlock()
	switch {
	case e == 0:
		return fmt.Errorf("journal: %s by a handle that follows: %w", what, ErrFenced)
	case e != h.m.epoch:
		return fmt.Errorf("journal: %s under epoch %d, the log is at epoch %d: %w", what, e, h.m.epoch, ErrFenced)
	}
	return nil
}

// Append implements Log.
func (h *MemHandle) Append(ctx context.Context, records ...[]byte) (uint64, error) {
	if len(records) == 0 {
		return h.LastSeq(), nil
	}
	p := h.AppendAsync(records...)
	if h.m.autoSync {
		return p.Wait(ctx)
	}
	if p.Err() == nil {
		h.m.Sync()
	}
	return p.Wait(ctx)
}

// AppendAsync implements Log.
func (h *MemHandle) AppendAsync(records ...[]byte) *Pending {
	if len(records) == 0 {
		return CompletedPending(nil)
	}
	return h.m.appendIf(func() error { return h.check("append") }, records)
}

// ReadFrom implements Log.
func (h *MemHandle) ReadFrom(seq uint64, fn func(seq uint64, rec []byte) error) error {
	if h.isClosed() {
		return ErrClosed
	}
	return h.m.ReadFrom(seq, fn)
}

// FirstSeq implements Log.
func (h *MemHandle) FirstSeq() uint64 { return h.m.FirstSeq() }

// LastSeq implements Log.
func (h *MemHandle) LastSeq() uint64 { return h.m.LastSeq() }

// SaveSnapshot implements Log.
func (h *MemHandle) SaveSnapshot(seq uint64, data []byte) error {
	h.m.mu.Lock()
	err := h.check("snapshot")
	h.m.mu.Unlock()
	if err != nil {
		return err
	}
	return h.m.SaveSnapshot(seq, data)
}

// LoadSnapshot implements Log.
func (h *MemHandle) LoadSnapshot() (uint64, []byte, bool, error) { return h.m.LoadSnapshot() }

// Prune implements Log.
func (h *MemHandle) Prune() error {
	h.m.mu.Lock()
	err := h.check("prune")
	h.m.mu.Unlock()
	if err != nil {
		return err
	}
	return h.m.Prune()
}

// Close implements Log: it closes this handle (the MemLog stays open).
func (h *MemHandle) Close() error {
	h.once.Do(func() { close(h.closed) })
	return nil
}

// Follow implements Shared.
func (h *MemHandle) Follow(ctx context.Context, seq uint64, fn func(seq uint64, rec []byte) error) error {
	return follow(ctx, seq, fn, h.ReadFrom, func() followState {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return followState{durable: h.m.durable, advanced: h.m.advanced, closed: h.closed}
	})
}
