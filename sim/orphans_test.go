package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
)

// stepUntil runs a fresh simulation step by step until cond holds (or the busy phase ends).
func stepUntil(t *testing.T, k Knobs, cond func(s *Sim) bool) *Sim {
	t.Helper()
	s := started(t, k)
	for s.failure == nil && !s.liveness {
		e, ok := s.next()
		if !ok {
			break
		}
		e.fn()
		s.steps++
		s.afterStep()
		if cond(s) {
			return s
		}
	}
	if s.failure != nil {
		t.Fatalf("the run failed before the situation: %v", s.failure)
	}
	t.Fatal("the situation never came")
	return nil
}

// liveQuoteWithAllocation finds a live quote whose allocations all landed.
func liveQuoteWithAllocation(s *Sim) *machine.Quote {
	for _, id := range s.orphans.order {
		a := s.orphans.allocs[id]
		if a == nil {
			continue
		}
		if q := s.desk.Quotes[a.settlement]; q != nil && q.State == machine.QuoteLive && q.Anchored {
			return q
		}
	}
	return nil
}

// TestOrphanInvariantHasTeeth: a desk that forgets a landed allocation (the quote keeps no
// cid for the leg, or marks it cancelled without sending the cancel) fails the next check
// with an orphan violation naming the allocation.
func TestOrphanInvariantHasTeeth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		forget func(al *machine.AllocationRef)
		want   string
	}{
		{"forgotten allocation", func(al *machine.AllocationRef) { al.CID = "" }, "has not recorded it"},
		{"forgotten cancel", func(al *machine.AllocationRef) { al.Cancelled = true }, "marked it cancelled with no cancel in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stepUntil(t, knobs(3, "none", 0), func(s *Sim) bool { return liveQuoteWithAllocation(s) != nil })
			q := liveQuoteWithAllocation(s)
			if s.checkOrphans(true); s.failure != nil {
				t.Fatalf("the invariant fails before the desk forgot anything: %v", s.failure)
			}
			al := &q.Allocations[0]
			cid := al.CID
			tc.forget(al)
			s.checkOrphans(true)
			if s.failure == nil {
				t.Fatalf("allocation %s of quote %s forgotten by the desk, and the orphan invariant saw nothing", cid, q.ID)
			}
			if msg := s.failure.Message; !strings.HasPrefix(msg, "orphan: allocation "+cid) || !strings.Contains(msg, tc.want) {
				t.Fatalf("wrong violation: %s", msg)
			}
		})
	}
}

// TestOrphanInvariantLockWithoutAllocation: a holding still locked for an allocation the
// ledger archived is an orphan lock.
func TestOrphanInvariantLockWithoutAllocation(t *testing.T) {
	s := stepUntil(t, knobs(3, "none", 0), func(s *Sim) bool {
		for _, a := range s.orphans.allocs {
			if _, ok := s.orphans.locks[a.locked]; ok && a.locked != "" {
				return true
			}
		}
		return false
	})
	for _, id := range s.orphans.order {
		a := s.orphans.allocs[id]
		if a == nil || a.locked == "" {
			continue
		}
		if _, ok := s.orphans.locks[a.locked]; !ok {
			continue
		}
		// What an update that archives the allocation but keeps its lock leaves behind.
		delete(s.orphans.allocs, id)
		s.orphans.archivedAllocs = append(s.orphans.archivedAllocs[:0], a)
		s.orphans.updates = s.orphans.updates[:0]
		s.checkLocksOfArchived()
		if s.failure == nil || !strings.Contains(s.failure.Message, "is still locked for it") {
			t.Fatalf("a lock outliving its allocation %s was not reported: %v", id, s.failure)
		}
		return
	}
	t.Fatal("no locked allocation found")
}

// TestOrphanInvariantQuiet: clean runs (no faults, faults with no crash) meet no orphan and
// end with none on the ledger.
func TestOrphanInvariantQuiet(t *testing.T) {
	for _, faults := range []string{"none", "harsh"} {
		k := knobs(5, faults, 0)
		s := newSim(t, k)
		runSim(t, s, k)
		if s.stats.OrphansInDoubt != 0 {
			t.Logf("%s: %d allocations left in doubt", faults, s.stats.OrphansInDoubt)
		}
	}
}

// TestOrphanExplainedByAnExecuteOfAForgottenQuote: an allocation made by an execute whose
// answer the desk has not had yet is the desk's, even once the quote it funded ended and
// was forgotten (make sim seed 65: the answer was lost, the quote's retention ran out, and
// after a restart the re-issued execute was still out): the ledger's prepared transaction
// says which allocation the execute makes. Without that pending execute it is an orphan.
func TestOrphanExplainedByAnExecuteOfAForgottenQuote(t *testing.T) {
	var q *machine.Quote
	prepared := map[string]string{} // allocation cid → the prepared transaction that made it
	s := stepUntil(t, knobs(3, "none", 0), func(s *Sim) bool {
		if q = liveQuoteWithAllocation(s); q == nil {
			return false
		}
		clear(prepared)
		for _, al := range q.Allocations {
			// A maker that signs itself: each allocation's update is its prepared
			// transaction's execute, under the prepare's command id.
			u, ok := s.ledger.L.CommandResult(al.Owner, q.ID+":"+al.LegID+":"+fmt.Sprint(al.Attempt))
			if al.CID == "" || !ok || u.PreparedID == "" || u.Allocation != al.CID {
				return false
			}
			prepared[al.CID] = u.PreparedID
		}
		return true
	})
	if s.checkOrphans(true); s.failure != nil {
		t.Fatalf("the invariant fails before anything changed: %v", s.failure)
	}
	// The quote ended and was forgotten; only the executes of its actions are still out.
	delete(s.desk.Quotes, q.ID)
	s.orphans.gen++ // what a full check does: look the quote up in the desk's map again
	for cid, prep := range prepared {
		id := "act_" + cid[:8] + ":exec:1"
		s.desk.Pending[id] = &machine.Continuation{Kind: machine.ContKind("execute"), Entity: "act_" + cid[:8],
			Call: machine.LedgerCall{CommandID: id, Op: machine.OpExecute, PreparedID: prep}}
	}
	if s.checkOrphans(true); s.failure != nil {
		t.Fatalf("allocations made by the executes still out counted as orphans: %v", s.failure)
	}
	for cid := range prepared {
		delete(s.desk.Pending, "act_"+cid[:8]+":exec:1")
	}
	s.orphans.gen++
	if s.checkOrphans(true); s.failure == nil || !strings.HasPrefix(s.failure.Message, "orphan: allocation ") {
		t.Fatalf("with neither the quote nor a call that makes them, the allocations are no orphans: %v", s.failure)
	}
}
