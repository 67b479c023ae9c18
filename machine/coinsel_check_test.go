package machine

import "testing"

// TestCoinSelectionProblemNamesSharedHoldings: two live prepared transactions naming one
// holding (two actions; an action and a funding quote's allocation; one list naming a
// holding twice) are reported, naming the first pair in prepared-id order, and disjoint
// ones are not: mayShareInputs lets the sorted walk be skipped only when nothing repeats.
func TestCoinSelectionProblemNamesSharedHoldings(t *testing.T) {
	action := func(id, prepared string, inputs ...string) *Action {
		return &Action{ID: id, Party: "p", PreparedID: prepared, Inputs: inputs}
	}
	funding := func(d *Desk, prepared string, inputs ...string) {
		d.Quotes = map[string]*Quote{"q1": {ID: "q1", State: QuoteFunding, Allocations: []AllocationRef{{PreparedID: prepared, Inputs: inputs}}}}
		d.Held = map[uint64]*HeldReply{1: {Seq: 1, Kind: contQuotePrepare, Entity: "q1"}}
	}
	for _, c := range []struct {
		name string
		set  func(d *Desk)
		want string
	}{
		{"disjoint", func(d *Desk) {
			d.Actions = map[string]*Action{"a1": action("a1", "p1", "h1", "h2"), "a2": action("a2", "p2", "h3")}
			funding(d, "p3", "h4")
		}, ""},
		{"two actions", func(d *Desk) {
			d.Actions = map[string]*Action{"a1": action("a1", "p2", "h1", "h2"), "a2": action("a2", "p1", "h2")}
		}, "holding h2 named by the live prepared transactions p1 and p2"},
		{"an action and a funding quote", func(d *Desk) {
			d.Actions = map[string]*Action{"a1": action("a1", "p1", "h1")}
			funding(d, "p0", "h9", "h1")
		}, "holding h1 named by the live prepared transactions p0 and p1"},
		{"one list twice", func(d *Desk) {
			d.Actions = map[string]*Action{"a1": action("a1", "p1", "h1", "h1")}
		}, "holding h1 named by the live prepared transactions p1 and p1"},
	} {
		d := &Desk{}
		c.set(d)
		if got := d.CoinSelectionProblem(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if got, want := d.mayShareInputs(), c.want != ""; got != want {
			t.Errorf("%s: mayShareInputs %v, want %v", c.name, got, want)
		}
	}
}
