package model

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// quoteDTO is the model's view of a quote on the wire.
func (m *Model) checkQuoteDTO(d machine.QuoteDTO, q *Quote) string {
	status := q.Status
	anchors := q.Anchors
	if anchors == nil {
		anchors = []string{}
	}
	switch {
	case d.QuoteID != q.ID:
		return fmt.Sprintf("quoteId is %s, not %s", d.QuoteID, q.ID)
	case d.RfqID != q.RFQ:
		return fmt.Sprintf("quote %s: rfqId is %s, not %s", q.ID, d.RfqID, q.RFQ)
	case d.Maker != m.hintOf(q.Maker):
		return fmt.Sprintf("quote %s: maker is %q, not %q", q.ID, d.Maker, m.hintOf(q.Maker))
	case decStr(d.Price) != q.Price:
		return fmt.Sprintf("quote %s: price is %q, not %q", q.ID, decStr(d.Price), q.Price)
	case !sameTime(d.ValidUntil, q.ValidUntil):
		return fmt.Sprintf("quote %s: validUntil is %s, not %s", q.ID, wireTime(time.Time(d.ValidUntil)), wireTime(q.ValidUntil))
	case d.Status != status:
		return fmt.Sprintf("quote %s: status is %q, not %q", q.ID, d.Status, status)
	case d.Settling != q.Settling:
		return fmt.Sprintf("quote %s: settling is %v, not %v", q.ID, d.Settling, q.Settling)
	case d.AnchorCids == nil || !slices.Equal(sortedStrings(d.AnchorCids), sortedStrings(anchors)):
		return fmt.Sprintf("quote %s: anchorCids are %v, not %v", q.ID, d.AnchorCids, anchors)
	case d.RevokeReason != "":
		return fmt.Sprintf("quote %s: revokeReason %q outside GET /rfq/incoming's myQuote", q.ID, d.RevokeReason)
	}
	return ""
}

func (s *step) quoteRecorded(req *Request, rep machine.Reply) {
	m := s.m
	what := fmt.Sprintf("the answer to POST /maker/quotes (request %d by %s on %s)", req.Seq, m.hintOf(req.Party), req.RFQ)
	d, ok := rep.Body.(machine.QuoteWithActionsDTO)
	if !ok || rep.Status != 200 {
		s.failf("%s is %d without a QuoteDto and actions (SPEC: always 200)", what, rep.Status)
		return
	}
	r := m.st.RFQs[req.RFQ]
	if r == nil || !r.Open {
		s.failf("%s records quote %s on RFQ %s, which is closed", what, d.QuoteID, req.RFQ)
		return
	}
	if !strings.HasPrefix(d.QuoteID, "q_") || m.st.Quotes[d.QuoteID] != nil {
		s.failf("%s: quoteId %q lacks the q_ prefix or names an existing quote", what, d.QuoteID)
		return
	}
	q := &Quote{ID: d.QuoteID, RFQ: r.ID, Maker: req.Party, Price: req.Price, ValidUntil: req.ValidUntil, CreatedAt: req.At, Status: "pending"}
	if msg := m.checkQuoteDTO(d.QuoteDTO, q); msg != "" {
		s.failf("%s: %s", what, msg)
		return
	}
	n := 2 // SPEC: typically two, the asset sent and the asset received
	if p := m.party(req.Party); p != nil && p.DeskSigned {
		n = 0
	}
	if len(d.Actions) != n {
		s.failf("%s: %d actions, not %d allocate actions", what, len(d.Actions), n)
		return
	}
	for _, x := range d.Actions {
		if msg := s.checkActionDTO(x, req.Party, "allocate", ""); msg != "" {
			s.failf("%s: %s", what, msg)
			return
		}
		if time.Time(x.ExpiresAt).After(q.ValidUntil) {
			s.failf("%s: action %s outlives the quote's validUntil %s", what, x.ID, wireTime(q.ValidUntil))
			return
		}
		s.noteAction(x, req.Party)
		m.st.Actions[x.ID].Quote = q.ID
		q.Actions = append(q.Actions, x.ID)
	}
	m.st.Quotes[q.ID] = q
	m.watch(q.ValidUntil, dueQuote, q.ID)
	r.Quotes = append(r.Quotes, q.ID)
	put(&s.recorded, q.ID, true)
}

