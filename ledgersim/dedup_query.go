package ledgersim

// PreparedResult returns the update of a prepared transaction that took effect, while the
// update is retained: the counterpart of CommandResult for an execute, which a caller knows
// by its prepared id. A caller that got no answer, or a refusal, for a repeated execute
// uses it to learn that an earlier attempt committed.
func (l *Ledger) PreparedResult(preparedID string) (Update, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	rec, ok := l.st.byPrep[preparedID]
	if !ok {
		return Update{}, false
	}
	return rec.u.clone(), true
}
