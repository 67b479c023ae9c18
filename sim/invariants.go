package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Class is a failure class; each has its own exit status in cmd/sim.
type Class int

// Failure classes.
const (
	Safety        Class = 2 // an invariant broke
	Liveness      Class = 3 // something did not finish by its deadline
	CrashRecovery Class = 4 // recovery failed or lost an acknowledged write
	Coverage      Class = 5 // a long run never reached a situation it must reach
)

// String names the class.
func (c Class) String() string {
	switch c {
	case Safety:
		return "safety"
	case Liveness:
		return "liveness"
	case CrashRecovery:
		return "crash-recovery"
	case Coverage:
		return "coverage"
	}
	return fmt.Sprintf("class-%d", int(c))
}

// Failure is the first violation a run met.
type Failure struct {
	Class   Class     `json:"class"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`   // virtual time
	Step    uint64    `json:"step"` // events processed before it
}

// Error renders the failure.
func (f *Failure) Error() string {
	return fmt.Sprintf("%s violation at step %d (%s): %s", f.Class, f.Step, f.At.Format(time.RFC3339Nano), f.Message)
}

// machineryPrefixes begin the messages of failures of the simulator's own machinery: an
// encoding, a snapshot or a prune of its in-memory journals or of the judge (sim.go,
// judge.go). A trace does not replay them (TRACE.md): the replay has no such machinery.
var machineryPrefixes = []string{"encode ", "save desk snapshot:", "prune desk journal:", "snapshot the judge ",
	"snapshot the ledger:", "save the ledger snapshot:", "prune the ledger journal:"}

// Machinery reports whether the failure is one of the simulator's own machinery rather
// than of the desk: a planted bug that breaks the journals can make one.
func (f *Failure) Machinery() bool {
	for _, p := range machineryPrefixes {
		if strings.HasPrefix(f.Message, p) {
			return true
		}
	}
	return false
}

// failf records the first failure; the run stops after the current step.
func (s *Sim) failf(c Class, format string, args ...any) {
	if s.failure != nil {
		return
	}
	s.noteFailedRead()
	s.failure = &Failure{Class: c, Message: fmt.Sprintf(format, args...), At: s.now, Step: s.steps}
}

// validStatus are the statuses the machine may answer with.
var validStatus = map[int]bool{200: true, 202: true, 204: true, 400: true, 401: true, 403: true, 404: true,
	409: true, 410: true, 422: true, 501: true, 502: true, 503: true} // 422: a reused Idempotency-Key

// checkReply: a reply has a known status, and a refusal says why.
func (s *Sim) checkReply(r machine.Reply) {
	s.stats.Checks++
	if !validStatus[r.Status] || (r.Err != nil) != (r.Status >= 400) || (r.Err != nil && (r.Err.Status != r.Status || r.Err.Message == "")) {
		s.failf(Safety, "reply to input %d has status %d and %s", r.Seq, r.Status, describeAPIError(r.Err))
	}
}

// observation is what observeBefore saw of the desk before an input.
type observation struct {
	contKind   machine.ContKind
	contEntity string
	expired    []string // pending actions an ExecuteActions names that are past their deadline
	replaced   string   // the maker's pending quote a SubmitQuote replaces
}