func (s *step) tradeAccepted(req *Request, rep machine.Reply) {
	m := s.m
	what := fmt.Sprintf("the answer to POST /quote/%s/accept (request %d by %s)", req.Quote, req.Seq, m.hintOf(req.Party))
	d, ok := rep.Body.(machine.TradeWithActionsDTO)
	if !ok || rep.Status != 202 {
		s.failf("%s is %d without a TradeDto and actions (SPEC: always 202)", what, rep.Status)
		return
	}
	q := m.st.Quotes[req.Quote]
	r := m.st.RFQs[req.RFQ]
	if q == nil || r == nil || q.Status != "pending" || !r.Open {
		s.failf("%s accepts quote %s, which is no longer live", what, req.Quote)
		return
	}
	if !strings.HasPrefix(d.TradeID, "t_") || m.st.Trades[d.TradeID] != nil {
		s.failf("%s: tradeId %q lacks the t_ prefix or names an existing trade", what, d.TradeID)
		return
	}
	t := &Trade{ID: d.TradeID, RFQ: r.ID, Quote: q.ID, Taker: r.Taker, Maker: q.Maker, Status: "settling"}
	t.Fee = m.tradeFee(r, q)
	if msg := m.checkTradeDTO(d.TradeDTO, t, r, q); msg != "" {
		s.failf("%s: %s", what, msg)
		return
	}
	n := 2
	if p := m.party(req.Party); p != nil && p.DeskSigned {
		n = 0
	}
	if len(d.Actions) > n {
		s.failf("%s: %d actions, at most %d are due (one per instrument the taker's legs touch)", what, len(d.Actions), n)
		return
	}
	for _, x := range d.Actions {
		if msg := s.checkActionDTO(x, req.Party, "allocate", t.ID); msg != "" {
			s.failf("%s: %s", what, msg)
			return
		}
		s.noteAction(x, req.Party)
	}
	m.st.Trades[t.ID] = t
	r.Trades = append(r.Trades, t.ID)
	m.scoreAccepted(r, q)
	q.Settling = true
	r.Settling = t.ID
	s.protectionFill(req, t, r)
}

// tradeFee is DECISIONS' fee of a trade at the quote's price.
func (m *Model) tradeFee(r *RFQ, q *Quote) string {
	qty, _ := parseDec(r.Qty)
	price, _ := parseDec(q.Price)
	return mustFormat(fee(quoteAmount(qty, price), r.FeeBps))
}

func (m *Model) checkTradeDTO(d machine.TradeDTO, t *Trade, r *RFQ, q *Quote) string {
	dir := machine.Buy
	if r.Sell {
		dir = machine.Sell
	}
	switch {
	case d.TradeID != t.ID:
		return fmt.Sprintf("tradeId is %s, not %s", d.TradeID, t.ID)
	case d.Taker != m.hintOf(t.Taker) || d.Maker != m.hintOf(t.Maker):
		return fmt.Sprintf("trade %s: taker/maker are %s/%s, not %s/%s", t.ID, d.Taker, d.Maker, m.hintOf(t.Taker), m.hintOf(t.Maker))
	case d.Direction != dir || decStr(d.Qty) != r.Qty || d.Base != r.Base || d.Quote != r.Quote:
		return fmt.Sprintf("trade %s: %s %s %s/%s, not the RFQ's %s %s %s/%s", t.ID, d.Direction, decStr(d.Qty), d.Base, d.Quote, dir, r.Qty, r.Base, r.Quote)
	case decStr(d.Price) != q.Price:
		return fmt.Sprintf("trade %s: price %s, not the quote's %s", t.ID, decStr(d.Price), q.Price)
	case decStr(d.Fee) != t.Fee:
		return fmt.Sprintf("trade %s: fee %s, not %s (qty %s × price %s half-even at 10 digits, × %d bps / 10000 truncated)", t.ID, decStr(d.Fee), t.Fee, r.Qty, q.Price, r.FeeBps)
	case d.Status != t.Status:
		return fmt.Sprintf("trade %s: status %q, not %q", t.ID, d.Status, t.Status)
	case t.Status == "settling" && d.SettledAt != nil:
		return fmt.Sprintf("trade %s: a settling trade carries settledAt", t.ID)
	case t.Status == "settled" && (d.SettledAt == nil || !sameTime(*d.SettledAt, t.SettledAt)):
		return fmt.Sprintf("trade %s: settledAt is not %s", t.ID, wireTime(t.SettledAt))
	case t.Status == "settled" && (!strings.HasPrefix(d.Ledger.UpdateID, "1220") || (t.UpdateID != "" && d.Ledger.UpdateID != t.UpdateID)):
		return fmt.Sprintf("trade %s: ledger.updateId %q is not the settlement's", t.ID, d.Ledger.UpdateID)
	}
	return ""
}

