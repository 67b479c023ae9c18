package machine

// Checkpoint records, in the journal, the digest the desk had just before it: a replay
// that reaches it compares its own digest and so finds the first input where two runs
// diverged. Applying it changes nothing but the desk's time.
type Checkpoint struct {
	Digest string `json:"digest"` // hex SHA-256 of the state, as Desk.Digest
}

// Kind names the input in the journal.
func (Checkpoint) Kind() string { return "checkpoint" }