// observeBefore looks at the desk just before an input, for coverage.
func (s *Sim) observeBefore(env machine.Envelope) observation {
	d := s.desk
	var o observation
	input := env.Input
	if w, ok := input.(machine.Idempotent); ok {
		input = w.Cmd // what it would run; observeAfter looks only if it ran
	}
	switch in := input.(type) {
	case machine.LedgerResult:
		if c := d.Pending[in.CommandID]; c != nil {
			o.contKind, o.contEntity = c.Kind, c.Entity
			if c.Kind == "execute" && in.Failure == nil {
				x := d.Actions[c.Entity]
				if x != nil && x.Flow == machine.FlowQuote {
					if q := d.Quotes[x.FlowID]; q != nil && q.State != machine.QuoteFunding {
						s.cov.hit(covAllocLandedAfterQuoteEnded)
					}
				}
			}
		}
	case machine.Tick:
		for _, x := range d.Actions {
			if x.State == machine.ActionExecuting && x.Flow == machine.FlowQuote {
				if q := d.Quotes[x.FlowID]; q != nil && q.State == machine.QuoteFunding && !q.ValidUntil.After(env.At) {
					s.cov.hit(covQuoteExpiredWhileLanding)
				}
			}
			if x.Flow == machine.FlowTrade && !x.ExpiresAt.After(env.At) {
				if t := d.Trades[x.FlowID]; t != nil && t.State == machine.TradeAllocating && t.WindowEnds.After(env.At) {
					s.cov.hit(covActionExpiredWhileSettling)
				}
			}
		}
	case machine.SubmitQuote:
		maker, _ := d.Caller(in.Req.KeyHash)
		if r := d.RFQs[in.RFQID]; r != nil && maker != "" {
			for i := len(r.Quotes) - 1; i >= 0; i-- {
				if q := d.Quotes[r.Quotes[i]]; q != nil && q.Maker == maker {
					if q.State == machine.QuoteFunding || q.State == machine.QuoteLive {
						o.replaced = q.ID
					}
					break
				}
			}
		}
	case machine.ExecuteActions:
		for _, e := range in.Entries {
			if x := d.Actions[e.ActionID]; x != nil && x.State == machine.ActionPending && !x.ExpiresAt.After(env.At) {
				o.expired = append(o.expired, x.ID)
			}
		}
	case machine.AcceptQuote:
		if q := d.Quotes[in.QuoteID]; q != nil {
			if r := d.RFQs[q.RFQ]; r != nil && len(r.Quotes) > 0 {
				for _, id := range r.Quotes {
					if n := d.Quotes[id]; n != nil && id != q.ID && n.Maker == q.Maker && n.CreatedAt.After(q.CreatedAt.Add(-time.Nanosecond)) && n.State == machine.QuoteFunding {
						s.cov.hit(covAcceptRacesReplacement)
						break
					}
				}
			}
			if q.State == machine.QuoteRevoked {
				s.cov.hit(covAcceptRacesReplacement)
			}
		}
	}
	return o
}

// observeAfter checks an input's outputs: events addressed only to parties they concern,
// settled trades with their ledger update, failed trades with nothing moved; and counts.
func (s *Sim) observeAfter(env machine.Envelope, out machine.Outputs, o observation) {
	d := s.desk
	// Every allocation the input asks of the ledger points the way the documents say, as
	// the desk issues it (a replayed trace checks it too).
	for _, c := range out.Calls {
		s.checkAllocationSide(c)
	}
	input := env.Input
	if w, ok := input.(machine.Idempotent); ok {
		input = nil
		if s.ranFresh(w, env.Seq) {
			input = w.Cmd
		}
	}
	switch in := input.(type) {
	case machine.AcceptQuote:
		// The trade an accept made is watched by checkDesk from now on.
		if q := d.Quotes[in.QuoteID]; q != nil {
			if r := d.RFQs[q.RFQ]; r != nil && r.SettlingTrade != "" && !s.watching(r.SettlingTrade) {
				if t := d.Trades[r.SettlingTrade]; t != nil {
					s.liveTrades = append(s.liveTrades, liveTrade{id: t.ID, t: t, r: r, q: d.Quotes[t.Quote]})
				}
			}
		}
	case machine.ExecuteActions:
		// No action executes after its deadline.
		for _, id := range o.expired {
			if x := d.Actions[id]; x != nil && x.State == machine.ActionExecuting {
				s.failf(Safety, "action %s expired at %s but went to the ledger at %s", id,
					x.ExpiresAt.Format(time.RFC3339Nano), env.At.Format(time.RFC3339Nano))
			}
		}
	case machine.SubmitQuote:
		if r := d.RFQs[in.RFQID]; r != nil && len(r.Quotes) > 0 {
			q := d.Quotes[r.Quotes[len(r.Quotes)-1]]
			if q != nil && q.PendingCancels > 0 && q.CreatedAt.Equal(env.At) {
				s.cov.hit(covReplacementWaitsCancel)
			}
			if q != nil && o.replaced != "" && q.ID != o.replaced && q.CreatedAt.Equal(env.At) {
				s.checkReplacement(q, d.Quotes[o.replaced], out.Calls)
			}
		}
	case machine.Boot:
		for _, c := range out.Calls {
			if s.lost[c.CommandID] {
				s.cov.hit(covLostAnswerReissued)
				delete(s.lost, c.CommandID)
			}
			if _, done := s.ledger.L.CommandResult(c.ActAs, c.CommandID); done {
				s.cov.hit(covReissueDeduplicated)
			}
		}
	}
	for _, e := range out.Events {
		s.checkEvent(e)
	}
	for _, c := range out.Calls {
		if c.Command != nil && c.Command.Settle != nil {
			s.checkSettle(c)
		}
	}
}

