package machine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// opsDesk is a desk with a settled trade, live and funding quotes, several RFQs and an
// action waiting for a maker's signature.
func opsDesk(t *testing.T) (*harness, actor, actor) {
	t.Helper()
	h := newHarness(t)
	m1, m2 := h.maker("Alpha Maker"), h.maker("Beta")
	for i := range 4 {
		h.setNow(t0.Add(time.Duration(i) * time.Second))
		h.newRFQ(houseTaker, Sell, "0.5", 60, m1, m2)
	}
	rfqs := h.read(houseTaker.key, QRfqMine{}).Body.([]RfqDTO)
	q := h.live(m1, rfqs[0].RfqID, "60000")
	h.accept(houseTaker, q.QuoteID)
	h.submit(m2, rfqs[1].RfqID, "59000") // funding: its actions wait for Beta
	return h, m1, m2
}

// TestReadOpsListsTheWholeDesk: the operator's view counts every table, lists the newest
// of each kind newest first, the sign queue oldest first, and the makers online.
func TestReadOpsListsTheWholeDesk(t *testing.T) {
	h, _, m2 := opsDesk(t)
	v := ReadOps(h.d, h.now, 0)
	c := v.Counts
	if c.RFQs != 4 || c.RFQsOpen != 3 || c.Quotes != 2 || c.QuotesLive != 1 || c.Trades != 1 || c.TradesInFlight != 0 {
		t.Fatalf("counts %+v", c)
	}
	if c.SignQueue != 2 || len(v.SignQueue) != 2 || v.SignQueue[0].Party != h.hint(m2) || v.SignQueue[0].State != ActionPending {
		t.Fatalf("sign queue %d %+v", c.SignQueue, v.SignQueue)
	}
	if c.MakersOnline != 2 || len(v.Makers) != 2 || v.Makers[0].Sockets != 1 {
		t.Fatalf("makers %d %+v", c.MakersOnline, v.Makers)
	}
	if len(v.RFQs) != 4 || !v.RFQs[0].CreatedAt.After(v.RFQs[3].CreatedAt) || v.RFQs[3].State != RFQFilled {
		t.Fatalf("rfqs newest first: %+v", v.RFQs)
	}
	if len(v.Trades) != 1 || v.Trades[0].State != TradeSettled || v.Trades[0].SettledAt == nil || v.Trades[0].UpdateID == "" ||
		v.Trades[0].Taker != "house-taker" || v.Trades[0].Fee.String() != "75" {
		t.Fatalf("trades %+v", v.Trades)
	}
	if len(v.Quotes) != 2 || v.Quotes[0].State != QuoteFunding || v.Quotes[1].State != QuoteWon {
		t.Fatalf("quotes newest first: %+v", v.Quotes)
	}
}

// TestReadOpsBoundsEveryList: each list is cut at the limit, which is clamped to
// OpsMaxLimit; the counts stay whole.
func TestReadOpsBoundsEveryList(t *testing.T) {
	h, m1, _ := opsDesk(t)
	v := ReadOps(h.d, h.now, 1)
	if len(v.RFQs) != 1 || len(v.Quotes) != 1 || len(v.SignQueue) != 1 || len(v.Makers) != 1 || v.Counts.RFQs != 4 {
		t.Fatalf("limit 1: %d rfqs, %d quotes, %d actions, %d makers; counts %+v",
			len(v.RFQs), len(v.Quotes), len(v.SignQueue), len(v.Makers), v.Counts)
	}
	if v.RFQs[0].CreatedAt != t0.Add(3*time.Second) {
		t.Fatalf("limit 1 keeps %v, not the newest RFQ", v.RFQs[0].CreatedAt)
	}
	for i := range 3 * OpsMaxLimit / 2 {
		h.setNow(t0.Add(time.Minute + time.Duration(i)*time.Millisecond))
		h.newRFQ(houseTaker, Sell, "0.01", 60, m1)
	}
	if v := ReadOps(h.d, h.now, 10*OpsMaxLimit); len(v.RFQs) != OpsMaxLimit || v.Counts.RFQs != 4+3*OpsMaxLimit/2 {
		t.Fatalf("limit over the maximum: %d rfqs of %d", len(v.RFQs), v.Counts.RFQs)
	}
	if v := ReadOps(h.d, h.now, 0); len(v.RFQs) != OpsDefaultLimit {
		t.Fatalf("default limit: %d rfqs", len(v.RFQs))
	}
}

