package ledgeradapter

import (
	"sync"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// maxSentOffsets bounds the calls whose first offset the adapter remembers; past it the
// oldest are forgotten and a repeat of one reads the completions from the ledger's
// pruning offset instead (the whole retained window, bounded by the ledger's retention).
const maxSentOffsets = 20_000

// sentOffsets remembers, per submission, the ledger's end before its first attempt: a
// completion of it can only come after that offset. Repeats of a call (the adapter's own
// retries, the desk's re-sends of a call whose outcome was unknown) read from there. The
// memory is the process's: after a restart a re-issued call reads from the pruning offset.
//
// It is keyed by the party and submission as a pair, not by one string joining them, and
// it forgets in the order noted through a ring of fixed size, so noting a submission
// allocates nothing beyond the map's own growth (before: the joined key, and an order
// slice that grew and was copied down): loop BenchmarkLifecycle/desk makes 6 allocations
// fewer a lifecycle, 427 instead of 433 (docs/performance.md, "The lifecycle's
// allocations in the machine and the adapter").
type sentOffsets struct {
	mu    sync.Mutex
	limit int // the most remembered; maxSentOffsets when 0
	at    map[sentKey]int64
	ring  []sentKey // the remembered submissions in the order noted, oldest at head
	head  int
}

// sentKey names a submission of a party.
type sentKey struct{ actAs, sub string }

// note returns the offset a completion of call must come after, and whether an earlier
// attempt was noted; for a submission seen for the first time it remembers the ledger's
// current end.
func (s *sentOffsets) note(call machine.LedgerCall, l *ledgersim.Ledger) (int64, bool) {
	sub, ok := submissionOf(call)
	if !ok {
		return 0, false
	}
	return s.noteKey(sentKey{call.ActAs, sub}, l.Offset)
}

// noteKey is note for key, reading the ledger's end through end only for a key not seen.
func (s *sentOffsets) noteKey(key sentKey, end func() int64) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if off, seen := s.at[key]; seen {
		return off, true
	}
	limit := s.limit
	if limit <= 0 {
		limit = maxSentOffsets
	}
	if s.at == nil {
		s.at = map[sentKey]int64{}
	}
	off := end()
	if len(s.ring) < limit {
		s.ring = append(s.ring, key)
	} else {
		// Full: the oldest noted makes room.
		delete(s.at, s.ring[s.head])
		s.ring[s.head] = key
		s.head = (s.head + 1) % limit
	}
	s.at[key] = off
	return off, false
}

// submissionOf is the submission id the completion of call carries: the prepared
// transaction's id for an execute, the command id for a submit. Other calls (prepare,
// onboarding) take no effect that a completion reports.
func submissionOf(call machine.LedgerCall) (string, bool) {
	switch call.Op {
	case machine.OpExecute:
		return call.PreparedID, call.PreparedID != ""
	case machine.OpSubmit:
		return call.CommandID, call.CommandID != ""
	}
	return "", false
}

// completed reads actAs's completions after since (at the least the ledger's pruning
// offset) for the submission, and returns the update it made.
func (a *Adapter) completed(actAs, submission string, since int64) (ledgersim.Update, bool) {
	from := max(since, a.L.PruningOffset())
	for pruned := 0; ; {
		a.pages.Add(1)
		page, err := a.L.Completions(actAs, from, ledgersim.MaxCompletionsPage)
		if ledgersim.CategoryOf(err) == ledgersim.CategoryNotFound && pruned < 3 {
			// A commit pruned the window's oldest since the pruning offset was read:
			// what is below the new one is gone anyway.
			pruned++
			from = max(from, a.L.PruningOffset())
			continue
		}
		if err != nil {
			return ledgersim.Update{}, false
		}
		for _, c := range page {
			if c.SubmissionID == submission {
				u, err := a.L.Update(c.UpdateID)
				return u, err == nil
			}
		}
		if len(page) < ledgersim.MaxCompletionsPage {
			return ledgersim.Update{}, false
		}
		from = page[len(page)-1].Offset
	}
}