// checkSettle: a trade's settle moves what the trade says — the fee to the fee party
// when the trade has one, and nothing it does not have.
func (s *Sim) checkSettle(c machine.LedgerCall) {
	s.stats.Checks++
	t := s.desk.Trades[strings.TrimSuffix(c.CommandID, ":settle")]
	if t == nil {
		return
	}
	var fee money.Decimal
	fees := 0
	for _, l := range c.Command.Settle.Legs {
		if l.Receiver == s.cfg.FeeParty {
			fee, fees = l.Amount, fees+1
		}
	}
	switch {
	case t.Amounts.Fee.Sign() > 0 && (fees != 1 || fee.Cmp(t.Amounts.Fee) != 0):
		s.failf(Safety, "trade %s owes a fee of %s but its settle moves %d fee legs to the fee party (%s in all)", t.ID, t.Amounts.Fee, fees, fee)
	case t.Amounts.Fee.Sign() == 0 && fees != 0:
		s.failf(Safety, "trade %s owes no fee but its settle moves one", t.ID)
	}
}

// checkEvent: the event concerns its party, and trade outcomes match the ledger.
func (s *Sim) checkEvent(e machine.Event) {
	d := s.desk
	s.stats.Checks++
	party := d.Parties[e.Party]
	if party == nil {
		s.failf(Safety, "%s event addressed to unknown party %s", e.Type, e.Party)
		return
	}
	hint := party.Hint
	// A frame a resume replays (addressed to one socket, numbered) is history: it was
	// checked when it was sent live, and the model checks it is the same frame again. Only
	// whom it concerns is checked again; the checks of what it announces now are not.
	if e.Socket != 0 && e.Seq != 0 {
		s.checkReplayedEvent(e, hint)
		return
	}
	quoteConcerns := func(qid string) bool {
		q := d.Quotes[qid]
		if q == nil {
			return true // forgotten already; nothing to compare
		}
		r := d.RFQs[q.RFQ]
		return q.Maker == e.Party || (r != nil && r.Taker == e.Party && q.Anchored)
	}
	rfqConcerns := func(id string) bool {
		r := d.RFQs[id]
		return r == nil || r.Taker == e.Party || slices.Contains(r.Invited, e.Party)
	}
	ok := true
	switch p := e.Payload.(type) {
	case machine.RfqDTO:
		ok = slices.Contains(p.InvitedMakers, hint) || p.Taker == hint
	case machine.RfqIDPayload:
		ok = rfqConcerns(p.RfqID)
		if e.Type == machine.EvRfqExpired {
			if r := d.RFQs[p.RfqID]; r != nil && r.Taker == e.Party {
				s.stats.RFQsExpired++
			}
		}
	case machine.QuoteDTO:
		ok = p.Maker == hint || quoteConcerns(p.QuoteID)
		if e.Type == machine.EvQuoteCreated && p.Maker == hint && e.Socket == 0 {
			s.stats.Quotes++
		}
	case machine.QuoteStatusPayload:
		ok = quoteConcerns(p.QuoteID)
		if q := d.Quotes[p.QuoteID]; q != nil && q.Maker == e.Party && p.Status == "expired" {
			s.stats.QuotesExpired++
		}
	case machine.QuoteAnchoredPayload:
		ok = quoteConcerns(p.QuoteID)
		s.stats.QuotesAnchored++
		// The quote becomes visible to its taker now: its allocations must be on the ledger.
		s.checkAnchors(p.QuoteID, p.AnchorCids)
	case machine.TradeDTO:
		ok = p.Taker == hint || p.Maker == hint
		if e.Type == machine.EvTradeSettled && p.Taker == hint {
			s.tradeSettled(p)
		}
	case machine.TradeStepPayload:
		t := d.Trades[p.TradeID]
		ok = t == nil || t.Taker == e.Party || t.Maker == e.Party
	case machine.TradeFailedPayload:
		t := d.Trades[p.TradeID]
		ok = t == nil || t.Taker == e.Party || t.Maker == e.Party
		if t != nil && t.Taker == e.Party {
			s.tradeFailed(p)
		}
	case machine.SignActionDTO:
		x := d.Actions[p.ID]
		ok = x == nil || x.Party == e.Party
	case machine.RfqHistoryDTO:
		ok = rfqConcerns(p.RfqID)
	}
	if !ok {
		s.failf(Safety, "%s event sent to %s, whom it does not concern: %s", e.Type, hint, wireJSON(e.Payload))
	}
}

