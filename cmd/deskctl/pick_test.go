package main

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPick: pick keeps the items whose id was given, in the items' order and each once,
// and names each given id no item has, once, in the order given.
func TestPick(t *testing.T) {
	self := func(s string) string { return s }
	picked, missing := pick([]string{"a", "b", "c", "b"}, []string{"c", "x", "b", "x", "c"}, self)
	if !slices.Equal(picked, []string{"b", "c"}) || !slices.Equal(missing, []string{"x"}) {
		t.Fatalf("picked %q, missing %q; want [b c] and [x]", picked, missing)
	}
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.SampledFrom([]string{"a", "b", "c", "d", "e"})
		items := rapid.SliceOf(gen).Draw(t, "items")
		ids := rapid.SliceOf(gen).Draw(t, "ids")
		picked, missing := pick(items, ids, self)
		var want []string
		for _, it := range items {
			if slices.Contains(ids, it) && !slices.Contains(want, it) {
				want = append(want, it)
			}
		}
		var wantMissing []string
		for _, id := range ids {
			if !slices.Contains(items, id) && !slices.Contains(wantMissing, id) {
				wantMissing = append(wantMissing, id)
			}
		}
		if !slices.Equal(picked, want) || !slices.Equal(missing, wantMissing) {
			t.Fatalf("pick(%q, %q) = %q, %q; want %q, %q", items, ids, picked, missing, want, wantMissing)
		}
	})
}
