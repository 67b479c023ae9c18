package ledgeradapter

import (
	"testing"

	"pgregory.net/rapid"
)

// TestSentOffsetsProperty checks the bounded memory of first offsets against a model: a
// submission noted before and not yet forgotten answers the offset of its first note; the
// memory forgets the oldest noted first, and holds at most its limit.
func TestSentOffsetsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 6).Draw(t, "limit")
		s := &sentOffsets{limit: limit}
		model := map[sentKey]int64{}
		var order []sentKey // oldest first
		end := int64(0)
		for range rapid.IntRange(0, 60).Draw(t, "steps") {
			key := sentKey{
				actAs: rapid.SampledFrom([]string{"alice", "bob", "alice\x00x"}).Draw(t, "actAs"),
				sub:   rapid.SampledFrom([]string{"c1", "c2", "c3", "x\x00c1", "p9"}).Draw(t, "sub"),
			}
			end += rapid.Int64Range(0, 3).Draw(t, "advance")
			read := false
			off, seen := s.noteKey(key, func() int64 { read = true; return end })
			want, wantSeen := model[key]
			if !wantSeen {
				want = end
				model[key] = end
				order = append(order, key)
				if len(order) > limit {
					delete(model, order[0])
					order = order[1:]
				}
			}
			if seen != wantSeen || off != want {
				t.Fatalf("note(%q): got (%d, %v), want (%d, %v)", key, off, seen, want, wantSeen)
			}
			if read == seen {
				t.Fatalf("note(%q): the ledger's end read %v for seen=%v", key, read, seen)
			}
			if len(s.at) != len(model) || len(s.at) > limit {
				t.Fatalf("holds %d, model %d, limit %d", len(s.at), len(model), limit)
			}
		}
	})
}