// tradeSettled: the desk calls the trade settled; the ledger must hold its settle update
// with every leg.
func (s *Sim) tradeSettled(p machine.TradeDTO) {
	s.stats.TradesSettled++
	s.cov.hit(covTradeSettled)
	u, ok := s.ledger.L.CommandResult(s.desk.Cfg.Operator, p.TradeID+":settle")
	t := s.desk.Trades[p.TradeID]
	if ok {
		s.settleTimes[p.TradeID] = u.RecordTime
	}
	switch {
	case !ok:
		s.failf(Safety, "trade %s settled at the desk but the ledger has no settle update", p.TradeID)
	case u.UpdateID != p.Ledger.UpdateID:
		s.failf(Safety, "trade %s settled with update %s but the ledger's settle is %s", p.TradeID, p.Ledger.UpdateID, u.UpdateID)
	case t != nil && len(u.Receipts) != len(s.legs(t)):
		s.failf(Safety, "trade %s settle moved %d legs, the trade has %d", p.TradeID, len(u.Receipts), len(s.legs(t)))
	case !slices.Equal(u.Receipts, p.Ledger.ReceiptCids):
		s.failf(Safety, "trade %s receipts [%s] differ from the ledger's [%s]", p.TradeID, strings.Join(p.Ledger.ReceiptCids, ", "), strings.Join(u.Receipts, ", "))
	}
}

// legs counts a trade's movements as the desk builds its settle: base, quote and the fee.
func (s *Sim) legs(t *machine.Trade) []struct{} {
	n := 2
	if t.Amounts.Fee.Sign() > 0 {
		n = 3
	}
	return make([]struct{}, n)
}

// tradeFailed: nothing moved.
func (s *Sim) tradeFailed(p machine.TradeFailedPayload) {
	s.stats.TradesFailed[p.Reason]++
	s.cov.hit(covTradeFailed)
	if _, ok := s.ledger.L.CommandResult(s.desk.Cfg.Operator, p.TradeID+":settle"); ok {
		s.failf(Safety, "trade %s failed at the desk (%s) but the ledger settled it", p.TradeID, p.Reason)
	}
}

// checkRead: a read for party A shows only A's things.
func (s *Sim) checkRead(party string, rep machine.Reply) {
	if rep.Err != nil || party == "" {
		return
	}
	s.stats.Checks++
	d := s.desk
	p := d.Parties[party]
	if p == nil {
		return
	}
	bad := func(what string, args ...any) {
		s.failf(Safety, "a read of %s shows "+what, append([]any{p.Hint}, args...)...)
	}
	switch body := rep.Body.(type) {
	case []machine.RfqDTO:
		for _, r := range body {
			if r.Taker != p.Hint {
				bad("RFQ %s of %s", r.RfqID, r.Taker)
			}
			if r.Quotes != nil {
				for _, q := range *r.Quotes {
					if q.RfqID != r.RfqID {
						bad("quote %s of RFQ %s under RFQ %s", q.QuoteID, q.RfqID, r.RfqID)
					}
					if dq := d.Quotes[q.QuoteID]; dq == nil || !dq.Anchored {
						bad("quote %s before its allocations landed", q.QuoteID)
					}
				}
			}
		}
	case []machine.IncomingRfqDTO:
		for _, r := range body {
			if !slices.Contains(r.InvitedMakers, p.Hint) {
				bad("RFQ %s it is not invited to", r.RfqID)
			}
			if r.MyQuote != nil && r.MyQuote.Maker != p.Hint {
				bad("quote %s of %s as its own", r.MyQuote.QuoteID, r.MyQuote.Maker)
			}
		}
	case machine.ActionsDTO:
		for _, x := range body.Actions {
			if dx := d.Actions[x.ID]; dx != nil && dx.Party != party {
				bad("action %s of %s", x.ID, dx.Party)
			}
		}
	case []machine.TradeDTO:
		for _, t := range body {
			if t.Taker != p.Hint && t.Maker != p.Hint {
				bad("trade %s between %s and %s", t.TradeID, t.Taker, t.Maker)
			}
		}
	case []machine.RfqHistoryDTO:
		for _, h := range body {
			if r := d.RFQs[h.RfqID]; r != nil && r.Taker != party {
				bad("history row of RFQ %s of another taker", h.RfqID)
			}
		}
	}
}

