package model

import (
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// deskWorld runs a real desk (machine.Apply) and the model in lockstep on inputs a test
// chooses, with desk-signed house parties only, so that no ledger is needed for the
// answers the desk gives from its own state. Every input's outputs are judged by the model.
type deskWorld struct {
	t   *testing.T
	d   *machine.Desk
	m   *Model
	seq uint64
	now time.Time
}

// Key hashes are hex SHA-256 in the configuration; any 64 hex digits do here.
var (
	takerKey  = strings.Repeat("a1", 32)
	taker2Key = strings.Repeat("b2", 32)
	makerKey  = strings.Repeat("c3", 32)
)

func newDeskWorld(t *testing.T, tiers []machine.FeeTier) *deskWorld {
	cfg := testConfig()
	cfg.FeeTiers = tiers
	cfg.House = []machine.HouseParty{
		{Hint: "taker-one", PartyID: "taker-one::1220aa", Role: machine.HouseTaker, KeyHash: takerKey},
		{Hint: "taker-two", PartyID: "taker-two::1220bb", Role: machine.HouseTaker, KeyHash: taker2Key},
		{Hint: "maker-one", PartyID: "maker-one::1220cc", Role: machine.HouseMaker, KeyHash: makerKey},
	}
	d, err := machine.NewDesk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &deskWorld{t: t, d: d, m: m, now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	w.apply(machine.Boot{})
	w.apply(machine.SocketOpened{Socket: 1, KeyHash: makerKey}) // the maker is online
	return w
}

// apply feeds one input to the desk and the model; it returns the reply to it, if any.
func (w *deskWorld) apply(in machine.Input) *machine.Reply {
	w.t.Helper()
	w.seq++
	env := machine.Envelope{Seq: w.seq, At: w.now, Input: in}
	out := machine.Apply(w.d, env)
	if err := w.m.Apply(env, out); err != nil {
		w.t.Fatalf("the desk diverged from the contract: %v", err)
	}
	for _, r := range out.Replies {
		if r.Seq == w.seq {
			return &r
		}
	}
	return nil
}

func (w *deskWorld) rfq(key, qty string, ttl int64) *machine.Reply {
	return w.apply(machine.CreateRFQ{Req: machine.Req{KeyHash: key}, Direction: machine.Sell, Qty: money.MustParse(qty),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{"maker-one"}, TTLSeconds: ttl})
}

// Boundary inputs the simulation's tickets rarely reach, judged by the model against the
// real desk: the minimum notional and the tier boundary exactly, the tier and the fee on
// either side, validUntil exactly at the deadline and 1 ms after, dust at 10 digits, and
// another party's RFQ. A one-line bug in any of these rules fails here.
func TestDeskAtTheBoundaries(t *testing.T) {
	tiers := []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}, {MinNotionalUSD: money.MustParse("10000"), FeeBps: 10}}
	w := newDeskWorld(t, tiers)
	// cbtc is 100000 USD and the minimum ticket 10 USD: 0.0001 is exactly the minimum.
	for _, c := range []struct {
		qty    string
		status int
		bps    int
	}{
		{"0.0001", 200, 25},       // exactly the minimum notional
		{"0.00009999", 400, 0},    // under it: BELOW_MIN_NOTIONAL
		{"0.09999999", 200, 25},   // 9999.999 USD: the base tier
		{"0.1", 200, 10},          // exactly 10000 USD: the next tier
		{"0.1000000001", 200, 10}, // just above
	} {
		rep := w.rfq(takerKey, c.qty, 60)
		if rep == nil || rep.Status != c.status {
			t.Fatalf("qty %s: %+v", c.qty, rep)
		}
		if d, ok := rep.Body.(machine.RfqDTO); ok && d.FeeBps != c.bps {
			t.Fatalf("qty %s: %d bps", c.qty, d.FeeBps)
		}
	}
	rep := w.rfq(takerKey, "1", 60)
	rfq := rep.Body.(machine.RfqDTO)
	deadline := time.Time(rfq.Deadline)
	submit := func(price string, until *time.Time) *machine.Reply {
		return w.apply(machine.SubmitQuote{Req: machine.Req{KeyHash: makerKey}, RFQID: rfq.RfqID, Price: money.MustParse(price), ValidUntil: until})
	}
	// validUntil exactly at the deadline is allowed (it waits on the ledger: no answer yet);
	// 1 ms after it is 409.
	if rep := submit("60000", &deadline); rep != nil {
		t.Fatalf("validUntil at the deadline answered at once: %+v", rep)
	}
	after := deadline.Add(time.Millisecond)
	if rep := submit("60000", &after); rep == nil || rep.Status != 409 {
		t.Fatalf("validUntil after the deadline: %+v", rep)
	}
	// qty 1 at the 10 bps tier: quoteAmount 0.00000006 makes a fee of 0.00000000006, which
	// truncates to zero: DUST_TRADE. 0.0000001 makes 0.0000000001: a fee, no dust.
	if rep := submit("0.00000006", nil); rep == nil || rep.Status != 409 || rep.Err.Code != machine.CodeDustTrade {
		t.Fatalf("a fee that truncates to zero: %+v", rep)
	}
	if rep := submit("0.0000001", nil); rep != nil {
		t.Fatalf("a fee of 0.0000000001 answered at once: %+v", rep)
	}
	// Another taker's RFQ: 403 on cancel; the owner's cancel passes.
	if rep := w.apply(machine.CancelRFQ{Req: machine.Req{KeyHash: taker2Key}, RFQID: rfq.RfqID}); rep == nil || rep.Status != 403 {
		t.Fatalf("cancel of another's RFQ: %+v", rep)
	}
	if rep := w.apply(machine.CancelRFQ{Req: machine.Req{KeyHash: "stranger"}, RFQID: rfq.RfqID}); rep == nil || rep.Status != 401 {
		t.Fatalf("cancel with an unknown key: %+v", rep)
	}
}

