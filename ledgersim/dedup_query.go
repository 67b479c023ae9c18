package ledgersim

// PreparedResult returns the update of a prepared transaction that took effect, while the
// update is retained: the counterpart of CommandResult for an execute, an oracle for tests
// and the simulator's checks (a client reads Completions, as on Canton).
func (l *Ledger) PreparedResult(preparedID string) (Update, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	seq, ok := l.st.updates.byPreparedID(preparedID)
	if !ok {
		return Update{}, false
	}
	return l.st.updates.update(seq), true
}

// DedupShortened counts the updates this ledger forgot (since it was built or restored)
// because Limits.MaxRetainedUpdates were retained, while they were still within the
// deduplication window: each shortened the window for its command id. Zero means the
// window held for every command.
func (l *Ledger) DedupShortened() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.st.dedupShortened
}

// RetainedUpdates is how many committed updates the ledger retains for Update() and
// deduplication: bounded by Config.DedupWindow and Limits.MaxRetainedUpdates.
func (l *Ledger) RetainedUpdates() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.st.updates.len()
}
