package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// step is one Apply: the input, the desk's outputs, and what the model learned on the way.
type step struct {
	m   *Model
	env machine.Envelope
	at  time.Time
	// route, target and by name the input in a divergence (built only then): the
	// endpoint or input kind, the id in its path, the caller's hint.
	route, target, by string
	out               machine.Outputs
	err               *Divergence
	caller            *Party

	// immediate is the model's answer to this input's command when it is decided now;
	// async says the answer waits on the ledger.
	immediate *expect
	async     bool
	answered  bool
	// orphanSlot is the withdrawal slot a restart left that this input's withdraw met.
	orphanSlot string

	// what this input did, for judging its events
	cancelled  map[string]bool   // RFQs cancelled by this input
	filled     map[string]string // RFQ → winning quote, by trade.settled in this input
	failedRFQ  map[string]bool   // RFQs whose trade failed in this input
	expiredRFQ map[string]bool   // RFQs expired in this input
	revoking   map[string]bool   // quotes this input must revoke (replacement, DELETE)
	mayRevoke  map[string]bool   // quotes this input may revoke or leave settling (decline.go)
	decline    *declineDue       // the quote.declined an accepted decline owes (decline.go)
	statusSent map[string]bool   // quotes whose quote.status (to the maker) came in this input
	recorded   map[string]bool   // quotes recorded by a reply in this input
	undone     map[string]bool   // RFQs whose pending accept was undone in this input

	// asyncOr, with async, is what an answer given at once may be: the contract allows it
	// when a race is in flight (the comment at each use says which).
	asyncOr     *expect
	failedTrade map[string]string            // RFQ → the trade on it that failed in this input
	createdRFQ  string                       // the RFQ created by this input
	rfqFrames   map[string]map[string]int    // RFQ → recipient → rfq.created/closed/expired frames
	expiredTo   map[string]map[string]bool   // RFQ → parties that got rfq.expired so far
	statusTo    map[string]map[string]string // quote → recipient → status sent
	history     map[string]map[string]bool   // RFQ → history kinds recorded for its taker
	settledTo   map[string]map[string]bool   // trade → recipients of trade.settled

	// disconnecting are the quotes this input may revoke for cancel-on-disconnect
	// (disconnect.go); those it must are in revoking too.
	disconnecting map[string]bool
	// protecting are the quotes a protection trip in this input revokes, and trip the
	// maker.protection frame it owes (protection.go).
	protecting map[string]bool
	trip       *tripDue

	// Idempotency-Key (idempotency.go): idemStill when the input must change nothing (a
	// repeat, a refused key), idemReplay the record a repeat replays, idemRaced a repeat
	// of a request still unanswered, idemFresh a first use of a key.
	idemStill, idemRaced, idemFresh bool
	idemReplay                      *IdemRec
}

// expect is a decided answer: a status and a code, or a set of them when the contract
// allows several (the comment at each use says why).
type expect struct {
	alts []sc
	body func(machine.Reply) string // checks the body of a success; "" when fine
}

type sc struct {
	status int
	code   string
}

func (e *expect) String() string {
	var xs []string
	for _, a := range e.alts {
		if a.code != "" {
			xs = append(xs, fmt.Sprintf("%d %s", a.status, a.code))
		} else {
			xs = append(xs, fmt.Sprint(a.status))
		}
	}
	return strings.Join(xs, " or ")
}

func one(status int, code string) *expect { return &expect{alts: []sc{{status, code}}} }

// whatText names the input for a divergence.
func (s *step) whatText() string {
	w := s.route
	if s.target != "" {
		if !strings.HasSuffix(w, "/") && !strings.HasSuffix(w, " ") {
			w += " "
		}
		w += s.target
	}
	if s.by != "" {
		w += " by " + s.by
	}
	return w
}

func (s *step) failf(format string, args ...any) {
	if s.err == nil {
		s.err = &Divergence{Seq: s.env.Seq, At: s.at, What: s.whatText(), Msg: fmt.Sprintf(format, args...)}
	}
}

