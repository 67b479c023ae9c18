package machine

import (
	"fmt"
	"math/bits"
	"sort"
	"time"
)

// Desk is the whole state of the desk. Every field is plain data (it is what a snapshot
// saves); the configured entity machines are rebuilt by NewDesk and Restore.
type Desk struct {
	Cfg Config `json:"cfg"`
	IDs IDGen  `json:"ids"`
	// Now is the time of the last input applied; inputs never move it backwards.
	Now time.Time `json:"now"`

	Parties       map[string]*Party        `json:"parties"`       // by party id
	HintIndex     map[string]string        `json:"hintIndex"`     // hint → party id
	KeyIndex      map[string]string        `json:"keyIndex"`      // API key hash → party id
	Registrations map[string]*Registration `json:"registrations"` // by registration id
	Challenges    map[string]*Challenge    `json:"challenges"`    // by challenge text
	Sockets       map[uint64]*Socket       `json:"sockets"`

	RFQs    map[string]*RFQ    `json:"rfqs"`
	Quotes  map[string]*Quote  `json:"quotes"`
	Trades  map[string]*Trade  `json:"trades"`
	Actions map[string]*Action `json:"actions"`
	// DoneActions remembers recently finished actions (until their expiry) so that a blind
	// resend is told the entry already ran rather than that it never existed.
	DoneActions map[string]*DoneAction `json:"doneActions"`

	// Deposits tracks transfer-accept actions per instruction, so re-accepting returns the
	// action already pending; Withdrawals the withdrawal awaiting signature per party+symbol.
	Deposits    map[string]string    `json:"deposits"`    // instruction cid → action id
	Withdrawals map[string]string    `json:"withdrawals"` // party|symbol → action id
	FaucetNext  map[string]time.Time `json:"faucetNext"`  // party → earliest next draw

	// Pending maps the command id of every ledger call in flight to what to do with its result.
	Pending map[string]*Continuation `json:"pending"`
	// Held are replies that wait on ledger results, by the sequence number of their request.
	Held map[uint64]*HeldReply `json:"held"`

	Deadlines deadlineQueue `json:"deadlines"`
	// FailedTrades are the newest failed trades, oldest first, kept for HistoryRetention
	// failures (their history rows outlive them).
	FailedTrades []string `json:"failedTrades,omitempty"`
	// Scorecards are the makers' scorecard facts, by maker party id (machine/scorecard.go).
	Scorecards map[string]*Scorecard `json:"scorecards,omitempty"`
	// Protections are the makers' protections (MMP), by party id: one per party that set
	// it (maker_protection.go).
	Protections map[string]*Protection `json:"protections,omitempty"`
	// Streams are every party's stream sequence number and retained events, by party id
	// (stream_resume.go); an entry is made at a party's first event.
	Streams map[string]*PartyStream `json:"streams,omitempty"`
	// Idem holds the idempotency records by scope: a party id, or "addr:" and a client
	// address group (idempotency.go).
	Idem map[string]*IdemScope `json:"idem,omitempty"`
	// StreamTickets are the issued, unredeemed stream tickets by hash (stream_ticket.go).
	StreamTickets map[string]*StreamTicket `json:"streamTickets,omitempty"`
	// LedgerEnd is the highest ledger offset a ledger result reported (LedgerResult.Offset):
	// the desk records it with every execute and submit it issues (LedgerCall.Since).
	LedgerEnd int64 `json:"ledgerEnd,omitempty"`

	mach *machines // the configured entity machines; not state
	// byParty indexes the retained RFQs by party; derived from RFQs, not state (see rfqIndex).
	byParty rfqIndex
	// reserving indexes the live actions that name input holdings by party; derived from
	// Actions, not state (coinsel.go).
	reserving map[string]map[string]*Action
	// idemInFlight indexes the idempotency records still unanswered by their request's
	// sequence number; derived from Idem, not state.
	idemInFlight map[uint64]idemRef
}

