package machine

import "testing"

// TestFireAllocatesNothing checks that moving an entity through its shared machine costs
// no allocation (the context is reused, states and triggers are boxed from constants).
func TestFireAllocatesNothing(t *testing.T) {
	m := buildMachines()
	x := &Action{State: ActionPending}
	allocs := testing.AllocsPerRun(100, func() {
		if err := m.action.fire(x, TrigExecute); err != nil {
			t.Fatal(err)
		}
		if err := m.action.fire(x, TrigExecuteRejected); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a fire allocates %.1f times, want 0", allocs)
	}
	if x.State != ActionPending {
		t.Errorf("state %s, want %s", x.State, ActionPending)
	}
	if err := m.action.fire(x, TrigWin); err == nil {
		t.Error("an action took the trigger win")
	}
	if m.action.ctx.e != nil {
		t.Error("the reused context still holds the entity after a fire")
	}
}

// TestIllegalTransitionPanics checks that the core cannot ignore a transition its machine
// refuses: must panics and leaves the entity where it was.
func TestIllegalTransitionPanics(t *testing.T) {
	m := buildMachines()
	q := &Quote{State: QuoteSettling}
	defer func() {
		if recover() == nil {
			t.Fatal("anchoring a settling quote did not panic")
		}
		if q.State != QuoteSettling {
			t.Fatalf("state %s after a refused transition, want %s", q.State, QuoteSettling)
		}
	}()
	m.quote.must(q, TrigAnchored)
}
