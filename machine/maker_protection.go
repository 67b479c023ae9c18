package machine

import (
	"fmt"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Maker protection, MMP (docs/api.md, "Maker protection"), after Paradigm and Deribit.
//
// A maker sets limits on what may fill in a trailing window (PUT /maker/protection): a
// number of fills and a USD notional, 0 disabling either. A fill is an accept of one of
// its quotes that the desk answered 202, counted at the accept's input time (the trade's
// AcceptedAt) with the RFQ's USD notional at its creation (qty × usdPrice(base), the
// notional of feeBps). When the answer of an accept brings the fills in the window
// (AcceptedAt after now − windowSeconds) to maxFills, or their notional to maxNotionalUsd
// or more, that accept proceeds and the protection trips, in the same input: every other
// pending quote of the maker that is not settling is revoked as DELETE /maker/quotes
// revokes it (reason RevokeProtection), a submission still waiting on the ledger is
// withdrawn (answered 409 MMP_FROZEN), the counted fills are spent (the window starts
// afresh), the maker is frozen and hears maker.protection. While frozen, POST
// /maker/quotes answers 409 MMP_FROZEN. The freeze ends at frozenUntil (the trip's time +
// freezeSeconds) or at POST /maker/protection/reset; freezeSeconds 0 freezes until a reset.
//
// A fill stays counted when its settlement later fails (the venues count executions, and
// the maker's exposure was taken when the accept was answered). Settings changed while
// frozen leave the freeze alone; limits lowered below the counts trip at the next fill.

// Bounds of the protection settings (PUT /maker/protection answers 400 outside them).
const (
	// MaxProtectionWindowSeconds bounds windowSeconds: one day.
	MaxProtectionWindowSeconds = 86400
	// MaxProtectionFreezeSeconds bounds freezeSeconds: one day.
	MaxProtectionFreezeSeconds = 86400
	// MaxProtectionFills bounds maxFills.
	MaxProtectionFills = 10000
	// MaxProtectionFillsKept bounds a maker's list of counted fills: past it the two oldest
	// entries merge into one (counts and notionals added, the later time kept), so a burst
	// of fills never grows the state, and a merged fill leaves the window no earlier than
	// its parts would have (the protection errs on the side of tripping).
	MaxProtectionFillsKept = 1024
)

// CodeMMPFrozen is the code of the 409 answering POST /maker/quotes while the maker's
// protection is frozen.
const CodeMMPFrozen = "MMP_FROZEN"

// RevokeProtection is the reason a quote revoked by a protection trip records, and the
// reason of the maker's quote.status revoked frame.
const RevokeProtection = "protection"

// EvMakerProtection tells a maker its protection tripped.
const EvMakerProtection = "maker.protection"

// Protection triggers, the `triggered` of maker.protection.
const (
	TriggeredFills    = "fills"
	TriggeredNotional = "notional"
)

// Protection is a maker's protection: its settings, the fills counted in its window, and
// its freeze. The desk keeps one per party that ever set it (Desk.Protections).
type Protection struct {
	WindowSeconds  int           `json:"windowSeconds"`
	MaxFills       int           `json:"maxFills"`
	MaxNotionalUSD money.Decimal `json:"maxNotionalUsd"`
	FreezeSeconds  int           `json:"freezeSeconds"`
	// Fills are the counted fills, oldest first, at most MaxProtectionFillsKept.
	Fills []ProtectionFill `json:"fills,omitempty"`
	// Frozen is set by a trip; the freeze lasts until FrozenUntil, or until a reset when
	// FrozenUntil is zero (freezeSeconds 0).
	Frozen      bool      `json:"frozen,omitempty"`
	FrozenUntil time.Time `json:"frozenUntil"`
}

// ProtectionFill is one counted fill (or, merged, several) of a maker.
type ProtectionFill struct {
	At          time.Time     `json:"at"` // the accept's input time
	Count       int           `json:"count"`
	NotionalUSD money.Decimal `json:"notionalUsd"`
}

// on reports whether the protection counts fills: it has a window (with both limits 0 it
// counts them, for GET /maker/protection, and trips on nothing).
func (p *Protection) on() bool { return p.WindowSeconds > 0 }

// frozenAt reports whether the protection is frozen at now.
func (p *Protection) frozenAt(now time.Time) bool {
	return p.Frozen && (p.FrozenUntil.IsZero() || now.Before(p.FrozenUntil))
}

// inWindow sums the fills counted in the trailing window ending at now: those accepted
// after now − windowSeconds.
func (p *Protection) inWindow(now time.Time) (int, money.Decimal) {
	n, notional := 0, money.FromInt(0)
	if p.WindowSeconds <= 0 {
		return n, notional
	}
	from := now.Add(-time.Duration(p.WindowSeconds) * time.Second)
	for _, f := range p.Fills {
		if f.At.After(from) {
			n += f.Count
			notional = notional.Add(f.NotionalUSD)
		}
	}
	return n, notional
}

// settle forgets what the passage of time ended by now: a freeze past its frozenUntil, and
// fills out of the window.
func (p *Protection) settle(now time.Time) {
	if p.Frozen && !p.frozenAt(now) {
		p.Frozen, p.FrozenUntil = false, time.Time{}
	}
	if p.WindowSeconds <= 0 {
		p.Fills = nil
		return
	}
	from := now.Add(-time.Duration(p.WindowSeconds) * time.Second)
	p.Fills = slices.DeleteFunc(p.Fills, func(f ProtectionFill) bool { return !f.At.After(from) })
	if len(p.Fills) == 0 {
		p.Fills = nil
	}
}

// record counts one fill, merging the two oldest entries past MaxProtectionFillsKept.
func (p *Protection) record(f ProtectionFill) {
	p.Fills = append(p.Fills, f)
	for len(p.Fills) > MaxProtectionFillsKept {
		a, b := p.Fills[0], p.Fills[1]
		latest := a.At
		if b.At.After(latest) {
			latest = b.At
		}
		p.Fills[1] = ProtectionFill{At: latest, Count: a.Count + b.Count, NotionalUSD: a.NotionalUSD.Add(b.NotionalUSD)}
		p.Fills = p.Fills[1:]
	}
}

// ProtectionDTO is the answer of GET, PUT and POST reset of /maker/protection: the
// settings, the freeze (frozenUntil null when not frozen or frozen until a reset; frozen
// says which) and what the window counts now.
type ProtectionDTO struct {
	WindowSeconds       int           `json:"windowSeconds"`
	MaxFills            int           `json:"maxFills"`
	MaxNotionalUSD      money.Decimal `json:"maxNotionalUsd"`
	FreezeSeconds       int           `json:"freezeSeconds"`
	Frozen              bool          `json:"frozen"`
	FrozenUntil         *WireTime     `json:"frozenUntil"`
	FillsInWindow       int           `json:"fillsInWindow"`
	NotionalInWindowUSD money.Decimal `json:"notionalInWindowUsd"`
}

// MakerProtectionPayload is the payload of maker.protection, sent to the maker whose
// protection tripped: which limit, until when (null: until a reset), and the quotes the
// trip revoked, in creation order.
type MakerProtectionPayload struct {
	Triggered   string    `json:"triggered"`
	FrozenUntil *WireTime `json:"frozenUntil"`
	Revoked     []string  `json:"revoked"`
}

// protectionDTO renders a party's protection at now; a party that never set one sees it
// off (every number 0, not frozen).
func (d *Desk) protectionDTO(party string, now time.Time) ProtectionDTO {
	p := d.Protections[party]
	if p == nil {
		p = &Protection{MaxNotionalUSD: money.FromInt(0)}
	}
	n, notional := p.inWindow(now)
	dto := ProtectionDTO{
		WindowSeconds: p.WindowSeconds, MaxFills: p.MaxFills, MaxNotionalUSD: p.MaxNotionalUSD,
		FreezeSeconds: p.FreezeSeconds, Frozen: p.frozenAt(now),
		FillsInWindow: n, NotionalInWindowUSD: notional,
	}
	if dto.Frozen && !p.FrozenUntil.IsZero() {
		until := WireTime(p.FrozenUntil)
		dto.FrozenUntil = &until
	}
	return dto
}

// SetProtection is PUT /maker/protection: the caller's settings replace its previous ones
// (the counted fills and any freeze stay). The answer is 200 ProtectionDTO; a setting out
// of its bounds is 400 and changes nothing.
type SetProtection struct {
	Req
	WindowSeconds  int           `json:"windowSeconds"`
	MaxFills       int           `json:"maxFills"`
	MaxNotionalUSD money.Decimal `json:"maxNotionalUsd"`
	FreezeSeconds  int           `json:"freezeSeconds"`
}

// ResetProtection is POST /maker/protection/reset: the caller's freeze ends now (200
// ProtectionDTO; without a freeze, nothing changes).
type ResetProtection struct{ Req }

func init() {
	registerFlow(SetProtection{})
	registerFlow(ResetProtection{})
}

// Kind names the input in the journal.
func (SetProtection) Kind() string { return "protection.set" }

func (c SetProtection) encodeBody(e *encoder) {
	e.Str(c.KeyHash)
	e.Int(c.WindowSeconds)
	e.Int(c.MaxFills)
	c.MaxNotionalUSD.Encode(e)
	e.Int(c.FreezeSeconds)
}

func (SetProtection) decodeBody(d *decoder) Input {
	return SetProtection{Req: Req{KeyHash: d.Str()}, WindowSeconds: d.Int(), MaxFills: d.Int(),
		MaxNotionalUSD: money.ReadDecimal(d), FreezeSeconds: d.Int()}
}

// CheckProtection returns why settings are out of their bounds, or nil. The transport
// and the desk share it.
func CheckProtection(windowSeconds, maxFills int, maxNotionalUSD money.Decimal, freezeSeconds int) error {
	switch {
	case windowSeconds < 0 || windowSeconds > MaxProtectionWindowSeconds:
		return fmt.Errorf("windowSeconds must be an integer from 0 to %d", MaxProtectionWindowSeconds)
	case maxFills < 0 || maxFills > MaxProtectionFills:
		return fmt.Errorf("maxFills must be an integer from 0 to %d", MaxProtectionFills)
	case maxNotionalUSD.Sign() < 0:
		return fmt.Errorf("maxNotionalUsd must not be negative")
	case freezeSeconds < 0 || freezeSeconds > MaxProtectionFreezeSeconds:
		return fmt.Errorf("freezeSeconds must be an integer from 0 to %d", MaxProtectionFreezeSeconds)
	}
	return nil
}

func (c SetProtection) run(a *applier, caller *Party) {
	if err := CheckProtection(c.WindowSeconds, c.MaxFills, c.MaxNotionalUSD, c.FreezeSeconds); err != nil {
		a.refuse(badRequest("%s", err.Error()))
		return
	}
	p := entryOf(&a.d.Protections, caller.ID)
	p.WindowSeconds, p.MaxFills, p.MaxNotionalUSD, p.FreezeSeconds = c.WindowSeconds, c.MaxFills, c.MaxNotionalUSD, c.FreezeSeconds
	p.settle(a.d.Now)
	a.reply(200, a.d.protectionDTO(caller.ID, a.d.Now))
}

// Kind names the input in the journal.
func (ResetProtection) Kind() string { return "protection.reset" }

func (c ResetProtection) encodeBody(e *encoder) { e.Str(c.KeyHash) }

func (ResetProtection) decodeBody(d *decoder) Input {
	return ResetProtection{Req: Req{KeyHash: d.Str()}}
}

func (ResetProtection) run(a *applier, caller *Party) {
	if p := a.d.Protections[caller.ID]; p != nil {
		p.Frozen, p.FrozenUntil = false, time.Time{}
		p.settle(a.d.Now)
	}
	a.reply(200, a.d.protectionDTO(caller.ID, a.d.Now))
}

// protectionFrozen refuses a quote submission of a frozen maker (409 MMP_FROZEN) and
// reports whether it did.
func (a *applier) protectionFrozen(maker *Party) bool {
	p := a.d.Protections[maker.ID]
	if p == nil || !p.frozenAt(a.d.Now) {
		return false
	}
	if p.FrozenUntil.IsZero() {
		a.refuse(apiErr(409, CodeMMPFrozen, "maker protection tripped: quoting is frozen until POST /maker/protection/reset"))
	} else {
		a.refuse(apiErr(409, CodeMMPFrozen, "maker protection tripped: quoting is frozen until %s or POST /maker/protection/reset", FormatTime(p.FrozenUntil)))
	}
	return true
}

// protectionFill counts an answered accept of the maker's quote and trips the protection
// when the window reaches a limit. It runs in the input that answered the accept 202.
func (a *applier) protectionFill(t *Trade) {
	p := a.d.Protections[t.Maker]
	if p == nil || !p.on() {
		return
	}
	p.settle(a.d.Now)
	p.record(ProtectionFill{At: t.AcceptedAt, Count: 1, NotionalUSD: a.d.rfqNotional(t.RFQ)})
	p.settle(a.d.Now) // an accept older than the window counts for nothing
	if p.Frozen {
		return // a trip is spent already: the freeze stands until its end or a reset
	}
	n, notional := p.inWindow(a.d.Now)
	var triggered string
	switch {
	case p.MaxFills > 0 && n >= p.MaxFills:
		triggered = TriggeredFills
	case p.MaxNotionalUSD.Sign() > 0 && notional.Cmp(p.MaxNotionalUSD) >= 0:
		triggered = TriggeredNotional
	default:
		return
	}
	p.Fills = nil
	p.Frozen, p.FrozenUntil = true, time.Time{}
	payload := MakerProtectionPayload{Triggered: triggered, Revoked: []string{}}
	if p.FreezeSeconds > 0 {
		p.FrozenUntil = a.d.Now.Add(time.Duration(p.FreezeSeconds) * time.Second)
		until := WireTime(p.FrozenUntil)
		payload.FrozenUntil = &until
	}
	a.withdrawWaitingSubmissions(t.Maker, apiErr(409, CodeMMPFrozen, "maker protection tripped before the quote was recorded"))
	payload.Revoked = append(payload.Revoked, a.revokeCancellable(t.Maker, RevokeProtection)...)
	a.emit(t.Maker, EvMakerProtection, payload)
}

// rfqNotional is an RFQ's USD notional as fixed at its creation (qty × usdPrice(base),
// truncated, the notional of its fee tier).
func (d *Desk) rfqNotional(id string) money.Decimal {
	if r := d.RFQs[id]; r != nil {
		return r.NotionalUSD
	}
	return money.FromInt(0)
}

// writeProtections writes the protections (snapshot version 3), by party id.
func writeProtections(e *encoder, ps map[string]*Protection) {
	writePtrMap(e, ps, func(e *encoder, p *Protection) {
		e.Int(p.WindowSeconds)
		e.Int(p.MaxFills)
		p.MaxNotionalUSD.Encode(e)
		e.Int(p.FreezeSeconds)
		writeSlice(e, p.Fills, func(e *encoder, f *ProtectionFill) {
			e.Time(f.At)
			e.Int(f.Count)
			f.NotionalUSD.Encode(e)
		})
		e.Bool(p.Frozen)
		e.Time(p.FrozenUntil)
	})
}

// readProtections reads what writeProtections wrote.
func readProtections(d *decoder) map[string]*Protection {
	return readMap(d, (*decoder).Str, func(d *decoder) *Protection {
		p := &Protection{WindowSeconds: d.Int(), MaxFills: d.Int(), MaxNotionalUSD: money.ReadDecimal(d), FreezeSeconds: d.Int()}
		p.Fills = readSlice(d, func(d *decoder) ProtectionFill {
			return ProtectionFill{At: d.Time(), Count: d.Int(), NotionalUSD: money.ReadDecimal(d)}
		})
		p.Frozen = d.Bool()
		p.FrozenUntil = d.Time()
		return p
	})
}