// m returns the configured entity machines, building them on first use (also after a
// desk was restored from a snapshot).
func (d *Desk) m() *machines {
	if d.mach == nil {
		d.mach = buildMachines()
	}
	return d.mach
}

// NewDesk returns an empty desk for a validated configuration.
func NewDesk(cfg Config) (*Desk, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("desk configuration: %w", err)
	}
	d := &Desk{
		Cfg:           cfg,
		IDs:           IDGen{Seed: cfg.Seed},
		Parties:       map[string]*Party{},
		HintIndex:     map[string]string{},
		KeyIndex:      map[string]string{},
		Registrations: map[string]*Registration{},
		Challenges:    map[string]*Challenge{},
		Sockets:       map[uint64]*Socket{},
		RFQs:          map[string]*RFQ{},
		Quotes:        map[string]*Quote{},
		Trades:        map[string]*Trade{},
		Actions:       map[string]*Action{},
		DoneActions:   map[string]*DoneAction{},
		Deposits:      map[string]string{},
		Withdrawals:   map[string]string{},
		FaucetNext:    map[string]time.Time{},
		Pending:       map[string]*Continuation{},
		Held:          map[uint64]*HeldReply{},
		Protections:   map[string]*Protection{},
	}
	d.addHouseParties()
	return d, nil
}

// Apply feeds one input to the desk and returns what it caused. It never fails: a refusal
// is a Reply with an error, and an input that makes no sense for the current state (a stale
// ledger result, a tick with nothing due) changes nothing.
func Apply(d *Desk, env Envelope) Outputs {
	f := newApplyFrame(d, env, false)
	apply(&f.a, env)
	return f.out
}

// applyFrame holds an applier and the outputs it collects in one allocation: the applier
// escapes to the heap (its methods hand it on), and the outputs with it, which made two
// allocations of every Apply, about 17 inputs a lifecycle (loop BenchmarkLifecycle/desk:
// with the first appends' room below, 427 allocations a lifecycle became 399;
// docs/performance.md, "The lifecycle's allocations in the machine and the adapter").
type applyFrame struct {
	a   applier
	out Outputs
}

// newApplyFrame returns a frame whose applier applies env to d, collecting into the
// frame's outputs unless quiet.
func newApplyFrame(d *Desk, env Envelope, quiet bool) *applyFrame {
	f := new(applyFrame)
	f.a = applier{d: d, out: &f.out, seq: env.Seq, quiet: quiet}
	return f
}

// ApplyQuiet applies an input for a caller that throws the outputs away, such as a replay
// rebuilding the state from a journal. It makes exactly the changes to the desk that Apply
// makes: the same code runs, and only the collecting of replies, events, ledger calls,
// socket closes and bindings is left out, together with the building of payloads that
// nothing but those outputs carries (reply bodies, the connect-time snapshot). Ledger
// calls are still recorded as pending, ids still drawn, deadlines still set, and stream
// events still numbered and retained with their encoded payloads (stream_resume.go), which
// are state. It returns the earliest time at which the desk wants a Tick, as
// Outputs.NextDeadline.
//
// It pays only on replay: node BenchmarkReplay/replay takes 1.24× as long when ApplyQuiet
// collects the outputs like Apply (median of 5 interleaved runs, issue 17; the loop and the
// simulator do not use it: 1.02× and 1.01×, which is the noise). docs/performance.md.
func ApplyQuiet(d *Desk, env Envelope) time.Time {
	f := newApplyFrame(d, env, true)
	apply(&f.a, env)
	return f.out.NextDeadline
}