// Without a fee (a 0 bps tier), the quote-instrument amount itself decides dust: qty ×
// price rounds half-even at 10 digits, so 0.6 × 0.0000000001 is a leg of 0.0000000001 and
// 0.4 × 0.0000000001 is zero: DUST_TRADE; the ties 0.5 and 2.5 go to the even 0 and 2, 1.5 up to 2.
func TestDeskRoundsTheLegHalfEven(t *testing.T) {
	w := newDeskWorld(t, []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 0}})
	for _, c := range []struct {
		qty  string
		dust bool
	}{{"0.6", false}, {"0.5", true}, {"0.4", true}, {"1.5", false}, {"2.5", false}} {
		rfq := w.rfq(takerKey, c.qty, 60).Body.(machine.RfqDTO)
		rep := w.apply(machine.SubmitQuote{Req: machine.Req{KeyHash: makerKey}, RFQID: rfq.RfqID, Price: money.MustParse("0.0000000001")})
		if got := rep != nil && rep.Err != nil && rep.Err.Code == machine.CodeDustTrade; got != c.dust {
			t.Fatalf("qty %s × 0.0000000001: dust %v, reply %+v", c.qty, got, rep)
		}
	}
}

// TestReconfigureInLockstep: a configuration change journaled at a start moves the model's
// minimum notional and fee tiers with the desk's; one that cannot apply changes neither.
func TestReconfigureInLockstep(t *testing.T) {
	tiers := []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}, {MinNotionalUSD: money.MustParse("10000"), FeeBps: 10}}
	w := newDeskWorld(t, tiers)
	if rep := w.rfq(takerKey, "0.001", 60); rep.Err != nil { // 100 USD: above the minimum
		t.Fatalf("before the change: %+v", rep.Err)
	}
	next := w.d.Cfg
	next.MinNotionalUSD = money.MustParse("500")
	next.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 40}}
	w.apply(machine.Reconfigure{Config: next})
	if rep := w.rfq(takerKey, "0.001", 60); rep.Err == nil || rep.Err.Code != machine.CodeBelowMinNotional {
		t.Fatalf("after raising the minimum to 500 USD, a 100 USD ticket: %+v", rep)
	}
	if rep := w.rfq(takerKey, "0.01", 60); rep.Err != nil || rep.Body.(machine.RfqDTO).FeeBps != 40 {
		t.Fatalf("after the new tiers: %+v", rep)
	}
	bad := w.d.Cfg
	bad.Seed++
	bad.MinNotionalUSD = money.MustParse("1")
	w.apply(machine.Reconfigure{Config: bad}) // refused by the desk: the minimum stays 500
	if rep := w.rfq(takerKey, "0.001", 60); rep.Err == nil || rep.Err.Code != machine.CodeBelowMinNotional {
		t.Fatalf("a refused change applied: %+v", rep)
	}
}