// checkDesk runs the desk's invariants after a step that changed it.
func (s *Sim) checkDesk() {
	d := s.desk
	s.stats.Checks++
	s.checkCoinSelection() // coinsel.go
	// At most one trade settles per RFQ, and it is the one the RFQ names (the second
	// implies the first: an RFQ names one trade).
	// An accept whose answer waits for the taker's prepares leaves the quote live until then.
	clear(s.accepting)
	for _, h := range d.Held {
		if h.Kind == "trade.prepare" {
			s.accepting[h.Entity] = true
		}
	}
	// The desk keeps thousands of finished trades (HistoryRetention per party), so the
	// trades an accept made are watched on their own, and every fullTradeScanEvery desk
	// steps all of them are: a trade that appeared some other way is caught by that scan.
	s.deskSteps++
	// Between full scans a watched trade, its RFQ and its quote are read through the
	// pointers the desk's maps held when the trade was found, and looked up again only
	// before a failure is reported; a full scan looks every one up, so an entity the desk
	// dropped or replaced is noticed within fullTradeScanEvery steps.
	watched := s.liveTrades
	if s.tradesStale || s.deskSteps%fullTradeScanEvery == 0 {
		s.tradesStale = false
		watched = make([]liveTrade, 0, len(s.liveTrades))
		for id, t := range d.Trades {
			if t.State == machine.TradeAllocating || t.State == machine.TradeSettling {
				watched = append(watched, liveTrade{id: id, t: t, r: d.RFQs[t.RFQ], q: d.Quotes[t.Quote]})
			}
		}
		slices.SortFunc(watched, func(a, b liveTrade) int { return strings.Compare(a.id, b.id) })
	}
	// Filtered in place: an entry is written at or before where it was read, and only once
	// an earlier one was dropped (rewriting pointers costs write barriers).
	live := watched[:0]
	for i, lt := range watched {
		if !lt.inFlight() {
			continue
		}
		if problem := s.tradeProblem(lt); problem != "" {
			// Confirm against the maps before failing: an accept undone drops its trade
			// and frees its RFQ, which only a lookup tells.
			cur := d.Trades[lt.id]
			if cur == nil {
				continue
			}
			lt = liveTrade{id: lt.id, t: cur, r: d.RFQs[cur.RFQ], q: d.Quotes[cur.Quote]}
			if !lt.inFlight() {
				continue
			}
			if problem = s.tradeProblem(lt); problem != "" {
				s.failf(Safety, "%s", problem)
				return
			}
		}
		if len(live) != i || lt != watched[i] {
			live = append(live, lt)
		} else {
			live = live[:i+1]
		}
	}
	s.liveTrades = live
	// A quote the taker sees has landed: every live one's allocations exist on the ledger.
	// The quote.anchored event checks this as the quote becomes visible (checkEvent); a
	// taker's whole view is read back every readCheckEvery desk steps, one taker in turn
	// (a read walks every retained RFQ), and the takers' own reads are
	// checked as they happen.
	if s.replaying {
		return // ReplayTrace checks the deadlines itself, at the failure's time
	}
	if s.deskSteps%readCheckEvery != 0 {
		if s.steps%overdueCheckEvery == 0 {
			s.checkOverdue()
		}
		return
	}
	s.checkTurn++
	takers := s.actors[s.k.Makers:]
	for _, a := range []*actor{takers[s.checkTurn%uint64(len(takers))]} {
		if a.reg != regDone {
			continue
		}
		rep := machine.Read(d, s.now, a.keyHash, machine.QRfqMine{})
		if rep.Err != nil {
			continue
		}
		s.beginRead(readTakerView, s.now, a.keyHash, machine.QRfqMine{}, rep)
		s.checkTakerView(a.party, rep)
		s.endRead()
		if s.failure != nil {
			return
		}
	}
	// Every deadline fires on time (a desk never sweeps; a Tick must come).
	if s.steps%overdueCheckEvery == 0 {
		s.checkOverdue()
	}
}

// checkTakerView: a taker's view of its RFQs shows only its own things, and every quote it
// shows as pending has its allocations on the ledger.
func (s *Sim) checkTakerView(party string, rep machine.Reply) {
	s.checkRead(party, rep)
	for _, r := range rep.Body.([]machine.RfqDTO) {
		for _, q := range *r.Quotes {
			if q.Status != "pending" || q.Settling {
				continue
			}
			for _, cid := range q.AnchorCids {
				if _, err := s.ledger.L.Allocation(cid); err != nil {
					s.failf(Safety, "quote %s is visible to its taker but allocation %s is not on the ledger: %v", q.QuoteID, cid, err)
					return
				}
			}
		}
	}
}

// checkReplacement: a quote's allocations are prepared only once the maker's quote it
// replaced holds no allocation on the ledger any more (a replacement never locks the
// maker's funds twice).
func (s *Sim) checkReplacement(q, old *machine.Quote, calls []machine.LedgerCall) {
	prepares := false
	for _, c := range calls {
		if c.Op == machine.OpPrepare {
			prepares = true
		}
	}
	if !prepares {
		return
	}
	s.stats.Checks++
	if old == nil {
		return
	}
	for _, al := range old.Allocations {
		if al.CID == "" {
			continue
		}
		if _, err := s.ledger.L.Allocation(al.CID); err == nil {
			s.failf(Safety, "quote %s is funded while allocation %s of the quote %s it replaced is still on the ledger", q.ID, al.CID, old.ID)
			return
		}
	}
}

