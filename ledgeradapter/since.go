package ledgeradapter

import "github.com/deskco/rfqdesk/machine"

// The completion offset journaled with each call.
//
// Canton's way to learn the outcome of a command whose answer was lost is to read the
// completion stream from an offset recorded before submitting it (the ledger end,
// StateService.GetLedgerEnd, then CommandCompletionService.CompletionStream from it). The
// desk records that offset with each execute and submit it issues (LedgerCall.Since: the
// highest offset its ledger results reported, LedgerResult.Offset, journaled with them and
// kept in its snapshot), so the call it issues again after a restart carries it, and the
// adapter, which remembers nothing across a restart, reads the completions from there
// rather than from the start of the ledger's retained window. The adapter's own note of
// the ledger end before the first attempt it saw (sentOffsets) is tighter for a call it
// has seen; the lower of the two is used. Both are hints: a ledger recovered after losing
// its unsynced tail may number a commit below them, so a miss still reads the whole
// retained window (tookEffect).

// CompletionPages reports how many pages of the completion stream the adapter has read,
// to learn what earlier attempts of its calls did: the cost of recovering outcomes.
func (a *Adapter) CompletionPages() int64 { return a.pages.Load() }

// noteSince returns the offset a completion of call must come after, and whether one was
// recorded before its first attempt: the lower of the desk's (call.Since) and this
// adapter's own note.
func (a *Adapter) noteSince(call machine.LedgerCall) (int64, bool) {
	since, known := a.sent.note(call, a.L)
	if call.Since > 0 && (!known || call.Since < since) {
		since, known = call.Since, true
	}
	return since, known
}