// events walks the frames in order and moves the model along the contract's transitions,
// refusing a frame the contract does not allow now.
func (s *step) events() {
	m := s.m
	for _, e := range s.out.Events {
		if s.err != nil {
			return
		}
		if e.Socket != 0 {
			continue // the connect snapshot, judged with the socket's opening
		}
		to := m.party(e.Party)
		if to == nil {
			s.failf("a %s frame addressed to %s, a party the desk does not know", e.Type, e.Party)
			return
		}
		if s.numbered(e, to); s.err != nil {
			return
		}
		switch e.Type {
		case machine.EvRfqCreated:
			d, ok := asRfq(e.Payload)
			r := m.st.RFQs[d.RfqID]
			switch {
			case !ok || r == nil || d.RfqID != s.createdRFQ:
				s.failf("rfq.created for %s to %s outside the RFQ's creation", d.RfqID, to.Hint)
			case !invited(r, to.ID):
				s.failf("rfq.created for %s sent to %s, who is not invited", r.ID, to.Hint)
			default:
				if msg := m.checkRfqDTO(d, r); msg != "" {
					s.failf("rfq.created: %s", msg)
				}
				s.frame(r.ID, to.ID)
			}
		case machine.EvRfqClosed:
			id := rfqIDOf(e.Payload)
			r := m.st.RFQs[id]
			_, filled := s.filled[id]
			switch {
			case r == nil || (!s.cancelled[id] && !filled):
				s.failf("rfq.closed for %s to %s, but it was neither cancelled nor filled now", id, to.Hint)
			case to.ID != r.Taker && !invited(r, to.ID):
				s.failf("rfq.closed for %s sent to %s, who neither took it nor was invited", id, to.Hint)
			default:
				s.frame(id, to.ID)
			}
		case machine.EvRfqExpired:
			id := rfqIDOf(e.Payload)
			r := m.st.RFQs[id]
			switch {
			case r == nil:
				s.failf("rfq.expired for unknown RFQ %s to %s", id, to.Hint)
			case to.ID != r.Taker && !invited(r, to.ID):
				s.failf("rfq.expired for %s sent to %s, who neither took it nor was invited", id, to.Hint)
			case !s.expiredRFQ[id] && !s.expireRFQ(r):
				s.failf("rfq.expired for %s (deadline %s, open %v, settling %q) at %s, which the contract does not allow", id, wireTime(r.Deadline), r.Open, r.Settling, wireTime(s.at))
			default:
				s.frame(id, to.ID)
				if s.expiredTo[id] == nil {
					put(&s.expiredTo, id, map[string]bool{})
				}
				s.expiredTo[id][to.ID] = true
			}
		case machine.EvQuoteCreated:
			d, ok := asQuote(e.Payload)
			q := m.st.Quotes[d.QuoteID]
			if !ok || q == nil {
				s.failf("quote.created to %s for %s, a quote that was never recorded", to.Hint, d.QuoteID)
				return
			}
			r := m.st.RFQs[q.RFQ]
			switch {
			case to.ID == q.Maker && s.recorded[q.ID]:
			case r != nil && to.ID == r.Taker && q.Anchored && s.anchoredNow(q.ID):
			default:
				s.failf("quote.created for %s to %s at this point (recorded now %v, anchored now %v)", q.ID, to.Hint, s.recorded[q.ID], s.anchoredNow(q.ID))
				return
			}
			if msg := m.checkQuoteDTO(d, q); msg != "" {
				s.failf("quote.created: %s", msg)
			}
		case machine.EvQuoteAnchored:
			s.anchored(e, to)
		case machine.EvQuoteStatus:
			s.quoteStatus(e, to)
		case machine.EvQuoteDeclined:
			s.quoteDeclined(e, to)
		case machine.EvMakerProtection:
			s.makerProtection(e, to)
		case machine.EvTradeStep:
			p, _ := e.Payload.(machine.TradeStepPayload)
			t := m.st.Trades[p.TradeID]
			if t == nil || t.Status != "settling" || (to.ID != t.Taker && to.ID != t.Maker) {
				s.failf("trade.step for %s to %s, not a settling trade of that party", p.TradeID, to.Hint)
			}
		case machine.EvTradeSettled:
			s.tradeSettled(e, to)
		case machine.EvTradeFailed:
			p, _ := e.Payload.(machine.TradeFailedPayload)
			t := m.st.Trades[p.TradeID]
			switch {
			case t == nil || (to.ID != t.Taker && to.ID != t.Maker):
				s.failf("trade.failed for %s to %s, not a trade of that party", p.TradeID, to.Hint)
			case t.Status == "settling" && p.Reason == reasonWindow && s.beforeWindowEnd(t):
				s.failf("trade.failed for %s (%s) at %s, before its settlement window ends at %s (the quote's validUntil + the action lifetime + the settlement grace)",
					t.ID, p.Reason, s.at.Format(time.RFC3339Nano), s.windowEnd(t).Format(time.RFC3339Nano))
			case t.Status == "settling":
				t.Status = "failed"
				m.scoreFailed(t, p.Reason)
				if r := m.st.RFQs[t.RFQ]; r != nil {
					r.Settling = ""
					put(&s.failedRFQ, r.ID, true)
					put(&s.failedTrade, r.ID, t.ID)
				}
				if q := m.st.Quotes[t.Quote]; q != nil {
					q.Settling = false
					put(&s.revoking, q.ID, true)
				}
			case t.Status != "failed" || !s.failedRFQ[t.RFQ]:
				s.failf("trade.failed for %s, which is %s", t.ID, t.Status)
			}
		case machine.EvSignRequested:
			x, ok := asAction(e.Payload)
			if !ok {
				s.failf("sign.requested to %s without a SignActionDto", to.Hint)
				return
			}
			if msg := s.checkActionDTO(x, to.ID, "", ""); msg != "" {
				s.failf("sign.requested: %s", msg)
				return
			}
			s.noteAction(x, to.ID)
		case machine.EvSignCompleted:
			p, _ := e.Payload.(machine.ActionIDPayload)
			x := m.st.Actions[p.ActionID]
			if x == nil || x.Party != to.ID {
				s.failf("sign.completed for %s to %s, not an action waiting on that party", p.ActionID, to.Hint)
				return
			}
			if q := m.st.Quotes[x.Quote]; q != nil && !x.Executed {
				q.Unsigned = true
			}
			delete(m.st.Actions, x.ID)
		case machine.EvHistoryRecorded:
			s.historyRecorded(e, to)
		}
	}
}