// Apply feeds the model one input the desk applied, with the desk's outputs, in the
// order the desk applied them. It returns a *Divergence when the outputs break the
// contract, or when the input itself is not one the model can judge.
func (m *Model) Apply(env machine.Envelope, out machine.Outputs) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Divergence{Seq: env.Seq, At: env.At, What: "input", Msg: fmt.Sprintf("the model could not judge the input (%v)", r)}
		}
	}()
	if env.Input == nil {
		return &Divergence{Seq: env.Seq, At: env.At, What: "input", Msg: "an envelope without an input"}
	}
	if env.At.After(m.st.Now) {
		m.st.Now = env.At
	}
	s := &step{
		m: m, env: env, at: m.st.Now, out: out, route: env.Input.Kind(),
	}
	switch in := env.Input.(type) {
	case machine.Tick, machine.LedgerResult, machine.CheckpointMark, machine.CheckpointDigest, machine.Checkpoint:
		// No command: only events, replies to earlier requests and closes follow.
	case machine.Boot:
		m.idemBoot() // first: it keeps the requests whose keyed flow carries on, which boot forgets
		s.boot()
	case machine.Idempotent:
		s.idempotent(in)
	case machine.Reconfigure:
		if err := s.reconfigure(in.Config); err != nil {
			return err
		}
	case machine.SocketOpened:
		s.socketOpened(in)
	case machine.SocketClosed:
		s.socketClosed(in)
	default:
		if !s.command(env.Input) {
			return &Divergence{Seq: env.Seq, At: env.At, What: env.Input.Kind(), Msg: fmt.Sprintf("the model knows no input of kind %q", env.Input.Kind())}
		}
	}
	if s.err == nil {
		s.replies()
	}
	if s.err == nil {
		s.idemAfter()
	}
	if s.err == nil {
		s.events()
	}
	if s.err == nil {
		s.afterEvents()
	}
	if s.err != nil {
		return s.err
	}
	return nil
}

// replies judges every reply of the outputs: the immediate answer to this input's
// command, and answers to earlier requests that waited on the ledger.
func (s *step) replies() {
	for _, rep := range s.out.Replies {
		if s.err != nil {
			return
		}
		if rep.Seq == s.env.Seq && (s.immediate != nil || s.async) {
			if s.answered {
				s.failf("request %d answered twice in one input", rep.Seq)
				return
			}
			s.answered = true
			if s.async && s.asyncOr != nil {
				if r := s.m.st.Reqs[rep.Seq]; r != nil && r.Kind == "withdraw" {
					delete(s.m.st.Withdraws, r.Party+"|"+r.Symbol)
				}
				delete(s.m.st.Reqs, rep.Seq)
				s.judge(s.asyncOr, rep)
				continue
			}
			if s.async {
				// The model decided this command passes every check the desk makes from its
				// own state: its answer needs the ledger, so it cannot come with the input.
				s.failf("%s answered at once with %s; the contract needs a ledger outcome before any answer to a request that passes every check (model: %s)", s.whatText(), replyText(rep), s.asyncWhy())
				return
			}
			s.judge(s.immediate, rep)
			continue
		}
		req, ok := s.m.st.Reqs[rep.Seq]
		if !ok {
			s.failf("a reply (%s) to request %d, which is not waiting for one (answered already, or never made)", replyText(rep), rep.Seq)
			return
		}
		delete(s.m.st.Reqs, rep.Seq)
		if _, isBoot := s.env.Input.(machine.Boot); isBoot {
			continue // a restart undoes held requests; nobody waits for their answer
		}
		s.lateReply(req, rep)
	}
	if s.orphanSlot != "" && !s.answered {
		// The desk took the withdrawal: the slot a restart left was free.
		delete(s.m.st.OrphanWithdraws, s.orphanSlot)
	}
	if s.err == nil && s.immediate != nil && !s.answered {
		s.failf("%s was never answered; the contract answers it at once with %s", s.whatText(), s.immediate)
	}
}

