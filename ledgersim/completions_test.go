package ledgersim

import (
	"errors"
	"testing"
	"time"
)

// TestDedupByChangeID follows Canton's command deduplication (docs "Command
// deduplication" of the Ledger API, and ChangeId in digital-asset/canton's
// ledger-common participant state): the key is (user, act-as parties, command id), so the
// same command id sent by two parties is two commands; a repeat by the same party is
// refused DUPLICATE_COMMAND naming the earlier submission, not its update.
func TestDedupByChangeID(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	e.fund(e.house, "USDCx", "10")
	cmd := Transfer{Receiver: e.op, Instrument: "USDCx", Amount: d("1")}
	a, err := e.submit(e.res, cmd, "same-id")
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.submit(e.house, cmd, "same-id")
	if err != nil {
		t.Fatalf("the same command id of another party was refused: %v", err)
	}
	if a.UpdateID == b.UpdateID {
		t.Fatal("two parties' commands share an update")
	}
	_, err = e.submit(e.house, cmd, "same-id")
	wantCat(t, err, CategoryDuplicate)
	var dup *Error
	if !errors.As(err, &dup) || dup.UpdateID != "" || dup.SubmissionID == "" {
		t.Fatalf("the refusal names the submission, not the update: %#v", err)
	}
	if cs, _ := e.l.Completions(e.house, b.Offset-1, 0); len(cs) == 0 || cs[0].SubmissionID != dup.SubmissionID || cs[0].UpdateID != b.UpdateID {
		t.Fatalf("the house's completions %+v do not name the refused repeat's submission %s", cs, dup.SubmissionID)
	}
	e.check()
}

// TestCompletions follows Canton's command completion stream
// (CommandCompletionService.CompletionStream: a party's completions after an exclusive
// begin offset, in offset order; below the pruning offset PARTICIPANT_PRUNED_DATA_ACCESSED,
// beyond the ledger end OFFSET_AFTER_LEDGER_END, which ledgersim answers as invalid).
func TestCompletions(t *testing.T) {
	e := newEnvTuned(t, ProfileTestnet, func(c *Config) { c.Limits.MaxRetainedUpdates = 4 })
	start := e.l.Offset()
	var ids []string
	for i := range 6 {
		id := "t" + string(rune('0'+i))
		u, err := e.submit(e.res, Transfer{Receiver: e.house, Instrument: "USDCx", Amount: d("1")}, id)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.UpdateID)
		e.clk.Advance(time.Second)
	}
	end := e.l.Offset()
	if end != start+6 {
		t.Fatalf("end %d, want %d", end, start+6)
	}
	// Only the last 4 are retained: the pruning offset is end-4.
	if p := e.l.PruningOffset(); p != end-4 {
		t.Fatalf("pruning offset %d, want %d", p, end-4)
	}
	_, err := e.l.Completions(e.res, end-5, 0)
	wantCat(t, err, CategoryNotFound)
	_, err = e.l.Completions(e.res, end+1, 0)
	wantCat(t, err, CategoryInvalid)
	cs, err := e.l.Completions(e.res, end-4, 0)
	if err != nil || len(cs) != 4 {
		t.Fatalf("completions from the pruning offset: %v %v", cs, err)
	}
	for i, c := range cs {
		if c.Offset != end-3+int64(i) || c.UpdateID != ids[2+i] || c.ActAs != e.res {
			t.Fatalf("completion %d: %+v", i, c)
		}
	}
	// Paging: at most max, continued from the last offset.
	page, _ := e.l.Completions(e.res, end-4, 3)
	rest, _ := e.l.Completions(e.res, page[len(page)-1].Offset, 3)
	if len(page) != 3 || len(rest) != 1 || rest[0].UpdateID != ids[5] {
		t.Fatalf("pages %v then %v", page, rest)
	}
	// Another party's commands are not in the stream.
	if cs, _ := e.l.Completions(e.house, end-4, 0); len(cs) != 0 {
		t.Fatalf("the house sees the reservoir's completions %v", cs)
	}
	if cs, _ := e.l.Completions(e.res, end, 0); len(cs) != 0 {
		t.Fatalf("completions from the end %v", cs)
	}
}
