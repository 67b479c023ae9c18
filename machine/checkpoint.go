package machine

// Checkpoint records, in the journal, the digest the desk had just before it: a replay
// that reaches it compares its own digest and so finds the first input where two runs
// diverged. Applying it changes nothing but the desk's time.
type Checkpoint struct {
	Digest string `json:"digest"` // hex SHA-256 of the state, as Desk.Digest
}

// Kind names the input in the journal.
func (Checkpoint) Kind() string { return "checkpoint" }

// CheckpointMark asks for a checkpoint of the state the desk had just before it, without
// computing it: the live loop's follower (a second desk that applies the same journaled
// inputs on a goroutine of its own) encodes that state, saves it as a snapshot and hands
// back its digest, which the loop journals later as a CheckpointDigest naming this mark.
// So the loop never stops to encode the whole state. A replay that reaches a mark digests
// its own state there and compares when the CheckpointDigest arrives; a mark whose digest
// never came (the desk stopped first) verifies nothing. Applying it changes nothing but
// the desk's time.
type CheckpointMark struct{}

// Kind names the input in the journal.
func (CheckpointMark) Kind() string { return "checkpoint.mark" }

// CheckpointDigest records the digest of the state just before the CheckpointMark whose
// sequence number is Mark (hex SHA-256, as Desk.Digest). Applying it changes nothing but
// the desk's time.
type CheckpointDigest struct {
	Mark   uint64 `json:"mark"`
	Digest string `json:"digest"`
}

// Kind names the input in the journal.
func (CheckpointDigest) Kind() string { return "checkpoint.digest" }

// IsCheckpoint reports whether an input is one of the checkpoint records (Checkpoint,
// CheckpointMark, CheckpointDigest), which do not count toward the next checkpoint.
func IsCheckpoint(in Input) bool {
	switch in.(type) {
	case Checkpoint, CheckpointMark, CheckpointDigest:
		return true
	}
	return false
}