func (s *step) asyncWhy() string {
	if r := s.m.st.Reqs[s.env.Seq]; r != nil {
		return "pending " + r.Kind
	}
	return "pending"
}

// judge compares a reply with a decided expectation.
func (s *step) judge(e *expect, rep machine.Reply) {
	got := sc{status: rep.Status}
	if rep.Err != nil {
		got.code = rep.Err.Code
		if rep.Err.Status != rep.Status {
			s.failf("%s: reply status %d carries an error of status %d", s.whatText(), rep.Status, rep.Err.Status)
			return
		}
	}
	for _, a := range e.alts {
		if a == got {
			if rep.Status < 300 && e.body != nil {
				if msg := e.body(rep); msg != "" {
					s.failf("%s answered %d but %s", s.whatText(), rep.Status, msg)
				}
			}
			return
		}
	}
	s.failf("%s answered %s; the contract says %s", s.whatText(), replyText(rep), e)
}

func replyText(rep machine.Reply) string {
	if rep.Err != nil {
		if rep.Err.Code != "" {
			return fmt.Sprintf("%d %s (%q)", rep.Status, rep.Err.Code, rep.Err.Message)
		}
		return fmt.Sprintf("%d (%q)", rep.Status, rep.Err.Message)
	}
	return fmt.Sprint(rep.Status)
}

// ---- transport inputs ----

func (s *step) boot() {
	m := s.m
	// Every socket is closed by a restart, which counts as a disconnect.
	s.dropSockets(slices.Sorted(maps.Keys(m.st.Sockets)))
	// Requests held before the restart have no client any more: a quote submission or an
	// accept never answered is undone (the client retries); nobody waits for the others.
	for seq, r := range m.st.Reqs {
		if r.Kind == "quote.accept" {
			if q := m.st.Quotes[r.Quote]; q != nil {
				if rfq := m.st.RFQs[q.RFQ]; rfq != nil && rfq.Accepting == seq {
					rfq.Accepting = 0
					put(&s.undone, rfq.ID, true)
				}
			}
		}
		if r.Kind == "withdraw" {
			delete(m.st.Withdraws, r.Party+"|"+r.Symbol)
			m.st.OrphanWithdraws[r.Party+"|"+r.Symbol] = true
		}
		if r.Kind == "register.complete" && r.NewKeyHash != "" {
			m.st.MaybeKeys[r.NewKeyHash] = r.Registration
		}
		delete(m.st.Reqs, seq)
	}
}