func rfqIDOf(v any) string {
	switch x := v.(type) {
	case machine.RfqIDPayload:
		return x.RfqID
	case *machine.RfqIDPayload:
		if x != nil {
			return x.RfqID
		}
	}
	return ""
}

func (s *step) frame(rfq, party string) {
	if s.rfqFrames[rfq] == nil {
		put(&s.rfqFrames, rfq, map[string]int{})
	}
	s.rfqFrames[rfq][party]++
}

// expireRFQ expires an RFQ if the contract allows it now: open, its deadline reached on a
// Tick (or when an accept or a settlement that held it open ended), no trade settling.
func (s *step) expireRFQ(r *RFQ) bool {
	_, tick := s.env.Input.(machine.Tick)
	if !r.Open || r.Settling != "" || r.Accepting != 0 || r.Deadline.After(s.at) {
		return false
	}
	if !tick && !s.failedRFQ[r.ID] && !s.undone[r.ID] {
		return false
	}
	r.Open, r.ClosedAt = false, s.at
	r.Forget = housekeepingAt(s.at.Add(s.m.st.Cfg.ClosedRetention))
	s.m.watch(r.Forget, dueForget, r.ID)
	put(&s.expiredRFQ, r.ID, true)
	return true
}

func (s *step) anchoredNow(q string) bool {
	return s.statusTo[q] != nil && s.statusTo[q]["anchored"] != ""
}

