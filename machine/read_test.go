package machine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// dtoEqual compares DTOs: wire times and decimals by value.
var dtoEqual = cmpopts.EquateComparable(WireTime{})

// TestListReadsMatchRowByRow: GET /rfq/mine and GET /rfq/incoming, which cut their rows'
// slices from one allocation, answer exactly what rendering each row on its own answers,
// and no row's slice reaches into the next one's.
func TestListReadsMatchRowByRow(t *testing.T) {
	h := newHarness(t)
	m1, m2, m3 := h.maker("alpha"), h.maker("beta"), h.maker("gamma")
	taker := houseTaker
	r1 := h.newRFQ(taker, Sell, "0.5", 60, m1, m2, m3)
	h.live(m1, r1.RfqID, "60000")
	h.live(m2, r1.RfqID, "59000")
	h.submit(m3, r1.RfqID, "58000") // not anchored: left out of the taker's list
	r2 := h.newRFQ(taker, Buy, "0.25", 90, m2)
	h.live(m2, r2.RfqID, "61000")
	r3 := h.newRFQ(taker, Sell, "0.1", 120, m1, m3) // no quote at all
	h.ok(h.apply(DeclineRFQ{Req: m3.req(), RFQID: r3.RfqID, Reason: "size"}), 204)
	r4 := h.newRFQ(taker, Sell, "0.2", 60, m3)
	q4 := h.live(m3, r4.RfqID, "60500")
	h.accept(taker, q4.QuoteID) // settling

	byRow := func(rs []*RFQ) []RfqDTO {
		var out []RfqDTO
		for _, x := range rs {
			dto := h.d.rfqDTO(x)
			quotes := []QuoteDTO{}
			for _, qid := range x.Quotes {
				if q := h.d.Quotes[qid]; q != nil && q.Anchored {
					quotes = append(quotes, h.d.quoteDTO(q))
				}
			}
			dto.Quotes = &quotes
			declines := []DeclineDTO{}
			for _, x := range x.Declines {
				declines = append(declines, DeclineDTO{Maker: h.d.hintOf(x.Maker), Reason: x.Reason})
			}
			dto.Declines = &declines
			out = append(out, dto)
		}
		return out
	}
	rd := reader{d: h.d, p: h.d.Parties[taker.id]}
	mine := rd.rfqMine()
	want := byRow(rd.rfqsWhere(func(x *RFQ) bool { return x.Taker == taker.id }))
	if diff := cmp.Diff(want, mine, dtoEqual); diff != "" {
		t.Fatalf("GET /rfq/mine differs from row-by-row rendering (-want +got):\n%s", diff)
	}
	row := map[string]int{}
	for i, r := range mine {
		row[r.RfqID] = i
	}
	withTwo, without := mine[row[r1.RfqID]], mine[row[r3.RfqID]]
	if len(mine) != 4 || len(*withTwo.Quotes) != 2 || len(*without.Quotes) != 0 {
		t.Fatalf("the fixture did not make the rows it meant to: %+v", mine)
	}
	for _, m := range []actor{m1, m2, m3} {
		rd := reader{d: h.d, p: h.d.Parties[m.id]}
		var want []IncomingRfqDTO
		for _, x := range rd.rfqsWhere(func(x *RFQ) bool { return x.invited(m.id) }) {
			item := IncomingRfqDTO{RfqDTO: h.d.rfqDTO(x)}
			if q := h.d.makerQuoteOn(x, m.id); q != nil && q.ReqSeq == 0 {
				dto := h.d.quoteDTO(q)
				item.MyQuote = &dto
			}
			want = append(want, item)
		}
		if diff := cmp.Diff(want, rd.rfqIncoming(), dtoEqual); diff != "" {
			t.Fatalf("GET /rfq/incoming of %s differs from row-by-row rendering (-want +got):\n%s", m.id, diff)
		}
	}

	// Empty slices still encode as [], and an append to one row's slice leaves the next
	// row's alone.
	raw, err := json.Marshal(without)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"quotes":[]`) {
		t.Fatalf("an RFQ without quotes encodes as %s", raw)
	}
	next := mine[1].InvitedMakers[0]
	_ = append(mine[0].InvitedMakers, "intruder")
	_ = append((*withTwo.Quotes)[0].AnchorCids, "intruder")
	if mine[1].InvitedMakers[0] != next || (*withTwo.Quotes)[1].AnchorCids[0] == "intruder" {
		t.Fatal("an append to one row's slice wrote into another row")
	}
}

// TestStringArena: take hands out disjoint, non-nil slices of the asked length, and falls
// back to allocating once the arena is spent (or when there is none).
func TestStringArena(t *testing.T) {
	for _, tc := range []struct {
		name  string
		arena *stringArena
		takes []int
	}{
		{"nil arena", nil, []int{0, 2, 1}},
		{"exact", newStringArena(3), []int{1, 0, 2}},
		{"spent", newStringArena(2), []int{2, 1, 0}},
		{"empty", newStringArena(0), []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for i, n := range tc.takes {
				s := tc.arena.take(n)
				if s == nil || len(s) != n || cap(s) != n {
					t.Fatalf("take(%d) = len %d cap %d nil %v", n, len(s), cap(s), s == nil)
				}
				for j := range s {
					s[j] = strings.Repeat("x", i+1)
				}
				got = append(got, s)
			}
			for i, s := range got {
				for _, v := range s {
					if v != strings.Repeat("x", i+1) {
						t.Fatalf("slice %d was overwritten: %q", i, s)
					}
				}
			}
		})
	}
}