// liveTrade is a trade checkDesk watches, with its RFQ and quote as the desk's maps held
// them when it was found.
type liveTrade struct {
	id string
	t  *machine.Trade
	r  *machine.RFQ
	q  *machine.Quote
}

// inFlight reports whether the trade is allocating or settling.
func (lt liveTrade) inFlight() bool {
	return lt.t.State == machine.TradeAllocating || lt.t.State == machine.TradeSettling
}

// tradeProblem says how a trade in flight breaks the settlement invariants, or "": its RFQ
// is open and names it, and its quote is settling (or, while the accept waits on the
// taker's prepares, still live; a replacement or expiry then makes the accept fail).
func (s *Sim) tradeProblem(lt liveTrade) string {
	t := lt.t
	if r := lt.r; r == nil || r.SettlingTrade != lt.id || r.State != machine.RFQOpen {
		return fmt.Sprintf("trade %s settles on RFQ %s which does not name it", lt.id, t.RFQ)
	}
	q := lt.q
	if len(s.accepting) > 0 && s.accepting[lt.id] {
		if q == nil || q.State != machine.QuoteLive {
			s.cov.hit(covAcceptRacesReplacement)
		}
		return ""
	}
	if q == nil {
		return fmt.Sprintf("trade %s (%s) settles on quote %s, which the desk does not have", lt.id, t.State, t.Quote)
	}
	if q.State != machine.QuoteSettling {
		return fmt.Sprintf("trade %s (%s) settles on quote %s, which is %s, not settling", lt.id, t.State, t.Quote, q.State)
	}
	return ""
}

// watching reports whether checkDesk already watches trade id.
func (s *Sim) watching(id string) bool {
	for _, lt := range s.liveTrades {
		if lt.id == id {
			return true
		}
	}
	return false
}

// readCheckEvery is how many desk-changing steps pass between full reads of one taker's
// view in checkDesk.
const readCheckEvery = 128

// fullTradeScanEvery is how many desk-changing steps pass between checkDesk's walks over
// every trade the desk keeps (between them it walks the trades accepts made).
const fullTradeScanEvery = 1024

// overdueCheckEvery is how many steps pass between checkOverdue's walks over every
// retained entity (about three simulated seconds in the standard scenario, next to the
// five seconds of overdueSlack; an overdue entity stays overdue, so it is caught anyway).
const overdueCheckEvery = 512

// checkAnchors: a quote about to be shown to its taker has every allocation on the ledger.
func (s *Sim) checkAnchors(quoteID string, cids []string) {
	s.stats.Checks++
	for _, cid := range cids {
		if _, err := s.ledger.L.Allocation(cid); err != nil {
			s.failf(Safety, "quote %s is anchored (visible to its taker) but allocation %s is not on the ledger: %v", quoteID, cid, err)
			return
		}
	}
}

// overdueSlack is how late an entity may finish after its deadline.
const overdueSlack = 5 * time.Second

// checkOverdue fails the run when something outlived its deadline.
func (s *Sim) checkOverdue() {
	d := s.desk
	late := s.now.Add(-overdueSlack)
	// Each walk names the smallest overdue id, not the first the map yields, so that a
	// replay of the trace names the same one.
	if id, r, ok := firstID(d.RFQs, func(r *machine.RFQ) bool {
		return r.State == machine.RFQOpen && r.SettlingTrade == "" && r.Deadline.Before(late)
	}); ok {
		s.failf(Liveness, "RFQ %s still open %s after its deadline", id, s.now.Sub(r.Deadline))
		return
	}
	if id, q, ok := firstID(d.Quotes, func(q *machine.Quote) bool {
		return (q.State == machine.QuoteFunding || q.State == machine.QuoteLive) && q.ValidUntil.Before(late)
	}); ok {
		s.failf(Liveness, "quote %s still %s %s after its validUntil", id, q.State, s.now.Sub(q.ValidUntil))
		return
	}
	for _, lt := range s.liveTrades { // complete as of the last full scan, see checkDesk
		if t := lt.t; t.State == machine.TradeAllocating && t.WindowEnds.Before(late) {
			s.failf(Liveness, "trade %s still allocating %s after its window", lt.id, s.now.Sub(t.WindowEnds))
			return
		}
	}
	if id, x, ok := firstID(d.Actions, func(x *machine.Action) bool {
		return x.State == machine.ActionPending && x.ExpiresAt.Before(late)
	}); ok {
		s.failf(Liveness, "action %s still pending %s after it expired", id, s.now.Sub(x.ExpiresAt))
		return
	}
	if id, r, ok := firstID(d.Registrations, func(r *machine.Registration) bool {
		return r.State == machine.RegAwaiting && r.ExpiresAt.Before(late)
	}); ok {
		s.failf(Liveness, "registration %s still awaiting signatures %s after it expired", id, s.now.Sub(r.ExpiresAt))
		return
	}
}