func (s *step) anchored(e machine.Event, to *Party) {
	m := s.m
	p, _ := e.Payload.(machine.QuoteAnchoredPayload)
	q := m.st.Quotes[p.QuoteID]
	if q == nil || to.ID != q.Maker {
		s.failf("quote.anchored for %s to %s, not a recorded quote of that maker", p.QuoteID, to.Hint)
		return
	}
	if q.Anchored || q.Status != "pending" {
		s.failf("quote.anchored for quote %s, which is %s (anchored %v)", q.ID, q.Status, q.Anchored)
		return
	}
	if q.Unsigned {
		s.failf("quote %s anchored though one of its allocate actions left the queue unsigned", q.ID)
		return
	}
	mk := m.party(q.Maker)
	if !mk.DeskSigned {
		for _, id := range q.Actions {
			if x := m.st.Actions[id]; x != nil && !x.Executed {
				s.failf("quote %s anchored while its allocate action %s was never executed", q.ID, id)
				return
			}
		}
	}
	if len(p.AnchorCids) != 2 {
		s.failf("quote %s anchored with %d allocations, not its 2", q.ID, len(p.AnchorCids))
		return
	}
	for _, c := range p.AnchorCids {
		if !strings.HasPrefix(c, "00") {
			s.failf("quote %s: anchor %q is not a contract id", q.ID, c)
			return
		}
	}
	q.Anchored = true
	q.Anchors = append([]string(nil), p.AnchorCids...)
	m.scoreAnchored(q, s.at)
	if s.statusTo[q.ID] == nil {
		put(&s.statusTo, q.ID, map[string]string{})
	}
	s.statusTo[q.ID]["anchored"] = "yes"
}

