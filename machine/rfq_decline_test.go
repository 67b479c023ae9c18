package machine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/wire"
	"pgregory.net/rapid"
)

// declinesOf reads GET /rfq/mine as the taker and returns the RFQ's declines.
func (h *harness) declinesOf(taker actor, rfq string) []DeclineDTO {
	h.t.Helper()
	for _, r := range h.read(taker.key, QRfqMine{}).Body.([]RfqDTO) {
		if r.RfqID == rfq {
			if r.Declines == nil {
				h.t.Fatalf("GET /rfq/mine row %s has no declines list", rfq)
			}
			return *r.Declines
		}
	}
	h.t.Fatalf("GET /rfq/mine has no row %s", rfq)
	return nil
}

// TestDeclineRevokesLiveQuote: a decline answers 204, revokes the caller's live quote (the
// maker and the taker hear quote.status), then tells the taker quote.declined with the
// maker's hint; GET /rfq/mine lists it, and the other maker's quote is untouched.
func TestDeclineRevokesLiveQuote(t *testing.T) {
	h := newHarness(t)
	a, b := h.maker("Alpha"), h.maker("Beta")
	r := h.newRFQ(houseTaker, Sell, "1", 120, a, b)
	if got := h.declinesOf(houseTaker, r.RfqID); got == nil || len(got) != 0 {
		t.Fatalf("declines before any: %#v, want an empty list", got)
	}
	qa := h.live(a, r.RfqID, "60000")
	qb := h.live(b, r.RfqID, "60001")
	from := len(h.events)
	h.ok(h.apply(DeclineRFQ{Req: a.req(), RFQID: r.RfqID, Reason: "inventory"}), 204)
	if st := h.d.Quotes[qa.QuoteID].State; st != QuoteRevoked {
		t.Fatalf("the decliner's quote is %s, want revoked", st)
	}
	if st := h.d.Quotes[qb.QuoteID].State; st != QuoteLive {
		t.Fatalf("the other maker's quote is %s, want live", st)
	}
	if got := joined(h.eventsFor(houseTaker.id, from)); got != "quote.status,quote.declined" {
		t.Fatalf("taker heard %s", got)
	}
	if got := joined(h.eventsFor(a.id, from)); got != "quote.status" {
		t.Fatalf("maker heard %s", got)
	}
	last := h.events[len(h.events)-1]
	if p, _ := last.Payload.(QuoteDeclinedPayload); p != (QuoteDeclinedPayload{RfqID: r.RfqID, Maker: h.hint(a), Reason: "inventory"}) {
		t.Fatalf("quote.declined payload %#v", last.Payload)
	}
	if got := h.declinesOf(houseTaker, r.RfqID); !slices.Equal(got, []DeclineDTO{{Maker: h.hint(a), Reason: "inventory"}}) {
		t.Fatalf("declines %#v", got)
	}
}

// TestDeclineRefusals: each refusal has its status, and changes nothing.
func TestDeclineRefusals(t *testing.T) {
	h := newHarness(t)
	a, b, c := h.maker("Alpha"), h.maker("Beta"), h.maker("Gamma")
	open := h.newRFQ(houseTaker, Sell, "1", 120, a, b)
	h.live(a, open.RfqID, "60000")
	closed := h.newRFQ(houseTaker, Sell, "1", 120, a)
	h.ok(h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: closed.RfqID}), 204)
	late := h.newRFQ(houseTaker, Sell, "1", 30, a)
	h.now = h.now.Add(40 * time.Second) // past its deadline, no tick has expired it yet
	for _, tc := range []struct {
		name   string
		by     actor
		rfq    string
		reason string
		status int
	}{
		{"bad reason", a, open.RfqID, "bored", 400},
		{"empty reason", a, open.RfqID, "", 400},
		{"unknown RFQ", a, "rfq_nope", "price", 404},
		{"not invited", c, open.RfqID, "price", 403},
		{"the taker", houseTaker, open.RfqID, "price", 403},
		{"closed", a, closed.RfqID, "price", 404},
		{"past its deadline", a, late.RfqID, "price", 404},
		{"unknown key", actor{key: "no-such-key"}, open.RfqID, "price", 401},
	} {
		h.d.Now = h.now // the input moves the desk's clock to its own time
		before, from := h.digest(), len(h.events)
		h.refused(h.apply(DeclineRFQ{Req: tc.by.req(), RFQID: tc.rfq, Reason: tc.reason}), tc.status, "")
		if h.digest() != before || len(h.events) != from {
			t.Fatalf("%s: the refusal changed the desk or sent events", tc.name)
		}
	}
}