// apply applies env with a, an applier of the desk a.d that collects into a.out.
func apply(a *applier, env Envelope) {
	d, out := a.d, a.out
	if env.At.After(d.Now) {
		d.Now = env.At
	}
	addedBefore := d.Deadlines.Next
	switch in := env.Input.(type) {
	case Tick:
		a.tick()
	case Boot:
		a.boot()
	case SocketOpened:
		a.socketOpened(in)
	case SocketClosed:
		a.socketClosed(in)
	case LedgerResult:
		d.LedgerEnd = max(d.LedgerEnd, in.Offset)
		a.ledgerResult(in)
		a.idemSweepOrphans()
	case Idempotent:
		a.idempotent(in)
	case Command_:
		a.command(in)
	case Reconfigure:
		a.reconfigure(in)
	default:
		// An input kind this desk does not know (a newer journal); it changes nothing.
	}
	if d.compactDue(addedBefore) {
		d.compactDeadlines()
	}
	out.NextDeadline = d.nextDeadline()
}

// Command_ is implemented by every API command input. The underscore keeps the name apart
// from the ledger Command type.
type Command_ interface {
	Input
	header() Req
}

// applier carries one Apply call: the desk, the outputs being collected and the sequence
// number of the input (which names the request a reply answers).
type applier struct {
	d   *Desk
	out *Outputs
	seq uint64
	// quiet leaves the outputs out (ApplyQuiet): nothing is appended to out, and payloads
	// only outputs carry need not be built. It must never change what happens to the desk.
	quiet bool
	// booting is set while a Boot input is applied: requests held before the restart have
	// no client any more, and boot itself ends them.
	booting bool
}

// reply answers the current request.
func (a *applier) reply(status int, body any) {
	if len(a.d.idemInFlight) > 0 {
		a.idemAnswered(a.seq, status, body, nil)
	}
	if a.quiet {
		return
	}
	a.out.Replies = append(a.out.Replies, Reply{Seq: a.seq, Status: status, Body: body})
}

// refuse answers the current request with an error.
func (a *applier) refuse(err *APIError) {
	if len(a.d.idemInFlight) > 0 {
		a.idemAnswered(a.seq, err.Status, nil, err)
	}
	if a.quiet {
		return
	}
	a.out.Replies = append(a.out.Replies, Reply{Seq: a.seq, Status: err.Status, Err: err})
}

// replyTo answers a held request. A request no longer held (answered already, or from
// before a restart) gets no second or stray answer.
func (a *applier) replyTo(seq uint64, status int, body any) {
	if _, held := a.d.Held[seq]; !held {
		// A keyed request a restart left unanswered, whose flow carried on: the answer it
		// has now is the one its key repeats (idempotency.go); nobody gets it now.
		a.idemOrphanAnswered(seq, status, body, nil)
		return
	}
	delete(a.d.Held, seq)
	if len(a.d.idemInFlight) > 0 {
		a.idemAnswered(seq, status, body, nil)
	}
	if a.quiet {
		return
	}
	a.out.Replies = append(a.out.Replies, Reply{Seq: seq, Status: status, Body: body})
}

// refuseTo answers a held request with an error.
func (a *applier) refuseTo(seq uint64, err *APIError) {
	if _, held := a.d.Held[seq]; !held {
		a.idemOrphanAnswered(seq, err.Status, nil, err)
		return
	}
	delete(a.d.Held, seq)
	if len(a.d.idemInFlight) > 0 {
		a.idemAnswered(seq, err.Status, nil, err)
	}
	if a.quiet {
		return
	}
	a.out.Replies = append(a.out.Replies, Reply{Seq: seq, Status: err.Status, Err: err})
}

// emit sends an event to every socket of a party.
func (a *applier) emit(party, typ string, payload any) {
	seq, raw := a.sequence(party, typ, payload)
	if a.quiet {
		return
	}
	if a.out.Events == nil {
		// Room for three at the first: an input causes one to five events, and growing
		// from one to three or five took three or four allocations (in loop
		// BenchmarkLifecycle/desk, counted: 19 allocations a lifecycle for this slice,
		// 10 now, and fewer bytes; docs/performance.md, "The lifecycle's allocations in
		// the machine and the adapter").
		a.out.Events = make([]Event, 0, 3)
	}
	a.out.Events = append(a.out.Events, Event{Party: party, Type: typ, Payload: payload, Seq: seq, Raw: raw})
}

