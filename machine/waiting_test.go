package machine

import "github.com/deskco/rfqdesk/money"

// waitingSubmission opens the house taker's RFQ for 1 (ttl seconds) inviting m, stops the
// harness answering the ledger, and returns the RFQ with m's submission of a quote at 60000
// on it: applied now, that submission stays waiting on its prepares until h.flush.
func (h *harness) waitingSubmission(m actor, ttl int64) (RfqDTO, SubmitQuote) {
	r := h.newRFQ(houseTaker, Sell, "1", ttl, m)
	h.auto = false
	return r, SubmitQuote{Req: m.req(), RFQID: r.RfqID, Price: money.MustParse("60000")}
}
