package ledgersim

import (
	"fmt"
	"math"
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
				amt := money.MustParse(rapid.SampledFrom(testAmounts).Draw(t, "amount"))
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
				for cur := s.cursor(); ; {
					h := cur.next()
					if h == nil {
						break
					}
					got = append(got, h)
				}
				slices.Reverse(got) // selection order is the array's back to front
				if !slices.Equal(got, want) {
					t.Fatalf("ordered %v, want %v", cidsOf(got), cidsOf(want))
				}
				if rapid.Bool().Draw(t, "merge") {
					s.settle()
					if got := s.holdings(); !slices.Equal(got, want) || len(s.tail) != 0 {
						t.Fatalf("merged %v, want %v", cidsOf(got), cidsOf(want))
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

// testAmounts have integer keys (small, fractional, the largest that fit) and none
// (too many digits for an int64 once scaled by 10^10).
var testAmounts = []string{"0.0000000001", "0.5", "1", "1.5", "1.50", "8", "12345678.9",
	"922337203.6854775807", "922337203.6854775808", "999999999.9999999999", "1000000000000", "123456789012345678901234567890"}

// TestAmountKey checks that integer keys order amounts as decimals do, and that amounts
// too large for a key get none.
func TestAmountKey(t *testing.T) {
	for _, a := range testAmounts {
		for _, b := range testAmounts {
			da, db := money.MustParse(a), money.MustParse(b)
			ka, kb := amountKey(da), amountKey(db)
			if ka == noKey || kb == noKey {
				continue
			}
			want := da.Cmp(db)
			got := 0
			if ka < kb {
				got = -1
			} else if ka > kb {
				got = 1
			}
			if got != want {
				t.Errorf("keys of %s and %s compare %d, amounts %d", a, b, got, want)
			}
		}
	}
	for a, want := range map[string]int64{"1": 10_000_000_000, "0.0000000001": 1, "1.50": 15_000_000_000, "922337203.6854775807": math.MaxInt64,
		"922337203.6854775808": noKey, "1000000000000": noKey} {
		if got := amountKey(money.MustParse(a)); got != want {
			t.Errorf("amountKey(%s) = %d, want %d", a, got, want)
		}
	}
}

// TestEntryOrderMatchesHoldingLess checks that comparing set entries (integer amount
// and contract id keys first) orders any two holdings exactly as holdingLess does,
// with ids of the ledger's form that share long prefixes (equal keys) and ids of other
// forms (no key).
func TestEntryOrderMatchesHoldingLess(t *testing.T) {
	id := rapid.OneOf(
		rapid.Custom(func(t *rapid.T) string { // "00" + hex digits drawn from a few, so prefixes collide
			n := rapid.IntRange(0, 66).Draw(t, "len")
			b := []byte("00")
			for range n {
				b = append(b, rapid.SampledFrom([]byte("0af")).Draw(t, "digit"))
			}
			return string(b)
		}),
		rapid.Custom(func(t *rapid.T) string { return string(rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "bytes")) }),
		rapid.Custom(func(t *rapid.T) string { // "00" then anything, NUL bytes included
			return "00" + string(rapid.SliceOfN(rapid.SampledFrom([]byte{0, '0', 'f', 0xff}), 0, 12).Draw(t, "rest"))
		}),
	)
	rapid.Check(t, func(t *rapid.T) {
		a := &Holding{CID: id.Draw(t, "a"), Amount: money.MustParse(rapid.SampledFrom(testAmounts).Draw(t, "amount a"))}
		b := &Holding{CID: id.Draw(t, "b"), Amount: money.MustParse(rapid.SampledFrom(testAmounts).Draw(t, "amount b"))}
		if got, want := entryOf(a).before(entryOf(b)), holdingLess(a, b); got != want {
			t.Fatalf("%q %s before %q %s: entries say %v, holdingLess %v", a.CID, a.Amount, b.CID, b.Amount, got, want)
		}
	})
}