// call issues a ledger call and records what to do with its result.
func (a *applier) call(c LedgerCall, cont *Continuation) {
	if c.Since == 0 && (c.Op == OpExecute || c.Op == OpSubmit) {
		c.Since = a.d.LedgerEnd
	}
	cont.Call = c
	// A spending prepare waits while another of the party's is with the ledger (coinsel.go).
	cont.Deferred = spends(&c) && a.d.spendInFlight(c.ActAs, c.CommandID)
	a.d.Pending[c.CommandID] = cont
	if !cont.Deferred {
		a.emitCall(c)
	}
}

// boot handles a restart: sockets are gone, and every ledger call still in flight is issued
// again under its original command id (the ledger deduplicates).
func (a *applier) boot() {
	a.booting = true
	defer func() { a.booting = false }()
	for _, id := range sortedKeys(a.d.Pending) {
		c := a.d.Pending[id]
		if c.Kind == contExecute {
			// The attempt before the restart may still be in flight on the ledger.
			c.Kind = contExecuteAsk
		}
		if !a.quiet && !c.Deferred {
			a.emitCall(c.Call)
		}
	}
	a.releaseAllDeferred() // (coinsel.go) none waits behind nothing
	// A restart is a disconnect (cancel_on_disconnect.go); after the calls in flight are
	// issued again, so that the cancels it issues go out once.
	a.dropSockets(sortedKeys(a.d.Sockets))
	// Requests held before the restart have no client waiting any more. A quote submission
	// or an accept that was never answered is undone (its client will retry); the wallet
	// flows carry on, and their action shows up in GET /tx/pending, the recovery path.
	var undone []uint64
	for _, seq := range sortedKeys(a.d.Held) {
		held := a.d.Held[seq]
		delete(a.d.Held, seq)
		switch held.Kind {
		case contQuotePrepare:
			undone = append(undone, seq)
			if q := a.d.Quotes[held.Entity]; q != nil && q.ReqSeq == seq && q.State == QuoteFunding {
				a.quoteFundingRefused(q, nil)
			}
		case contTradePrepare:
			undone = append(undone, seq)
			if t := a.d.Trades[held.Entity]; t != nil && t.State == TradeAllocating {
				a.undoAccept(t)
			}
		}
	}
	// The keyed requests among them: those undone run anew under their key; those whose
	// flow carries on keep their record until the flow's answer (idempotency.go).
	a.idemBoot(undone)
	a.idemSweepOrphans()
}

// ---- Deadlines ----

// DeadlineKind says which entity a deadline belongs to.
type DeadlineKind string

// Deadline kinds.
const (
	DLRegistration DeadlineKind = "registration"
	DLChallenge    DeadlineKind = "challenge"
	DLRFQDeadline  DeadlineKind = "rfq.deadline"
	DLRFQRetention DeadlineKind = "rfq.retention"
	DLQuoteValid   DeadlineKind = "quote.validUntil"
	DLTradeWindow  DeadlineKind = "trade.window"
	DLAction       DeadlineKind = "action.expiry"
	DLDoneAction   DeadlineKind = "action.forget"
	DLExecuteWait  DeadlineKind = "execute.wait"
	DLExecuteRetry DeadlineKind = "execute.retry"
)

// Deadline is a point in time at which something must happen to an entity. Deadlines are
// never removed early: when one fires, its handler checks that it still applies.
type Deadline struct {
	At    time.Time    `json:"at"`
	Order uint64       `json:"order"` // insertion order breaks ties deterministically
	Kind  DeadlineKind `json:"kind"`
	ID    string       `json:"id"`
	Seq   uint64       `json:"seq,omitempty"`
}

// deadlineQueue is a min-heap of deadlines by (At, Order).
type deadlineQueue struct {
	Items []Deadline `json:"items"`
	Next  uint64     `json:"next"`
}

