package ledgersim

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Deduplication and completions, as a Canton participant does them.
//
// Canton deduplicates a command on its change id: the submitting user, the act-as parties
// and the command id (digital-asset/canton, the Ledger API's command deduplication:
// docs "Command deduplication", and ChangeId in
// community/ledger/ledger-common/src/main/scala/com/digitalasset/canton/ledger/participant/state/ChangeId.scala),
// within a deduplication period (at most the participant's maximum deduplication
// duration, 7 days by default). A duplicate is refused with DUPLICATE_COMMAND (gRPC
// ALREADY_EXISTS), whose metadata names the earlier submission (existing_submission_id),
// not what it did. A client that lost an answer learns the outcome from the command
// completion stream, read from an offset it recorded before submitting
// (CommandCompletionService.CompletionStream with begin_exclusive); reading below the
// pruning offset fails (PARTICIPANT_PRUNED_DATA_ACCESSED).
//
// Here the desk is the only user, so the change id is (act-as party, command id); the
// retained updates (bounded by Config.DedupWindow and Limits.MaxRetainedUpdates) are both
// the deduplication window and the completion stream's.

// Completion is the outcome of one command that took effect, as the completion stream
// reports it.
type Completion struct {
	// Offset is the update's offset.
	Offset       int64
	CommandID    string
	ActAs        string
	SubmissionID string
	UpdateID     string
	RecordTime   time.Time
}

// MaxCompletionsPage bounds one Completions answer.
const MaxCompletionsPage = 1000

// dedupKey is the change id of a command: its acting party and its command id.
func dedupKey(actAs, commandID string) string { return actAs + "\x00" + commandID }

// submissionID names the submission that made u. On Canton the submitter chooses a
// submission id and the completion echoes it; the desk's is the prepared transaction's id
// for an execute and the command id for a submit, so that a repeated call finds its own
// completion by what it sent.
func submissionID(u *Update) string {
	if u.PreparedID != "" {
		return u.PreparedID
	}
	return u.CommandID
}

// duplicate is the refusal of a command whose change id already took effect in u.
func duplicate(u *Update) error {
	return &Error{Category: CategoryDuplicate, SubmissionID: submissionID(u),
		Msg: fmt.Sprintf("command %q of %s was already submitted as %s", u.CommandID, truncate(u.ActAs), submissionID(u))}
}

// Completions returns the completions of actAs's commands with an offset above from, in
// offset order, at most max (capped at MaxCompletionsPage; a caller pages on with the
// last offset it got). from below the oldest retained update is refused as pruned
// (CategoryNotFound), from beyond the ledger's end as invalid.
func (l *Ledger) Completions(actAs string, from int64, max int) ([]Completion, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := l.st
	if from < 0 || from > st.offset {
		return nil, newErr(CategoryInvalid, "completions", "offset %d is outside the ledger (its end is %d)", from, st.offset)
	}
	items, first := st.updates.live()
	if len(items) > 0 && from < items[0].offset-1 {
		return nil, newErr(CategoryNotFound, "completions", "offset %d is pruned: the oldest retained update is at %d", from, items[0].offset)
	}
	if len(items) == 0 && from < st.offset {
		return nil, newErr(CategoryNotFound, "completions", "offset %d is pruned: no update is retained", from)
	}
	if max <= 0 || max > MaxCompletionsPage {
		max = MaxCompletionsPage
	}
	var out []Completion
	for i := sort.Search(len(items), func(i int) bool { return items[i].offset > from }); i < len(items) && len(out) < max; i++ {
		if st.updates.syms[items[i].actAs] != actAs {
			continue
		}
		u := st.updates.keys(first + uint64(i))
		out = append(out, Completion{Offset: u.Offset, CommandID: u.CommandID, ActAs: u.ActAs,
			SubmissionID: submissionID(&u), UpdateID: u.UpdateID, RecordTime: u.RecordTime})
	}
	return out, nil
}

// PruningOffset is the offset from which Completions can read: the one before the oldest
// retained update (the ledger's end when none is retained).
func (l *Ledger) PruningOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.st.updates.len() == 0 {
		return l.st.offset
	}
	return l.st.updates.oldest().offset - 1
}

// DuplicateOf reports whether err refused a command as a duplicate, and the earlier
// submission it names.
func DuplicateOf(err error) (submission string, ok bool) {
	var e *Error
	if errors.As(err, &e) && e.Category == CategoryDuplicate {
		return e.SubmissionID, true
	}
	return "", false
}
