package ledgersim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// TestHoldingSetProperty checks the holding set (sorted array plus unsorted tail)
// against a plain sorted slice: after any sequence of adds, repeated inserts, removes
// and merges it holds the same holdings in the same order.
func TestHoldingSetProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s holdingSet
		var model []*Holding
		next := 0
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				next++
				amt := money.FromInt(int64(rapid.IntRange(1, 8).Draw(t, "amount")))
				h := &Holding{CID: fmt.Sprintf("%08d", rapid.IntRange(0, 1<<20).Draw(t, "cid")*100+next%100), Amount: amt}
				if slices.ContainsFunc(model, func(m *Holding) bool { return m.CID == h.CID }) {
					t.Skip("duplicate id")
				}
				s.add(h)
				model = append(model, h)
			},
			"insert existing": func(t *rapid.T) {
				if len(model) == 0 {
					t.Skip("empty")
				}
				s.insert(rapid.SampledFrom(model).Draw(t, "h"))
			},
			"remove": func(t *rapid.T) {
				if len(model) == 0 {
					t.Skip("empty")
				}
				h := rapid.SampledFrom(model).Draw(t, "h")
				s.remove(h)
				model = slices.DeleteFunc(model, func(m *Holding) bool { return m == h })
			},
			"ordered": func(t *rapid.T) {
				want := slices.Clone(model)
				slices.SortFunc(want, func(a, b *Holding) int { return holdingCmp(b, a) }) // back to front
				var got []*Holding
				for h := range s.ordered() {
					got = append(got, h)
				}
				slices.Reverse(got) // selection order is the array's back to front
				if !slices.Equal(got, want) {
					t.Fatalf("ordered %v, want %v", cidsOf(got), cidsOf(want))
				}
				if rapid.Bool().Draw(t, "merge") {
					s.settle()
					if !slices.Equal(s.hs, want) || len(s.tail) != 0 {
						t.Fatalf("merged %v, want %v", cidsOf(s.hs), cidsOf(want))
					}
				}
			},
			"": func(t *rapid.T) {
				if s.size() != len(model) {
					t.Fatalf("size %d, want %d", s.size(), len(model))
				}
				for _, h := range model {
					if !s.contains(h) {
						t.Fatalf("lost %s", h.CID)
					}
				}
			},
		})
	})
}