// firstID returns the smallest key of m whose value is bad, and that value: a failure
// names the same entity in every run of a seed and in every replay of its trace, whatever
// order the map yields.
func firstID[V any](m map[string]V, bad func(V) bool) (string, V, bool) {
	var id string
	var val V
	found := false
	for k, v := range m {
		if bad(v) && (!found || k < id) {
			id, val, found = k, v, true
		}
	}
	return id, val, found
}

// checkAcknowledged: after a crash, every reply an actor received is reflected in the
// recovered desk — its input is in the durable journal, keys work, acknowledged RFQs,
// quotes, trades and registrations exist (unless the desk had forgotten them anyway).
// What the actors know is taken down as an observation (ackObservation), which a failure's
// trace carries so that a replay checks it against the recovered desk the same way.
func (s *Sim) checkAcknowledged(pre *machine.Desk) {
	s.stats.Checks++
	obs := ackObservation{MaxAcked: s.maxAcked}
	for _, a := range s.actors {
		o := ackActor{Name: a.name, Hint: a.hint, Party: a.party}
		if a.reg == regDone && a.role != roleHouse {
			o.KeyHashes = append(o.KeyHashes, a.keyHash)
			for _, k := range a.candidates {
				o.KeyHashes = append(o.KeyHashes, hashKey(k))
			}
		}
		for _, w := range a.acked {
			if ackedExists(pre, w.kind, w.id) { // the desk had not forgotten it before the crash
				o.Writes = append(o.Writes, ackWrite{Kind: w.kind, ID: w.id})
			}
		}
		if len(o.KeyHashes) > 0 || len(o.Writes) > 0 {
			obs.Actors = append(obs.Actors, o)
		}
	}
	s.tape.ack = &obs
	if s.checkAckObservation(obs, s.deskLog.LastSeq()); s.failure != nil {
		return
	}
	s.tape.ack = nil
	// The key that works is the actor's from now on; what was checked is done with.
	for _, a := range s.actors {
		if a.reg == regDone && a.role != roleHouse {
			for _, k := range append([]string{a.key}, a.candidates...) {
				if id, ok := s.desk.Caller(hashKey(k)); ok && id == a.party {
					a.key, a.keyHash = k, hashKey(k)
					break
				}
			}
			a.candidates = nil
		}
		a.acked = a.acked[:0]
	}
}

// checkAckObservation checks what the actors knew before a crash against the recovered desk
// and the last record of its recovered journal.
func (s *Sim) checkAckObservation(obs ackObservation, last uint64) {
	if obs.MaxAcked > last {
		s.failf(CrashRecovery, "a reply to input %d was received, but the recovered journal ends at %d", obs.MaxAcked, last)
		return
	}
	d := s.desk
	for _, a := range obs.Actors {
		if len(a.KeyHashes) > 0 {
			works := false
			for _, h := range a.KeyHashes {
				if id, ok := d.Caller(h); ok && id == a.Party {
					works = true
					break
				}
			}
			if !works {
				s.failf(CrashRecovery, "the acknowledged API key of %s (%s) does not work after recovery", a.Name, a.Hint)
				return
			}
		}
		for _, w := range a.Writes {
			if !ackedExists(d, w.Kind, w.ID) {
				s.failf(CrashRecovery, "acknowledged %s %s of %s is gone after recovery", w.Kind, w.ID, a.Name)
				return
			}
		}
	}
}

// ackedExists reports whether the desk holds the acknowledged write of a kind (quote, rfq,
// trade, registration; any other kind counts as held).
func ackedExists(d *machine.Desk, kind, id string) bool {
	switch kind {
	case "quote":
		return d.Quotes[id] != nil
	case "rfq":
		return d.RFQs[id] != nil
	case "trade":
		return d.Trades[id] != nil
	case "registration":
		return d.Registrations[id] != nil
	}
	return true
}

// ackObservation is what the actors knew before a crash, for checkAckObservation: the
// highest input whose reply one received, and per actor the key hashes that may be its
// key (the acknowledged one, and those of a register or rotation whose answer was lost) and
// the writes it saw acknowledged that the desk still held before the crash.
type ackObservation struct {
	MaxAcked uint64     `json:"maxAcked"`
	Actors   []ackActor `json:"actors,omitempty"`
}