// less orders deadlines by time, then insertion order.
func (q *deadlineQueue) less(i, j int) bool {
	if !q.Items[i].At.Equal(q.Items[j].At) {
		return q.Items[i].At.Before(q.Items[j].At)
	}
	return q.Items[i].Order < q.Items[j].Order
}

// add pushes a deadline. The sift steps are container/heap's exactly, so the slice layout
// (which snapshots and digests record) is what it always was, without boxing each push.
// Measured against container/heap over the same queue (issue 17, median of 5 interleaved
// runs): node BenchmarkReplay/replay 1.16× as long with container/heap, loop
// BenchmarkLifecycle/desk 1.035× the CPU, sim BenchmarkStandardScenario 1.024× as long.
func (q *deadlineQueue) add(at time.Time, kind DeadlineKind, id string, seq uint64) {
	q.Next++
	if len(q.Items) == cap(q.Items) {
		// Doubling rather than append's 1.25× for large slices: the queue holds every
		// pending deadline (retention ones included), and each growth copies all of it.
		grown := make([]Deadline, len(q.Items), 2*cap(q.Items)+64)
		copy(grown, q.Items)
		q.Items = grown
	}
	q.Items = append(q.Items, Deadline{At: at, Order: q.Next, Kind: kind, ID: id, Seq: seq})
	for j := len(q.Items) - 1; ; {
		i := (j - 1) / 2 // parent
		if i == j || !q.less(j, i) {
			break
		}
		q.Items[i], q.Items[j] = q.Items[j], q.Items[i]
		j = i
	}
}

// pop removes the earliest deadline (container/heap's Pop).
func (q *deadlineQueue) pop() Deadline {
	n := len(q.Items) - 1
	q.Items[0], q.Items[n] = q.Items[n], q.Items[0]
	q.down(0, n)
	last := q.Items[n]
	q.Items = q.Items[:n]
	return last
}

// down sifts item i down within the first n items (container/heap's down).
func (q *deadlineQueue) down(i, n int) {
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			return
		}
		j := j1
		if j2 := j1 + 1; j2 < n && q.less(j2, j1) {
			j = j2
		}
		if !q.less(j, i) {
			return
		}
		q.Items[i], q.Items[j] = q.Items[j], q.Items[i]
		i = j
	}
}

// popDue removes and returns the earliest deadline at or before now.
func (q *deadlineQueue) popDue(now time.Time) (Deadline, bool) {
	if len(q.Items) == 0 || q.Items[0].At.After(now) {
		return Deadline{}, false
	}
	return q.pop(), true
}

func (q *deadlineQueue) next() time.Time {
	if len(q.Items) == 0 {
		return time.Time{}
	}
	return q.Items[0].At
}

// nextDeadline is when the desk next wants a Tick. A deadline is never removed early, but
// one that is spent (its handler would do nothing, now or later: see spent) is dropped
// when it reaches the front, so that it asks for no Tick of its own.
func (d *Desk) nextDeadline() time.Time {
	for len(d.Deadlines.Items) > 0 && d.spent(d.Deadlines.Items[0]) {
		d.Deadlines.pop()
	}
	return d.Deadlines.next()
}

// spent reports whether a deadline's handler would do nothing whenever it fired: its
// entity is gone for good or in a final state (ids are never reused and final states
// have no way out). Each case is the part of its handler's own check that cannot change.
func (d *Desk) spent(dl Deadline) bool {
	switch dl.Kind {
	case DLAction: // expireAction: an action that left the queue
		_, ok := d.Actions[dl.ID]
		return !ok
	case DLQuoteValid: // quoteValidUntil acts on a funding or live quote only (a settling one is kept)
		q, ok := d.Quotes[dl.ID]
		return !ok || (q.State != QuoteFunding && q.State != QuoteLive && q.State != QuoteSettling)
	case DLRFQDeadline: // rfqDeadline acts on an open RFQ only
		r, ok := d.RFQs[dl.ID]
		return !ok || r.State != RFQOpen
	case DLTradeWindow: // tradeWindowClosed acts on an allocating trade only
		t, ok := d.Trades[dl.ID]
		return !ok || t.State == TradeSettled || t.State == TradeFailed
	case DLChallenge: // expireChallenge: a challenge already consumed
		_, ok := d.Challenges[dl.ID]
		return !ok
	case DLExecuteWait: // executeWaitOver: a POST /tx/execute already answered
		held, ok := d.Held[dl.Seq]
		return !ok || held.Kind != contExecute
	}
	return false
}

