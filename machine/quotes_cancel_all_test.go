package machine

import (
	"slices"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// quoteStates is the state of every quote of the desk, by id.
func quoteStates(d *Desk) map[string]State {
	out := make(map[string]State, len(d.Quotes))
	for id, q := range d.Quotes {
		out[id] = q.State
	}
	return out
}

// checkCancelAll applies DELETE /maker/quotes for p and checks its law against the state
// before: the answer is 200; `revoked` is exactly p's recorded quotes that were pending and
// not settling, `settling` exactly p's settling ones, each in creation order; those revoked
// are revoked now, their actions gone; p's submissions still with the ledger are answered
// 409 and gone; no other quote changed state; and a second mass
// cancel at once revokes nothing.
func checkCancelAll(t tb, h *harness, p actor) {
	t.Helper()
	before := quoteStates(h.d)
	var wantRevoked, wantSettling []*Quote
	waiting := map[string]uint64{} // p's submissions still with the ledger: withdrawn, 409
	for _, q := range h.d.Quotes {
		switch {
		case q.Maker != p.id:
		case q.State == QuoteFunding && q.ReqSeq != 0:
			waiting[q.ID] = q.ReqSeq
		case q.State == QuoteSettling:
			wantSettling = append(wantSettling, q)
		case q.State == QuoteLive || q.State == QuoteFunding && q.ReqSeq == 0:
			wantRevoked = append(wantRevoked, q)
		}
	}
	ids := func(qs []*Quote) []string {
		slices.SortFunc(qs, func(x, y *Quote) int {
			if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
				return c
			}
			if x.ID < y.ID {
				return -1
			}
			return 1
		})
		out := []string{}
		for _, q := range qs {
			out = append(out, q.ID)
		}
		return out
	}
	want := CancelAllQuotesDTO{Revoked: ids(wantRevoked), Settling: ids(wantSettling)}
	rep := h.replies[h.apply(CancelAllQuotes{Req: p.req()})]
	got, ok := rep.Body.(CancelAllQuotesDTO)
	if rep.Status != 200 || rep.Err != nil || !ok {
		t.Fatalf("mass cancel by %s: %d %v %#v, want 200", p.id, rep.Status, rep.Err, rep.Body)
	}
	if !slices.Equal(got.Revoked, want.Revoked) || !slices.Equal(got.Settling, want.Settling) ||
		got.Revoked == nil || got.Settling == nil {
		t.Fatalf("mass cancel by %s: %+v, want %+v", p.id, got, want)
	}
	for id, was := range before {
		q, still := h.d.Quotes[id]
		switch {
		case slices.Contains(want.Revoked, id):
			if !still || q.State != QuoteRevoked {
				t.Fatalf("quote %s was revoked but is %v", id, q)
			}
			for _, a := range q.Actions {
				if _, left := h.d.Actions[a]; left {
					t.Fatalf("quote %s revoked but its action %s is still pending", id, a)
				}
			}
		case waiting[id] != 0:
			if rep, answered := h.replies[waiting[id]]; still || !answered || rep.Status != 409 {
				t.Fatalf("quote %s, whose submission waited, after the mass cancel: still %v, answer %+v; want withdrawn with 409", id, still, rep)
			}
		case still && q.State != was:
			t.Fatalf("quote %s not revoked, but its state went from %s to %s", id, was, q.State)
		}
	}
	again := h.replies[h.apply(CancelAllQuotes{Req: p.req()})]
	if b, _ := again.Body.(CancelAllQuotesDTO); again.Status != 200 || len(b.Revoked) != 0 || !slices.Equal(b.Settling, want.Settling) {
		t.Fatalf("a second mass cancel by %s: %d %+v, want nothing revoked and settling %v", p.id, again.Status, again.Body, want.Settling)
	}
}

// TestCancelAllQuotesUnknownKey: the mass cancel authenticates first.
func TestCancelAllQuotesUnknownKey(t *testing.T) {
	h := newHarness(t)
	rep := h.replies[h.apply(CancelAllQuotes{Req: actor{key: "no-such-key"}.req()})]
	if rep.Status != 401 || rep.Err == nil {
		t.Fatalf("unknown key: %d %+v, want 401", rep.Status, rep)
	}
}

// TestCancelAllQuotesJournal: the command survives its journal record.
func TestCancelAllQuotesJournal(t *testing.T) {
	mustRoundTrip(t, CancelAllQuotes{Req: Req{KeyHash: "ab12"}})
}

// TestCancelAllQuotesLaw: whatever mix of quotes two makers hold on several RFQs (live,
// funding and unsigned, settling, a submission still with the ledger, ended ones, made at
// the same instant or not), a mass cancel by either maker, or by the taker, obeys
// checkCancelAll.
func TestCancelAllQuotesLaw(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarnessWith(rapidTB{t}, testConfig())
		makers := []actor{h.maker("Alpha"), h.maker("Beta")}
		live := drawMakersQuotes(t, h, makers, 6)
		drawSettlingAndWaiting(t, h, live, makers)
		checkCancelAll(rapidTB{t}, h, []actor{makers[0], makers[1], houseTaker}[rapid.IntRange(0, 2).Draw(t, "caller")])
	})
}

// drawMakersQuotes draws up to maxRFQs RFQs of the house taker (a second apart or not), on
// each of which every maker has no quote, a funding unsigned one, a live one or one it
// deleted. It returns the live quotes.
func drawMakersQuotes(t *rapid.T, h *harness, makers []actor, maxRFQs int) []string {
	var live []string
	for i, n := 0, rapid.IntRange(1, maxRFQs).Draw(t, "rfqs"); i < n; i++ {
		h.now = h.now.Add(time.Duration(rapid.IntRange(0, 1).Draw(t, "gap")) * time.Second)
		r := h.newRFQ(houseTaker, Sell, "1", 120, makers...)
		for _, mk := range makers {
			switch rapid.IntRange(0, 3).Draw(t, "quote") {
			case 0: // none
			case 1:
				h.submit(mk, r.RfqID, "60000") // funding, unsigned
			case 2:
				live = append(live, h.live(mk, r.RfqID, "60000").QuoteID)
			case 3:
				q := h.live(mk, r.RfqID, "60000")
				h.ok(h.apply(DeleteQuote{Req: mk.req(), QuoteID: q.QuoteID}), 204) // ended
			}
		}
	}
	return live
}

// drawSettlingAndWaiting stops answering the ledger at once, then may accept one live quote
// (settling: the taker's allocations answered, the settle itself left with the ledger) and
// may leave a submission of the first maker waiting on the ledger on a fresh RFQ.
func drawSettlingAndWaiting(t *rapid.T, h *harness, live []string, makers []actor) {
	h.auto = false
	if len(live) > 0 && rapid.Bool().Draw(t, "accept") {
		h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: rapid.SampledFrom(live).Draw(t, "accepted")})
		for len(h.queued) > 0 && !isSettle(h.queued[0]) {
			c := h.queued[0]
			h.queued = h.queued[1:]
			h.answer(c)
		}
	}
	if rapid.Bool().Draw(t, "unanswered submission") {
		r := h.newRFQ(houseTaker, Sell, "1", 120, makers...)
		h.apply(SubmitQuote{Req: makers[0].req(), RFQID: r.RfqID, Price: money.MustParse("60000")})
	}
}
