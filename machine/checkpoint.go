package machine

// Checkpoint records, in the journal, the digest the desk had just before it: a replay
// that reaches it compares its own digest and so finds the first input where two runs
// diverged. Applying it changes nothing but the desk's time.
type Checkpoint struct {
	Digest string `json:"digest"` // hex SHA-256 of the state, as Desk.Digest
	// Scheme names how Digest was computed: empty for Desk.Digest (the binary snapshot),
	// DigestJSON for Desk.LegacyDigest, which every checkpoint of a version-1 journal
	// record carries (DecodeEnvelope sets it).
	Scheme string `json:"scheme,omitempty"`
}

// DigestJSON is the Checkpoint scheme of digests over the state's JSON (Desk.LegacyDigest).
const DigestJSON = "json"

// Kind names the input in the journal.
func (Checkpoint) Kind() string { return "checkpoint" }