// TestDeclineSettlingQuoteKept: a decline while the caller's quote settles answers 204,
// records the decline and leaves the settling quote alone.
func TestDeclineSettlingQuoteKept(t *testing.T) {
	h := newHarness(t)
	a := h.maker("Alpha")
	r := h.newRFQ(houseTaker, Sell, "1", 120, a)
	q := h.live(a, r.RfqID, "60000")
	h.auto = false
	// Settling: the taker's allocations answered, the settle itself left with the ledger.
	h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID})
	for len(h.queued) > 0 && !isSettle(h.queued[0]) {
		c := h.queued[0]
		h.queued = h.queued[1:]
		h.answer(c)
	}
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteSettling {
		t.Fatalf("quote is %s, want settling", st)
	}
	h.ok(h.apply(DeclineRFQ{Req: a.req(), RFQID: r.RfqID, Reason: "size"}), 204)
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteSettling {
		t.Fatalf("a decline moved the settling quote to %s", st)
	}
	if got := h.declinesOf(houseTaker, r.RfqID); len(got) != 1 || got[0].Reason != "size" {
		t.Fatalf("declines %#v", got)
	}
}

// TestDeclineUnansweredSubmission: a decline while the caller's POST /maker/quotes still
// waits for its prepares answers that submission 409, and leaves no quote behind.
func TestDeclineUnansweredSubmission(t *testing.T) {
	h := newHarness(t)
	a := h.maker("Alpha")
	r, quote := h.waitingSubmission(a, 120)
	sub := h.apply(quote)
	h.ok(h.apply(DeclineRFQ{Req: a.req(), RFQID: r.RfqID, Reason: "price"}), 204)
	h.refused(sub, 409, "")
	if n := len(h.d.RFQs[r.RfqID].Quotes); n != 0 {
		t.Fatalf("the RFQ still lists %d quotes", n)
	}
}

// TestDeclineThenQuote: a decline does not bar a later quote, and stays on record.
func TestDeclineThenQuote(t *testing.T) {
	h := newHarness(t)
	a := h.maker("Alpha")
	r := h.newRFQ(houseTaker, Sell, "1", 120, a)
	h.ok(h.apply(DeclineRFQ{Req: a.req(), RFQID: r.RfqID, Reason: "other"}), 204)
	q := h.live(a, r.RfqID, "60000")
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteLive {
		t.Fatalf("quote after a decline is %s", st)
	}
	if got := h.declinesOf(houseTaker, r.RfqID); len(got) != 1 {
		t.Fatalf("declines %#v, want the first one kept", got)
	}
}

