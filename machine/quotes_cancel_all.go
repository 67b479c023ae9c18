package machine

// CancelAllQuotes is DELETE /maker/quotes (no id), the mass cancel: every pending quote of
// the caller that is not settling is revoked, as DELETE /maker/quotes/{id} revokes one (its
// unsigned allocate actions withdrawn, its landed allocations cancelled on the ledger,
// quote.status revoked to the maker and, if the quote was live, to the taker), all in this
// one input. The answer is 200 CancelAllQuotesDTO. A caller without such quotes (a party
// that only takes, or a maker with nothing pending) gets two empty lists: it has nothing
// of its own to cancel, and other parties' quotes are never its business.
//
// A quote whose POST /maker/quotes still waits for its ledger prepares is withdrawn: its
// submission is answered 409 now and the quote never goes live (a maker that cancels
// everything means everything, in flight too, as on Paradigm or Deribit; a decline
// withdraws one the same way). It is in neither list: the caller was never told its id.
type CancelAllQuotes struct{ Req }

// CancelAllQuotesDTO is the answer to DELETE /maker/quotes: the quotes revoked, and the
// caller's quotes left alone because they are accepted and settling; each list in the order
// the quotes were created (by creation time, then by id), empty rather than null.
type CancelAllQuotesDTO struct {
	Revoked  []string `json:"revoked"`
	Settling []string `json:"settling"`
}

func init() { registerFlow(CancelAllQuotes{}) }

// Kind names the input in the journal.
func (CancelAllQuotes) Kind() string { return "quote.delete-all" }

func (c CancelAllQuotes) encodeBody(e *encoder) { e.Str(c.KeyHash) }

func (CancelAllQuotes) decodeBody(d *decoder) Input {
	return CancelAllQuotes{Req: Req{KeyHash: d.Str()}}
}

func (CancelAllQuotes) run(a *applier, maker *Party) {
	// A submission still waiting on the ledger is withdrawn (answered 409): it is in
	// neither list, since its caller has not been told its id, and it never goes live.
	a.withdrawWaitingSubmissions(maker.ID, conflict("the quote was withdrawn by DELETE /maker/quotes before it was recorded"))
	dto := CancelAllQuotesDTO{Revoked: []string{}, Settling: []string{}}
	for _, q := range a.cancellableQuotes(maker.ID) {
		if q.State == QuoteSettling {
			dto.Settling = append(dto.Settling, q.ID)
			continue
		}
		a.endQuote(q, TrigRevoke)
		dto.Revoked = append(dto.Revoked, q.ID)
	}
	a.reply(200, dto)
}
