package model

import (
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Maker protection, MMP (docs/api.md, "Maker protection" and the choices table), decided
// from the documents:
//
//   - PUT /maker/protection: every count an integer within its bound (windowSeconds and
//     freezeSeconds 0 to 86,400, maxFills 0 to 10,000), maxNotionalUsd not negative, else
//     400 changing nothing; 200 with the GET body. The settings replace the old; the fills
//     counted and any freeze stay.
//   - A fill is an accept answered 202, counted at the accept's request time with its
//     RFQ's notional at creation, qty × usdPrice(base) truncated at 10 digits. With a
//     window (windowSeconds > 0) the fills accepted after now − window count; when the
//     answer of an accept brings them to maxFills (> 0), or their notional to
//     maxNotionalUsd (> 0) or more, the protection trips in that input: every recorded
//     pending quote of the maker that is not settling is revoked (reason protection in the
//     maker's quote.status), a submission not yet answered is refused 409 MMP_FROZEN, the
//     counted fills are spent, and the maker gets maker.protection {triggered ("fills"
//     first), frozenUntil (now + freezeSeconds, null for 0), revoked (creation order)}
//     after the revoked quotes' quote.status frames.
//   - While frozen (until frozenUntil, or a reset for freezeSeconds 0), POST /maker/quotes
//     is 409 MMP_FROZEN before anything else is looked at; a reset ends the freeze (200,
//     the GET body; without a freeze nothing changes).

// Bounds of the settings and of a maker's kept fills (docs/api.md).
const (
	protectionMaxSeconds = 86400
	protectionMaxFills   = 10000
	protectionMaxKept    = 1024
	reasonProtection     = "protection"
)

// Protection is a maker's protection as the model keeps it.
type Protection struct {
	WindowSeconds int        `json:"windowSeconds"`
	MaxFills      int        `json:"maxFills"`
	MaxNotional   string     `json:"maxNotional"`
	FreezeSeconds int        `json:"freezeSeconds"`
	Fills         []ProtFill `json:"fills,omitempty"`
	Frozen        bool       `json:"frozen,omitempty"`
	FrozenUntil   time.Time  `json:"frozenUntil"` // zero while frozen: until a reset
}

// ProtFill is one counted fill (or, past the bound, two or more merged).
type ProtFill struct {
	At       time.Time `json:"at"`
	Count    int       `json:"count"`
	Notional string    `json:"notional"`
}

// tripDue is the maker.protection frame a trip in this input owes its maker.
type tripDue struct {
	maker string
	want  machine.MakerProtectionPayload
	sent  bool
}

// protectionOf is the party's protection, nil when it never set one.
func (m *Model) protectionOf(party string) *Protection { return m.st.Protections[party] }

// frozenAt reports whether the protection freezes quoting at t.
func (p *Protection) frozenAt(t time.Time) bool {
	return p != nil && p.Frozen && (p.FrozenUntil.IsZero() || t.Before(p.FrozenUntil))
}

// counted sums the fills in the window ending at t.
func (p *Protection) counted(t time.Time) (int, *big.Rat) {
	n, sum := 0, new(big.Rat)
	if p == nil || p.WindowSeconds == 0 {
		return n, sum
	}
	from := t.Add(-time.Duration(p.WindowSeconds) * time.Second)
	for _, f := range p.Fills {
		if f.At.After(from) {
			v, _ := parseDec(f.Notional)
			n += f.Count
			sum.Add(sum, v)
		}
	}
	return n, sum
}

// expire forgets a freeze past its end and the fills out of the window at t.
func (p *Protection) expire(t time.Time) {
	if p.Frozen && !p.frozenAt(t) {
		p.Frozen, p.FrozenUntil = false, time.Time{}
	}
	if p.WindowSeconds == 0 {
		p.Fills = nil
		return
	}
	from := t.Add(-time.Duration(p.WindowSeconds) * time.Second)
	var kept []ProtFill
	for _, f := range p.Fills {
		if f.At.After(from) {
			kept = append(kept, f)
		}
	}
	p.Fills = kept
}

// protView is the GET /maker/protection body the contract gives, its decimals in the
// wire's minimal form.
type protView struct {
	window, maxFills, freeze, fills int
	maxNotional, notional           string
	frozen                          bool
	until                           *time.Time
}

func (v protView) String() string {
	until := "null"
	if v.until != nil {
		until = wireTime(*v.until)
	}
	return fmt.Sprintf("{window %d, maxFills %d, maxNotional %s, freeze %d, frozen %v until %s, %d fills, %s USD}",
		v.window, v.maxFills, v.maxNotional, v.freeze, v.frozen, until, v.fills, v.notional)
}

// wantProtection is the GET /maker/protection body the contract gives party at t.
func (m *Model) wantProtection(party string, t time.Time) protView {
	p := m.protectionOf(party)
	if p == nil {
		p = &Protection{MaxNotional: "0"}
	}
	n, sum := p.counted(t)
	v := protView{window: p.WindowSeconds, maxFills: p.MaxFills, freeze: p.FreezeSeconds, fills: n,
		maxNotional: p.MaxNotional, notional: mustFormat(sum), frozen: p.frozenAt(t)}
	if v.frozen && !p.FrozenUntil.IsZero() {
		u := p.FrozenUntil
		v.until = &u
	}
	return v
}

// checkProtectionBody compares a protection body with the contract's at t.
func (m *Model) checkProtectionBody(body any, party string, t time.Time) string {
	d, ok := machine.PayloadAs[machine.ProtectionDTO](body)
	if !ok {
		return "the body is not the protection body"
	}
	got := protView{window: d.WindowSeconds, maxFills: d.MaxFills, freeze: d.FreezeSeconds, fills: d.FillsInWindow,
		maxNotional: decStr(d.MaxNotionalUSD), notional: decStr(d.NotionalInWindowUSD), frozen: d.Frozen}
	if d.FrozenUntil != nil {
		u := time.Time(*d.FrozenUntil)
		got.until = &u
	}
	want := m.wantProtection(party, t)
	untilOK := (got.until == nil) == (want.until == nil) &&
		(got.until == nil || sameTime(machine.WireTime(*got.until), *want.until))
	g, w := got, want
	g.until, w.until = nil, nil
	if g != w || !untilOK {
		return fmt.Sprintf("the protection body is %s, not %s", got, want)
	}
	return ""
}

// setProtection decides PUT /maker/protection by a known caller.
func (s *step) setProtection(p *Party, c machine.SetProtection) {
	m := s.m
	limit, err := parseDec(decStr(c.MaxNotionalUSD))
	if err != nil || c.WindowSeconds < 0 || c.WindowSeconds > protectionMaxSeconds || c.MaxFills < 0 || c.MaxFills > protectionMaxFills ||
		c.FreezeSeconds < 0 || c.FreezeSeconds > protectionMaxSeconds || limit.Sign() < 0 {
		s.immediate = one(400, "")
		return
	}
	s.immediate = &expect{alts: []sc{{200, ""}}, body: func(rep machine.Reply) string {
		if m.st.Protections == nil {
			m.st.Protections = map[string]*Protection{}
		}
		pr := m.st.Protections[p.ID]
		if pr == nil {
			pr = &Protection{}
			m.st.Protections[p.ID] = pr
		}
		pr.WindowSeconds, pr.MaxFills, pr.MaxNotional, pr.FreezeSeconds = c.WindowSeconds, c.MaxFills, mustFormat(limit), c.FreezeSeconds
		pr.expire(s.at)
		return m.checkProtectionBody(rep.Body, p.ID, s.at)
	}}
}

// resetProtection decides POST /maker/protection/reset by a known caller.
func (s *step) resetProtection(p *Party) {
	m := s.m
	s.immediate = &expect{alts: []sc{{200, ""}}, body: func(rep machine.Reply) string {
		if pr := m.protectionOf(p.ID); pr != nil {
			pr.Frozen, pr.FrozenUntil = false, time.Time{}
			pr.expire(s.at)
		}
		return m.checkProtectionBody(rep.Body, p.ID, s.at)
	}}
}

// frozenQuote decides POST /maker/quotes of a frozen maker: 409 MMP_FROZEN. It reports
// whether it decided.
func (s *step) frozenQuote(p *Party) bool {
	if !s.m.protectionOf(p.ID).frozenAt(s.at) {
		return false
	}
	s.immediate = one(409, machine.CodeMMPFrozen)
	return true
}

// protectionFill counts the fill of an accept answered 202 now (its quote settling) and,
// when a limit is reached, trips the maker's protection.
func (s *step) protectionFill(req *Request, t *Trade, r *RFQ) {
	m := s.m
	pr := m.protectionOf(t.Maker)
	if pr == nil || pr.WindowSeconds == 0 {
		return
	}
	pr.expire(s.at)
	pr.Fills = append(pr.Fills, ProtFill{At: req.At, Count: 1, Notional: r.Notional})
	for len(pr.Fills) > protectionMaxKept {
		a, b := pr.Fills[0], pr.Fills[1]
		x, _ := parseDec(a.Notional)
		y, _ := parseDec(b.Notional)
		at := a.At
		if b.At.After(at) {
			at = b.At
		}
		pr.Fills = append([]ProtFill{{At: at, Count: a.Count + b.Count, Notional: mustFormat(new(big.Rat).Add(x, y))}}, pr.Fills[2:]...)
	}
	pr.expire(s.at)
	if pr.Frozen {
		return
	}
	n, sum := pr.counted(s.at)
	limit, _ := parseDec(pr.MaxNotional)
	var triggered string
	switch {
	case pr.MaxFills > 0 && n >= pr.MaxFills:
		triggered = machine.TriggeredFills
	case limit.Sign() > 0 && sum.Cmp(limit) >= 0:
		triggered = machine.TriggeredNotional
	default:
		return
	}
	pr.Fills = nil
	pr.Frozen, pr.FrozenUntil = true, time.Time{}
	due := &tripDue{maker: t.Maker, want: machine.MakerProtectionPayload{Triggered: triggered, Revoked: []string{}}}
	if pr.FreezeSeconds > 0 {
		pr.FrozenUntil = s.at.Add(time.Duration(pr.FreezeSeconds) * time.Second)
		u := machine.WireTime(pr.FrozenUntil)
		due.want.FrozenUntil = &u
	}
	for _, rq := range m.st.Reqs {
		if rq.Kind == "quote.submit" && rq.Party == t.Maker {
			rq.Kind = "quote.submit.frozen"
		}
	}
	var revoked []string
	for id, q := range m.st.Quotes {
		if q.Maker == t.Maker && q.Status == "pending" && !q.Settling {
			revoked = append(revoked, id)
			put(&s.revoking, id, true)
			put(&s.protecting, id, true)
		}
	}
	slices.SortFunc(revoked, func(a, b string) int {
		if m.createdBefore(a, b) {
			return -1
		}
		if m.createdBefore(b, a) {
			return 1
		}
		return 0
	})
	due.want.Revoked = append(due.want.Revoked, revoked...)
	s.trip = due
}

// frozenSubmissionAnswer judges the answer to a submission the trip withdrew: 409
// MMP_FROZEN, never recorded.
func (s *step) frozenSubmissionAnswer(what string, rep machine.Reply) {
	if rep.Status != 409 || rep.Err == nil || rep.Err.Code != machine.CodeMMPFrozen {
		s.failf("%s is %s: the maker's protection tripped before it was recorded, so it is refused 409 %s", what, replyText(rep), machine.CodeMMPFrozen)
	}
}

// makerProtection judges a maker.protection frame: only a trip in this input sends one,
// once, to its maker, with the contract's payload, after the quote.status revoked of every
// quote the trip revoked.
func (s *step) makerProtection(e machine.Event, to *Party) {
	got, _ := machine.PayloadAs[machine.MakerProtectionPayload](e.Payload)
	d := s.trip
	switch {
	case d == nil:
		s.failf("maker.protection %+v to %s, but no protection tripped now", got, to.Hint)
		return
	case d.sent:
		s.failf("maker.protection for %s sent twice", to.Hint)
		return
	case to.ID != d.maker:
		s.failf("maker.protection sent to %s, not the maker %s", to.Hint, s.m.hintOf(d.maker))
		return
	}
	untilOK := (got.FrozenUntil == nil) == (d.want.FrozenUntil == nil) &&
		(got.FrozenUntil == nil || sameTime(*got.FrozenUntil, time.Time(*d.want.FrozenUntil)))
	if got.Triggered != d.want.Triggered || !untilOK || got.Revoked == nil || !slices.Equal(got.Revoked, d.want.Revoked) {
		s.failf("maker.protection %+v, not %+v", fmtTrip(got), fmtTrip(d.want))
		return
	}
	for _, id := range d.want.Revoked {
		if s.statusTo[id][d.maker] != "revoked" {
			s.failf("maker.protection reached %s before quote.status revoked of %s", to.Hint, id)
			return
		}
	}
	d.sent = true
}

func fmtTrip(p machine.MakerProtectionPayload) string {
	until := "null"
	if p.FrozenUntil != nil {
		until = wireTime(time.Time(*p.FrozenUntil))
	}
	return fmt.Sprintf("{triggered %s, frozenUntil %s, revoked %v}", p.Triggered, until, p.Revoked)
}

// afterTrip checks that a trip's maker.protection was sent.
func (s *step) afterTrip() {
	if d := s.trip; d != nil && !d.sent {
		s.failf("the protection of %s tripped (%s) without maker.protection", s.m.hintOf(d.maker), d.want.Triggered)
	}
}

// readProtection judges GET /maker/protection.
func (m *Model) readProtection(p *Party, at time.Time, body any) string {
	return m.checkProtectionBody(body, p.ID, at)
}

// cloneProtections copies the protections for Clone.
func cloneProtections(src map[string]*Protection) map[string]*Protection {
	if src == nil {
		return nil
	}
	out := make(map[string]*Protection, len(src))
	for k, v := range src {
		c := *v
		c.Fills = slices.Clone(v.Fills)
		out[k] = &c
	}
	return out
}