// compactDeadlinesFrom is the smallest period of compactDue.
const compactDeadlinesFrom = 1024

// compactDue reports whether the input just applied, which found addedBefore deadlines
// ever added, should end with a rebuild of the queue without its spent deadlines, so that
// deadlines whose entities ended long before they are due (an executed action's expiry, a
// lost quote's validity) do not fill the state; between rebuilds they go only when they
// reach the front (nextDeadline). A rebuild is due each time the count of deadlines ever
// added (Deadlines.Next, part of the state) passes a multiple of the period: the queue's
// length rounded up to a power of two, at least compactDeadlinesFrom. So a rebuild, a pass
// and a heapify of the queue, comes once per about as many adds as the queue holds, and
// the queue holds at most about twice what is not spent.
func (d *Desk) compactDue(addedBefore uint64) bool {
	period := uint64(max(compactDeadlinesFrom, len(d.Deadlines.Items)))
	period = 1 << bits.Len64(period-1) // rounded up to a power of two
	return d.Deadlines.Next/period > addedBefore/period
}

// compactDeadlines drops every spent deadline and makes a heap of the rest again
// (container/heap's Init: linear), which pops in the same order, (At, Order) being a
// total order.
func (d *Desk) compactDeadlines() {
	q := &d.Deadlines
	kept := q.Items[:0]
	for _, dl := range q.Items {
		if !d.spent(dl) {
			kept = append(kept, dl)
		}
	}
	clear(q.Items[len(kept):]) // no references left behind the new end
	q.Items = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		q.down(i, len(kept))
	}
}

// housekeepingAt rounds the time of a deadline that only forgets something (a finished
// action, a closed RFQ after its readability period) up to a whole second, so that all
// those due within one second fire in one Tick rather than one Tick each.
func housekeepingAt(t time.Time) time.Time {
	if r := t.Truncate(time.Second); r.Before(t) {
		return r.Add(time.Second)
	}
	return t
}

// at schedules a deadline.
func (a *applier) at(t time.Time, kind DeadlineKind, id string) {
	a.d.Deadlines.add(t, kind, id, 0)
}

// tick fires every deadline that is due, earliest first.
func (a *applier) tick() {
	for {
		dl, ok := a.d.Deadlines.popDue(a.d.Now)
		if !ok {
			return
		}
		a.fire(dl)
	}
}

// fire dispatches one due deadline to the flow it belongs to.
func (a *applier) fire(dl Deadline) {
	switch dl.Kind {
	case DLRegistration:
		a.expireRegistration(dl.ID)
	case DLChallenge:
		a.expireChallenge(dl.ID)
	case DLAction:
		a.expireAction(dl.ID)
	case DLDoneAction:
		a.forgetDoneAction(dl.ID)
	case DLExecuteWait:
		a.executeWaitOver(dl.Seq)
	case DLRFQDeadline:
		a.rfqDeadline(dl.ID)
	case DLRFQRetention:
		a.rfqForget(dl.ID)
	case DLQuoteValid:
		a.quoteValidUntil(dl.ID)
	case DLTradeWindow:
		a.tradeWindowClosed(dl.ID)
	case DLSettleRetry:
		a.settleRetry(dl.ID)
	case DLExecuteRetry:
		a.executeRetry(dl.ID)
	case DLAllocRetry:
		a.allocRetry(dl.ID)
	case DLCallRetry:
		a.callRetry(dl.ID)
	}
}

// sortedKeys returns a map's keys in order, so iteration never decides an output by chance.
func sortedKeys[K interface{ ~string | ~uint64 }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