// TestDeclineJournalAndSnapshot: the command survives its journal record; a desk without
// declines writes no declines section in the version 2 form (always one, maybe empty, in
// version 3); an RFQ's declines survive a snapshot, whose bytes then encode again the same;
// and a section naming an RFQ the snapshot does not hold is refused.
func TestDeclineJournalAndSnapshot(t *testing.T) {
	mustRoundTrip(t, DeclineRFQ{Req: Req{KeyHash: "ab12"}, RFQID: "rfq_1", Reason: "size"})
	h := newHarness(t)
	a, bb := h.maker("Alpha"), h.maker("Beta")
	r := h.newRFQ(houseTaker, Sell, "1", 120, a, bb)
	var section encoder
	writeDeclinesSection(&section, h.d.RFQs, false)
	if len(section.B) != 0 {
		t.Fatalf("a desk without declines wrote a version 2 declines section of %d bytes", len(section.B))
	}
	writeDeclinesSection(&section, h.d.RFQs, true)
	if !slices.Equal(section.B, []byte{0}) {
		t.Fatalf("a desk without declines wrote the version 3 declines section %v, want a zero count", section.B)
	}
	section.B = nil
	writeDeclinesSection(&section, map[string]*RFQ{"rfq_nope": {Declines: []Decline{{Maker: a.id, Reason: "size"}}}}, false)
	if err := readDeclinesSection(wire.NewBulkDecoder(section.B), h.d.RFQs); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Fatalf("a declines section of an RFQ the snapshot does not hold: %v", err)
	}
	h.ok(h.apply(DeclineRFQ{Req: bb.req(), RFQID: r.RfqID, Reason: "size"}), 204)
	h.ok(h.apply(DeclineRFQ{Req: a.req(), RFQID: r.RfqID, Reason: "price"}), 204)
	d := roundTrip(t, h.d) // and it encodes to the same bytes
	if got, want := d.RFQs[r.RfqID].Declines, h.d.RFQs[r.RfqID].Declines; len(got) != 2 || !slices.EqualFunc(got, want, func(x, y Decline) bool {
		return x.Maker == y.Maker && x.Reason == y.Reason && x.At.Equal(y.At)
	}) {
		t.Fatalf("restored declines %+v, want %+v", got, want)
	}
}

// TestDeclineLaw: whatever quotes and declines makers make on an RFQ, in any order, after
// each accepted decline by maker m: m has no pending quote on it that is not settling; no
// other maker's quote changed; and GET /rfq/mine's declines name each maker that declined
// once, in the order of their first declines, with its latest reason.
func TestDeclineLaw(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarnessWith(rapidTB{t}, testConfig())
		makers := []actor{h.maker("Alpha"), h.maker("Beta"), h.maker("Gamma")}
		r := h.newRFQ(houseTaker, Sell, "1", 300, makers...)
		var order []string            // hints, by first decline
		latest := map[string]string{} // hint → latest reason
		for i, n := 0, rapid.IntRange(1, 12).Draw(t, "steps"); i < n; i++ {
			mk := rapid.SampledFrom(makers).Draw(t, "maker")
			switch rapid.IntRange(0, 2).Draw(t, "what") {
			case 0:
				h.submit(mk, r.RfqID, "60000")
			case 1:
				h.live(mk, r.RfqID, "60000")
			case 2:
				before := quoteStates(h.d)
				reason := rapid.SampledFrom(DeclineReasons).Draw(t, "reason")
				h.ok(h.apply(DeclineRFQ{Req: mk.req(), RFQID: r.RfqID, Reason: reason}), 204)
				for id, was := range before {
					q := h.d.Quotes[id]
					switch {
					case q.Maker == mk.id && q.pending() && q.State != QuoteSettling:
						t.Fatalf("quote %s of the decliner is still %s", id, q.State)
					case q.Maker != mk.id && q.State != was:
						t.Fatalf("quote %s of another maker went from %s to %s", id, was, q.State)
					}
				}
				hint := h.hint(mk)
				if _, seen := latest[hint]; !seen {
					order = append(order, hint)
				}
				latest[hint] = reason
			}
			want := []DeclineDTO{}
			for _, hint := range order {
				want = append(want, DeclineDTO{Maker: hint, Reason: latest[hint]})
			}
			if got := h.declinesOf(houseTaker, r.RfqID); !slices.Equal(got, want) {
				t.Fatalf("declines %v, want %v", got, want)
			}
		}
	})
}