// ackActor is one actor's part of an ackObservation.
type ackActor struct {
	Name      string     `json:"name"`
	Hint      string     `json:"hint"`
	Party     string     `json:"party"`
	KeyHashes []string   `json:"keyHashes,omitempty"`
	Writes    []ackWrite `json:"writes,omitempty"`
}

// ackWrite is an acknowledged write: its kind and id.
type ackWrite struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// ledgerForgot reports whether the ledger may have forgotten an update recorded at at:
// it has made more updates than it retains, so that the oldest are gone from its update
// and command indexes, or its deduplication window has passed over it.
func (s *Sim) ledgerForgot(at time.Time) bool {
	cfg := s.ledger.L.Config()
	if w := cfg.DedupWindow; w > 0 && !at.IsZero() && !cfg.Clock.Now().Before(at.Add(w)) {
		return true
	}
	return s.ledger.L.Offset() > int64(cfg.Limits.MaxRetainedUpdates)
}

// finalChecks is the end of the liveness phase: everything reached a terminal state.
func (s *Sim) finalChecks() {
	d := s.desk
	if err := s.ledger.L.CheckInvariants(); err != nil {
		s.failf(Safety, "ledger invariant at the end: %v", err)
		return
	}
	if s.finalOrphans(); s.failure != nil {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(d.RFQs)) {
		r := d.RFQs[id]
		if r.State == machine.RFQOpen {
			s.failf(Liveness, "RFQ %s still open at the end (deadline %s)", id, r.Deadline.Format(time.RFC3339))
			return
		}
	}
	for _, id := range slices.Sorted(maps.Keys(d.Trades)) {
		t := d.Trades[id]
		switch t.State {
		case machine.TradeAllocating, machine.TradeSettling:
			s.failf(Liveness, "trade %s still %s at the end (window %s)", id, t.State, t.WindowEnds.Format(time.RFC3339))
			return
		case machine.TradeSettled:
			// The ledger keeps its latest MaxRetainedUpdates updates, for its deduplication
			// window; past either an old trade's settle may be gone (tradeSettled checked it
			// as it settled).
			u, ok := s.ledger.L.CommandResult(s.desk.Cfg.Operator, id+":settle")
			at, known := s.settleTimes[id]
			if !known {
				// A replay of a trace that starts from a snapshot never saw this trade
				// settle: the desk's settling time is the nearest it has (a little later
				// than the ledger's record time).
				at = t.SettledAt
			}
			if ok && u.UpdateID != t.UpdateID || !ok && !s.ledgerForgot(at) {
				s.failf(Safety, "settled trade %s has no matching settle on the ledger", id)
				return
			}
		case machine.TradeFailed:
			if _, ok := s.ledger.L.CommandResult(s.desk.Cfg.Operator, id+":settle"); ok {
				s.failf(Safety, "failed trade %s was settled on the ledger", id)
				return
			}
		}
	}
	if id, st, ok := firstIn(d.Quotes, func(q *machine.Quote) machine.State { return q.State },
		machine.QuoteFunding, machine.QuoteLive, machine.QuoteSettling); ok {
		s.failf(Liveness, "quote %s still %s at the end", id, st)
		return
	}
	if id, st, ok := firstIn(d.Registrations, func(r *machine.Registration) machine.State { return r.State },
		machine.RegOnboarding, machine.RegAwaiting, machine.RegCompleting); ok {
		s.failf(Liveness, "registration %s still %s at the end", id, st)
		return
	}
	if len(d.Actions) != 0 || len(d.Held) != 0 || len(d.Pending) != 0 || len(d.Deposits) != 0 || len(d.Withdrawals) != 0 {
		s.failf(Liveness, "left in flight at the end: %d actions, %d held replies, %d ledger calls, %d deposits, %d withdrawals",
			len(d.Actions), len(d.Held), len(d.Pending), len(d.Deposits), len(d.Withdrawals))
	}
}

// firstIn returns the first entity of m, in id order, whose state is one of states: its id
// and state.
func firstIn[V any](m map[string]V, state func(V) machine.State, states ...machine.State) (string, machine.State, bool) {
	for _, id := range slices.Sorted(maps.Keys(m)) {
		if st := state(m[id]); slices.Contains(states, st) {
			return id, st, true
		}
	}
	return "", "", false
}

// describeAPIError names a refusal in the contract's terms: its status, code and message.
func describeAPIError(e *machine.APIError) string {
	if e == nil {
		return "no error"
	}
	code := e.Code
	if code == "" {
		code = "(none)"
	}
	return fmt.Sprintf("error status %d, code %s, message %q", e.Status, code, e.Message)
}

// wireJSON renders a payload as the stream sends it (its JSON), for a failure message.
func wireJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(a %T that does not encode: %v)", v, err)
	}
	return string(b)
}