// TestReadOpsIsNoPartysRead: a party asking for the operator's view is refused like any
// unknown query, and the view carries no API key hash nor public key.
func TestReadOpsIsNoPartysRead(t *testing.T) {
	h, m1, m2 := opsDesk(t)
	for _, a := range []actor{houseTaker, m1, m2} {
		if rep := Read(h.d, h.now, keyHash(a.key), QOps{Limit: 10}); rep.Status != 404 {
			t.Fatalf("%s read the operator's view: %d", a.id, rep.Status)
		}
	}
	body, err := json.Marshal(ReadOps(h.d, h.now, OpsMaxLimit))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []actor{houseTaker, m1, m2} {
		p := h.d.Parties[a.id]
		if strings.Contains(string(body), p.KeyHash) || strings.Contains(string(body), a.key) {
			t.Fatalf("the view shows %s's key or its hash: %s", a.id, body)
		}
		if p.PublicKey != nil && strings.Contains(string(body), jsonBytes(t, p.PublicKey)) {
			t.Fatalf("the view shows %s's public key", a.id)
		}
	}
}

// TestReadOpsIgnoresMapOrder: the same desk gives the same view, whatever order its maps
// are walked in, and reading changes nothing.
func TestReadOpsIgnoresMapOrder(t *testing.T) {
	h, _, _ := opsDesk(t)
	before := h.digest()
	first := ReadOps(h.d, h.now, 2)
	for range 20 {
		if again := ReadOps(h.d, h.now, 2); !reflect.DeepEqual(first, again) {
			t.Fatalf("two reads differ:\n%+v\n%+v", first, again)
		}
	}
	if h.digest() != before {
		t.Fatal("reading the operator's view changed the desk")
	}
}

func jsonBytes(t *testing.T, b []byte) string {
	t.Helper()
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(string(out), `"`)
}

// TestTopKIsSortThenCut: whatever order items are offered in, the kept ones are the k
// first of the list sorted newest first (ties by id).
func TestTopKIsSortThenCut(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type item struct {
			at time.Time
			id string
		}
		n := rapid.IntRange(0, 60).Draw(t, "n")
		k := rapid.IntRange(1, 20).Draw(t, "k")
		var items []item
		for i := range n {
			at := t0.Add(time.Duration(rapid.IntRange(0, 10).Draw(t, "at")) * time.Second)
			items = append(items, item{at, fmt.Sprintf("id%03d", i)})
		}
		key := func(x item) (time.Time, string) { return x.at, x.id }
		top := newestOf(k, key)
		for _, i := range rapid.Permutation(items).Draw(t, "order") {
			top.offer(i)
		}
		want := slices.Clone(items)
		slices.SortFunc(want, top.newer)
		want = want[:min(k, len(want))]
		if !slices.Equal(top.items, want) {
			t.Fatalf("kept %v, want %v", top.items, want)
		}
	})
}

// BenchmarkReadOps: the operator's read of a desk holding what ten minutes of 20 trades a
// second leave (12,000 RFQs and quotes retained, 1,000 trades), on the loop goroutine.
func BenchmarkReadOps(b *testing.B) {
	h := newHarnessWith(b, testConfig())
	d := h.d
	for i := range 12000 {
		at := t0.Add(time.Duration(i) * 50 * time.Millisecond)
		id := fmt.Sprintf("rfq_%06d", i)
		d.RFQs[id] = &RFQ{ID: id, State: RFQFilled, Taker: houseTaker.id, CreatedAt: at, Quotes: []string{"q" + id}}
		d.Quotes["q"+id] = &Quote{ID: "q" + id, State: QuoteWon, RFQ: id, CreatedAt: at}
		if i%12 == 0 {
			d.Trades["t"+id] = &Trade{ID: "t" + id, State: TradeSettled, RFQ: id, AcceptedAt: at, SettledAt: at}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		ReadOps(d, t0.Add(time.Hour), OpsDefaultLimit)
	}
}
