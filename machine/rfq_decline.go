package machine

import (
	"fmt"
	"slices"
	"time"
)

// DeclineRFQ is POST /maker/rfq/{id}/decline {reason}: an invited maker says it will not
// quote the RFQ, and why. The answer is 204. Its own quotes on the RFQ that are pending and
// not settling are revoked, as DELETE /maker/quotes/{id} revokes one (a settling quote is
// left alone: the trade is the taker's now); the taker hears quote.declined; the decline is
// kept on the RFQ (RFQ.Declines), shown in GET /rfq/mine's declines and there for a
// scorecard to count.
//
// The refusals, in this order: a reason outside DeclineReasons is 400; an unknown RFQ is
// 404; one that does not invite the caller 403; one that is closed or past its deadline
// 404. A second decline of the same RFQ is answered 204 again: its reason replaces the
// first in place (the list keeps the order of the makers' first declines), and the taker
// hears it. A decline does not bar a later quote: the maker may quote the RFQ while it is
// open, and its decline stays on record.
type DeclineRFQ struct {
	Req
	RFQID  string `json:"rfqId"`
	Reason string `json:"reason"`
}

// DeclineReasons are the reasons a maker may give for a decline.
var DeclineReasons = []string{"price", "size", "inventory", "instrument", "other"}

// Decline is a maker's decline of an RFQ, as the desk keeps it.
type Decline struct {
	Maker  string    `json:"maker"` // party id
	Reason string    `json:"reason"`
	At     time.Time `json:"at"` // when the maker declined, the last time
}

// DeclineDTO is an element of an RFQ's declines in GET /rfq/mine.
type DeclineDTO struct {
	Maker  string `json:"maker"` // the maker's hint
	Reason string `json:"reason"`
}

// QuoteDeclinedPayload is the payload of quote.declined, sent to the taker of the RFQ.
type QuoteDeclinedPayload struct {
	RfqID  string `json:"rfqId"`
	Maker  string `json:"maker"` // the maker's hint
	Reason string `json:"reason"`
}

// EvQuoteDeclined tells a taker that an invited maker declined its RFQ.
const EvQuoteDeclined = "quote.declined"

func init() { registerFlow(DeclineRFQ{}) }

// Kind names the input in the journal.
func (DeclineRFQ) Kind() string { return "rfq.decline" }

func (c DeclineRFQ) encodeBody(e *encoder) {
	e.Str(c.KeyHash)
	e.Str(c.RFQID)
	e.Str(c.Reason)
}

func (DeclineRFQ) decodeBody(d *decoder) Input {
	return DeclineRFQ{Req: Req{KeyHash: d.Str()}, RFQID: d.Str(), Reason: d.Str()}
}

// validDeclineReason reports whether reason is one of DeclineReasons.
func validDeclineReason(reason string) bool {
	for _, r := range DeclineReasons {
		if r == reason {
			return true
		}
	}
	return false
}

func (c DeclineRFQ) run(a *applier, maker *Party) {
	if !validDeclineReason(c.Reason) {
		a.refuse(badRequest("reason must be one of price, size, inventory, instrument, other"))
		return
	}
	r := a.openRFQFor(maker, c.RFQID)
	switch {
	case r == nil:
		return
	case !r.Deadline.After(a.d.Now):
		a.refuse(notFound("RFQ %s is closed", r.ID)) // docs/api.md: past its deadline, as closed
		return
	}
	// The RFQ's quotes in their order; ending one never reorders the others.
	for _, qid := range append([]string(nil), r.Quotes...) {
		q := a.d.Quotes[qid]
		switch {
		case q == nil || q.Maker != maker.ID || !q.pending() || q.State == QuoteSettling:
		case q.State == QuoteFunding && q.ReqSeq != 0:
			// Its POST /maker/quotes still waits for the prepares: that request is answered
			// 409, and the quote goes as a refused one (no quote.created was sent).
			a.quoteFundingRefused(q, conflict("the quote was withdrawn by a decline of its RFQ before it was recorded"))
		default:
			a.endQuote(q, TrigRevoke)
		}
	}
	a.scoreDeclined(r, maker.ID)
	if a.recordDecline(r, maker.ID, c.Reason) {
		a.emit(r.Taker, EvQuoteDeclined, QuoteDeclinedPayload{RfqID: r.ID, Maker: a.d.hintOf(maker.ID), Reason: c.Reason})
	}
	a.reply(204, nil)
}

// recordDecline keeps the maker's decline on the RFQ: a repeat replaces the reason and the
// time in place. The list holds at most one decline per invited maker, so MaxInvited
// bounds it. It reports whether the taker has news: a first decline, or a new reason (a
// repeat with the same reason, a retried request, tells the taker nothing again).
func (a *applier) recordDecline(r *RFQ, maker, reason string) bool {
	for i := range r.Declines {
		if r.Declines[i].Maker == maker {
			news := r.Declines[i].Reason != reason
			r.Declines[i].Reason, r.Declines[i].At = reason, a.d.Now
			return news
		}
	}
	r.Declines = append(r.Declines, Decline{Maker: maker, Reason: reason, At: a.d.Now})
	return true
}

// declineDTOs renders an RFQ's declines for GET /rfq/mine: never nil.
func (d *Desk) declineDTOs(r *RFQ) []DeclineDTO {
	out := make([]DeclineDTO, len(r.Declines))
	for i, x := range r.Declines {
		out[i] = DeclineDTO{Maker: d.hintOf(x.Maker), Reason: x.Reason}
	}
	return out
}

// The declines in the binary snapshot: an optional section after the rest of the desk, present
// only when some RFQ has declines, so that a desk without any encodes (and digests) exactly
// as before declines existed, and its snapshots stay readable by a desk built before them.
// The section is the number of RFQs with declines, then for each, in ascending id order,
// the RFQ's id and its declines (maker, reason, time).

// writeDeclinesSection writes the section when any RFQ has declines, or always (an empty
// one as a zero count) when always is set, as snapshot version 3 does.
func writeDeclinesSection(e *encoder, rfqs map[string]*RFQ, always bool) {
	var ids []string
	for id, r := range rfqs {
		if r != nil && len(r.Declines) > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 && !always {
		return
	}
	slices.Sort(ids) // the map's order decides nothing
	e.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.Str(id)
		writeSlice(e, rfqs[id].Declines, func(e *encoder, x *Decline) {
			e.Str(x.Maker)
			e.Str(x.Reason)
			e.Time(x.At)
		})
	}
}

// readDeclinesSection reads the section into the RFQs it names.
func readDeclinesSection(d *decoder, rfqs map[string]*RFQ) error {
	n := d.Count()
	for i := 0; i < n && d.Err() == nil; i++ {
		id := d.Str()
		ds := readSlice(d, func(d *decoder) Decline { return Decline{Maker: d.Str(), Reason: d.Str(), At: d.Time()} })
		r := rfqs[id]
		if d.Err() == nil && (r == nil || len(ds) == 0) {
			return fmt.Errorf("declines of RFQ %q, which the snapshot does not hold or with none", id)
		}
		if r != nil {
			r.Declines = ds
		}
	}
	return d.Err()
}