func (s *step) socketOpened(in machine.SocketOpened) {
	m := s.m
	if in.TicketHash != "" { // streamticket.go: the ticket's key, or none
		in.KeyHash = m.redeemTicket(in.TicketHash, s.at)
	}
	refused := false
	for _, c := range s.out.Closes {
		if c.Socket == in.Socket && c.Code == machine.CloseUnauthorized {
			refused = true
		}
	}
	p := m.resolve(in.KeyHash, !refused)
	s.route, s.target = "stream socket opened", fmt.Sprint(in.Socket)
	if p == nil {
		// SPEC, Authentication 7: a missing or unknown key closes with 4401.
		for _, c := range s.out.Closes {
			if c.Socket == in.Socket && c.Code == machine.CloseUnauthorized {
				return
			}
		}
		s.failf("socket %d opened with an unknown key was not closed with 4401", in.Socket)
		return
	}
	m.st.Sockets[in.Socket] = &Socket{Party: p.ID, KeyHash: in.KeyHash, CancelOnDisconnect: in.CancelOnDisconnect}
	p.Online++
	bound := false
	for _, b := range s.out.Bindings {
		if b.Socket == in.Socket {
			if b.Party != p.ID {
				s.failf("socket %d of %s was bound to another party", in.Socket, p.Hint)
				return
			}
			bound = true
		}
	}
	if !bound {
		s.failf("socket %d of %s was never bound to its party", in.Socket, p.Hint)
		return
	}
	if !s.connectFrames(in, p) { // resume.go: a resume sends no snapshot
		return
	}
	// The snapshot: rfq.created for every open RFQ the party is invited to.
	want := map[string]bool{}
	for _, r := range m.rfqsOf(p.ID) {
		if r.Open && invited(r, p.ID) {
			want[r.ID] = true
		}
	}
	for _, e := range s.out.Events {
		if e.Socket != in.Socket || e.Type != machine.EvRfqCreated {
			continue
		}
		dto, ok := asRfq(e.Payload)
		if !ok {
			s.failf("snapshot rfq.created to %s carries no RfqDto", p.Hint)
			return
		}
		if !want[dto.RfqID] {
			s.failf("the connect snapshot of %s holds rfq.created for %s, which is not an open RFQ it is invited to", p.Hint, dto.RfqID)
			return
		}
		delete(want, dto.RfqID)
	}
	if len(want) > 0 {
		// The smallest id, never the first a map yields: a replay must name the same one.
		s.failf("the connect snapshot of %s lacks rfq.created for open RFQ %s it is invited to", p.Hint, slices.Min(slices.Collect(maps.Keys(want))))
		return
	}
}

func (s *step) socketClosed(in machine.SocketClosed) {
	s.route = "stream socket closed"
	s.dropSockets([]uint64{in.Socket})
}

func invited(r *RFQ, party string) bool {
	for _, id := range r.Invited {
		if id == party {
			return true
		}
	}
	return false
}

// ---- payload helpers (value or pointer forms) ----

func asRfq(v any) (machine.RfqDTO, bool)     { return machine.PayloadAs[machine.RfqDTO](v) }
func asQuote(v any) (machine.QuoteDTO, bool) { return machine.PayloadAs[machine.QuoteDTO](v) }
func asTrade(v any) (machine.TradeDTO, bool) { return machine.PayloadAs[machine.TradeDTO](v) }
func asAction(v any) (machine.SignActionDTO, bool) {
	return machine.PayloadAs[machine.SignActionDTO](v)
}

func asActions(v any) ([]machine.SignActionDTO, bool) {
	x, ok := machine.PayloadAs[machine.ActionsDTO](v)
	return x.Actions, ok
}

// put sets a key of a map the step allocates on first use (most inputs touch none).
func put[V any](m *map[string]V, k string, v V) {
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[k] = v
}

// reconfigure is a configuration change journaled at a start: it answers nobody and emits
// nothing; from it on, the new prices, lifetimes, limits and fee tiers apply (an RFQ keeps
// the fee it was stamped with). A change that cannot apply to a desk with data (the
// network, the seed, the desk's parties, an instrument removed or its decimals changed)
// leaves the desk as it was, and so the model.
func (s *step) reconfigure(next machine.Config) *Divergence {
	m := s.m
	old := m.st.Cfg
	if next.Validate() != nil || next.Network != old.Network || next.Seed != old.Seed ||
		next.Operator != old.Operator || next.FeeParty != old.FeeParty || next.Reservoir != old.Reservoir {
		return nil
	}
	kept := map[string]machine.Instrument{}
	for _, in := range next.Instruments {
		kept[in.Symbol] = in
	}
	for _, in := range old.Instruments {
		n, ok := kept[in.Symbol]
		if !ok || n.Decimals != in.Decimals || n.Display != in.Display || n.Native != in.Native || n.RegistryID != in.RegistryID {
			return nil
		}
	}
	m.st.Cfg = next
	if err := m.init(); err != nil {
		m.st.Cfg = old
		_ = m.init()
		return &Divergence{Seq: s.env.Seq, At: s.env.At, What: "config.change", Msg: err.Error()}
	}
	return nil
}