// quoteStatus judges a quote.status frame against SPEC's quote transition table.
func (s *step) quoteStatus(e machine.Event, to *Party) {
	m := s.m
	p, _ := e.Payload.(machine.QuoteStatusPayload)
	q := m.st.Quotes[p.QuoteID]
	if q == nil {
		s.failf("quote.status %s for %s to %s, a quote that was never recorded", p.Status, p.QuoteID, to.Hint)
		return
	}
	r := m.st.RFQs[q.RFQ]
	if p.RfqID != q.RFQ {
		s.failf("quote.status for %s names RFQ %s, not %s", q.ID, p.RfqID, q.RFQ)
		return
	}
	switch {
	case to.ID == q.Maker:
	case r != nil && to.ID == r.Taker && q.Anchored:
	default:
		s.failf("quote.status for %s sent to %s (the taker sees only quotes whose allocations landed)", q.ID, to.Hint)
		return
	}
	if s.statusTo[q.ID] == nil {
		put(&s.statusTo, q.ID, map[string]string{})
	}
	if prev := s.statusTo[q.ID][to.ID]; prev != "" {
		s.failf("quote.status for %s sent twice to %s (%s, then %s)", q.ID, to.Hint, prev, p.Status)
		return
	}
	s.statusTo[q.ID][to.ID] = p.Status
	if msg := s.disconnectReason(q, to, p); msg != "" {
		s.failf("%s", msg)
		return
	}
	if q.Status != "pending" {
		if q.Status == p.Status && s.statusSent[q.ID] {
			return // the same transition, told to its second recipient
		}
		s.failf("quote.status %s for quote %s, which is already %s", p.Status, q.ID, q.Status)
		return
	}
	ok := false
	switch p.Status {
	case "revoked":
		// Re-quote, DELETE, a failed settlement, or unsigned actions that expired (a quote
		// whose allocations never all landed).
		ok = s.revoking[q.ID] || s.mayRevoke[q.ID] || s.disconnecting[q.ID] || (!q.Anchored && !q.Settling)
	case "expired":
		ok = !q.Settling && (!q.ValidUntil.After(s.at) || s.expiredRFQ[q.RFQ]) && (q.Anchored || s.expiredRFQ[q.RFQ])
		if ok && s.expiredRFQ[q.RFQ] && !s.expiredTo[q.RFQ][to.ID] {
			// issue #18: rfq.expired goes before the quote.status expired frames of its quotes
			s.failf("quote.status expired for %s reached %s before rfq.expired for %s", q.ID, to.Hint, q.RFQ)
			return
		}
	case "cancelled":
		ok = s.cancelled[q.RFQ]
	case "lost":
		w, filled := s.filled[q.RFQ]
		ok = filled && w != q.ID
	case "won":
		ok = s.filled[q.RFQ] == q.ID
	}
	if !ok {
		s.failf("quote.status %s for quote %s (pending, anchored %v, settling %v, validUntil %s) is not a transition the contract allows now", p.Status, q.ID, q.Anchored, q.Settling, wireTime(q.ValidUntil))
		return
	}
	q.Status = p.Status
	if p.Status == "revoked" && s.disconnecting[q.ID] {
		q.RevokeReason = reasonDisconnect
	}
	if p.Status == "revoked" && s.protecting[q.ID] {
		q.RevokeReason = reasonProtection
	}
	if p.Status == "revoked" {
		s.scoreRevoked(q)
	}
	q.Settling = false
	put(&s.statusSent, q.ID, true)
}

func (s *step) tradeSettled(e machine.Event, to *Party) {
	m := s.m
	d, ok := asTrade(e.Payload)
	t := m.st.Trades[d.TradeID]
	if !ok || t == nil || (to.ID != t.Taker && to.ID != t.Maker) {
		s.failf("trade.settled for %s to %s, not a trade of that party", d.TradeID, to.Hint)
		return
	}
	if s.settledTo[t.ID] == nil {
		put(&s.settledTo, t.ID, map[string]bool{})
	}
	if s.settledTo[t.ID][to.ID] {
		s.failf("trade.settled for %s sent twice to %s", t.ID, to.Hint)
		return
	}
	s.settledTo[t.ID][to.ID] = true
	r, q := m.st.RFQs[t.RFQ], m.st.Quotes[t.Quote]
	switch {
	case t.Status == "settling":
		t.Status, t.SettledAt, t.UpdateID = "settled", s.at, d.Ledger.UpdateID
		m.scoreSettled(t)
		r.Settling, r.Open, r.ClosedAt = "", false, s.at
		r.Forget = housekeepingAt(s.at.Add(m.st.Cfg.ClosedRetention))
		m.watch(r.Forget, dueForget, r.ID)
		put(&s.filled, r.ID, q.ID)
		for _, id := range []string{t.Taker, t.Maker} {
			if p := m.party(id); p != nil {
				p.Trades = appendBounded(p.Trades, t.ID, m.st.Cfg.HistoryRetention)
			}
		}
	case t.Status != "settled" || s.filled[r.ID] != q.ID:
		s.failf("trade.settled for %s, which is %s", t.ID, t.Status)
		return
	}
	if msg := m.checkTradeDTO(d, t, r, q); msg != "" {
		s.failf("trade.settled: %s", msg)
	}
}

