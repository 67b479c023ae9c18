package sim

import (
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
		s, err := New(k)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.Run(); r.Failure != nil {
			t.Fatalf("%s: %v", faults, r.Failure)
		}
		if s.stats.OrphansInDoubt != 0 {
			t.Logf("%s: %d allocations left in doubt", faults, s.stats.OrphansInDoubt)
		}
	}
}