func (s *step) historyRecorded(e machine.Event, to *Party) {
	m := s.m
	d, _ := e.Payload.(machine.RfqHistoryDTO)
	r := m.st.RFQs[d.RfqID]
	if r == nil || r.Taker != to.ID {
		s.failf("history.recorded for %s to %s, who did not take it", d.RfqID, to.Hint)
		return
	}
	got := s.history[r.ID]
	if got == nil {
		got = map[string]bool{}
		put(&s.history, r.ID, got)
	}
	kind := d.Kind
	allowedNow := (kind == "cancelled" && s.cancelled[r.ID]) || (kind == "failed" && s.failedRFQ[r.ID]) || (kind == "expired" && s.expiredRFQ[r.ID])
	if !allowedNow || got[kind] {
		s.failf("history.recorded %q for %s, which the contract does not record now (cancelled %v, failed %v, expired %v, recorded already %v)", kind, r.ID, s.cancelled[r.ID], s.failedRFQ[r.ID], s.expiredRFQ[r.ID], got[kind])
		return
	}
	if !strings.HasPrefix(d.ID, "h_") {
		s.failf("history row id %q lacks the h_ prefix", d.ID)
		return
	}
	h := m.historyRow(r, d.ID, kind, s.at)
	if kind == "failed" {
		if t := m.st.Trades[s.failedTrade[r.ID]]; t != nil {
			h.Maker = m.hintOf(t.Maker)
		}
	}
	if msg := checkHistoryDTO(d, h); msg != "" {
		s.failf("history.recorded: %s", msg)
		return
	}
	got[kind] = true
	to.History = appendBounded(to.History, h, m.st.Cfg.HistoryRetention)
}

// historyRow is the row the contract determines: the count of quotes the taker saw, the
// best of their prices (highest when the taker sells, lowest when it buys).
func (m *Model) historyRow(r *RFQ, id, kind string, at time.Time) History {
	h := History{ID: id, RFQ: r.ID, Kind: kind, At: at}
	var best *big.Rat
	for _, qid := range r.Quotes {
		q := m.st.Quotes[qid]
		if q == nil || !q.Anchored {
			continue
		}
		h.QuoteCount++
		p, _ := parseDec(q.Price)
		if best == nil || (r.Sell && p.Cmp(best) > 0) || (!r.Sell && p.Cmp(best) < 0) {
			best = p
		}
	}
	if best != nil {
		h.BestPrice = mustFormat(best)
	}
	return h
}

func checkHistoryDTO(d machine.RfqHistoryDTO, h History) string {
	best := ""
	if d.BestPrice != nil {
		best = decStr(*d.BestPrice)
	}
	switch {
	case d.ID != h.ID || d.RfqID != h.RFQ || d.Kind != h.Kind:
		return fmt.Sprintf("row %s of %s is %s, not row %s %s", d.ID, d.RfqID, d.Kind, h.ID, h.Kind)
	case d.QuoteCount != h.QuoteCount:
		return fmt.Sprintf("row %s of %s: quoteCount %d, not %d (the quotes the taker saw)", d.ID, h.RFQ, d.QuoteCount, h.QuoteCount)
	case best != h.BestPrice:
		return fmt.Sprintf("row %s of %s: bestPrice %q, not %q", d.ID, h.RFQ, best, h.BestPrice)
	case h.Kind == "failed" && d.Maker != h.Maker:
		return fmt.Sprintf("row %s of %s: maker %q, not %q", d.ID, h.RFQ, d.Maker, h.Maker)
	case !sameTime(d.At, h.At):
		return fmt.Sprintf("row %s of %s: at %s, not %s", d.ID, h.RFQ, wireTime(time.Time(d.At)), wireTime(h.At))
	}
	return ""
}

// reasonWindow is the reason a trade.failed gives when the settlement window closed.
const reasonWindow = "the settlement window expired"

// windowEnd is when an accepted trade fails if still unsettled: the quote's validUntil +
// the action lifetime + the settlement grace (the configuration's "about 11 minutes").
func (s *step) windowEnd(t *Trade) time.Time {
	q := s.m.st.Quotes[t.Quote]
	if q == nil {
		return time.Time{}
	}
	return q.ValidUntil.Add(s.m.st.Cfg.ActionLifetime + s.m.st.Cfg.SettlementGrace)
}

// beforeWindowEnd reports whether the trade's settlement window is still open now.
func (s *step) beforeWindowEnd(t *Trade) bool {
	end := s.windowEnd(t)
	return !end.IsZero() && s.at.Before(end)
}
