package ledgersim

import (
	"errors"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// sellTrade builds DESIGN decision 2's SELL example: the taker sells qty base at price p.
type trade struct {
	ref    SettlementRef
	legs   []Leg
	allocs []struct {
		party string
		a     Allocate
	}
}

func sellTrade(e *env, id, maker, taker, base, quote string, qty, price money.Decimal, bps int) trade {
	q := qty.MulHalfEven(price)
	fee := money.Fee(q, bps)
	ref := SettlementRef{Executor: e.op, ID: id}
	sb := e.clk.Now().Add(15 * time.Minute)
	mk := func(leg string, side Side, inst string, amt money.Decimal) Allocate {
		return Allocate{Settlement: ref, LegID: leg, Side: side, Instrument: inst, Amount: amt, SettleBefore: sb}
	}
	tr := trade{ref: ref, legs: []Leg{
		{Sender: taker, Receiver: maker, Instrument: base, Amount: qty},
		{Sender: maker, Receiver: taker, Instrument: quote, Amount: q.Sub(fee)},
		{Sender: maker, Receiver: e.fees, Instrument: quote, Amount: fee},
	}}
	add := func(p string, a Allocate) {
		tr.allocs = append(tr.allocs, struct {
			party string
			a     Allocate
		}{p, a})
	}
	add(maker, mk("maker-base", SideReceive, base, qty))
	add(maker, mk("maker-quote", SideSend, quote, q))
	add(taker, mk("taker-base", SideSend, base, qty))
	add(taker, mk("taker-quote", SideReceive, quote, q.Sub(fee)))
	add(e.fees, mk("fee-quote", SideReceive, quote, fee))
	return tr
}

func (e *env) allocateAll(tr trade) []string {
	e.t.Helper()
	var cids []string
	for _, a := range tr.allocs {
		u := e.must(a.party, a.a)
		cids = append(cids, u.Allocation)
	}
	return cids
}

func TestSellTradeSettles(t *testing.T) {
	e, maker, taker := funded(t)
	tr := sellTrade(e, "t_1", maker, taker, "CBTC", "USDCx", d("0.1"), d("1234.56789"), 25)
	// q = 123.456789, fee = 0.3086419725 → taker gets 123.1481470275
	cids := e.allocateAll(tr)
	e.wantFree(maker, "USDCx", "876.543211")
	if got := e.locked(maker, "USDCx"); !got.Equal(d("123.456789")) {
		t.Fatalf("maker locked %s", got)
	}
	e.wantFree(taker, "CBTC", "0.4")
	e.check()
	before := e.l.Offset()
	u := e.must(e.op, Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: cids})
	if u.Offset != before+1 || len(u.UpdateID) != 68 || u.UpdateID[:4] != "1220" {
		t.Fatalf("update id/offset: %+v", u)
	}
	if len(u.Receipts) != 3 {
		t.Fatalf("receipts %v", u.Receipts)
	}
	for i, cid := range u.Receipts {
		c, err := e.l.Contract(cid)
		if err != nil || c.Holding.Owner != tr.legs[i].Receiver || !c.Holding.Amount.Equal(tr.legs[i].Amount) {
			t.Fatalf("receipt %d: %+v %v", i, c.Holding, err)
		}
	}
	e.wantFree(maker, "CBTC", "0.1")
	e.wantFree(maker, "USDCx", "876.543211")
	e.wantFree(taker, "USDCx", "123.1481470275")
	e.wantFree(taker, "CBTC", "0.4")
	e.wantFree(e.fees, "USDCx", "0.3086419725")
	for _, p := range []string{maker, taker} {
		for _, b := range e.l.Balances(p) {
			if !b.Locked.IsZero() {
				t.Fatalf("%s still has locked %s", p, b.Instrument)
			}
		}
	}
	for _, cid := range cids {
		if _, err := e.l.Allocation(cid); !errors.Is(err, ErrNotFound) {
			t.Fatalf("allocation %s survived settlement", cid)
		}
	}
	got, err := e.l.Update(u.UpdateID)
	if err != nil || got.Offset != u.Offset {
		t.Fatalf("Update(%s) = %+v, %v", u.UpdateID, got, err)
	}
	e.check()
	// Settling again: every allocation is gone.
	_, err = e.submit(e.op, Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: cids}, "settle-again")
	wantCat(t, err, CategoryNotFound)
}

func TestSettleAllOrNothing(t *testing.T) {
	type mutate func(e *env, tr *trade, cids []string) (Settle, string)
	cases := []struct {
		name string
		f    mutate
		want Category
	}{
		{"missing allocation", func(e *env, tr *trade, c []string) (Settle, string) {
			return Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: c[:4]}, e.op
		}, CategoryMismatch},
		{"wrong amount", func(e *env, tr *trade, c []string) (Settle, string) {
			legs := append([]Leg(nil), tr.legs...)
			legs[0].Amount = d("0.2")
			return Settle{Settlement: tr.ref, Legs: legs, Allocations: c}, e.op
		}, CategoryMismatch},
		{"not the executor", func(e *env, tr *trade, c []string) (Settle, string) {
			return Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: c}, e.house
		}, CategoryForbidden},
		{"other settlement", func(e *env, tr *trade, c []string) (Settle, string) {
			return Settle{Settlement: SettlementRef{Executor: e.op, ID: "other"}, Legs: tr.legs, Allocations: c}, e.op
		}, CategoryMismatch},
		{"unused allocation", func(e *env, tr *trade, c []string) (Settle, string) {
			return Settle{Settlement: tr.ref, Legs: tr.legs[:2], Allocations: c}, e.op
		}, CategoryMismatch},
		{"unknown allocation", func(e *env, tr *trade, c []string) (Settle, string) {
			return Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: append(c[:4:4], "00ff")}, e.op
		}, CategoryNotFound},
		{"duplicate allocation", func(e *env, tr *trade, c []string) (Settle, string) {
			return Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: append(c[:5:5], c[0])}, e.op
		}, CategoryInvalid},
		{"no legs", func(e *env, tr *trade, c []string) (Settle, string) {
			return Settle{Settlement: tr.ref, Allocations: c}, e.op
		}, CategoryInvalid},
		{"expired", func(e *env, tr *trade, c []string) (Settle, string) {
			e.clk.Advance(16 * time.Minute)
			return Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: c}, e.op
		}, CategoryExpired},
		{"withdrawn allocation", func(e *env, tr *trade, c []string) (Settle, string) {
			e.must(tr.allocs[2].party, WithdrawAllocation{Allocation: c[2]})
			return Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: c}, e.op
		}, CategoryNotFound},
		{"self leg", func(e *env, tr *trade, c []string) (Settle, string) {
			legs := append([]Leg(nil), tr.legs...)
			legs[0].Receiver = legs[0].Sender
			return Settle{Settlement: tr.ref, Legs: legs, Allocations: c}, e.op
		}, CategoryInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, maker, taker := funded(t)
			tr := sellTrade(e, "t_1", maker, taker, "CBTC", "USDCx", d("0.1"), d("1000"), 30)
			cids := e.allocateAll(tr)
			s, actor := tc.f(e, &tr, cids)
			digest, off := e.l.Digest(), e.l.Offset()
			_, err := e.submit(actor, s, "settle")
			wantCat(t, err, tc.want)
			if e.l.Offset() != off {
				t.Fatal("a failed settlement assigned an offset")
			}
			if tc.name != "expired" && e.l.Digest() != digest {
				t.Fatal("a failed settlement changed the state")
			}
			e.check()
		})
	}
}

// funded is the start of the trade tests: external parties maker1 holding 1000 USDCx and
// taker1 holding 0.5 CBTC.
func funded(t *testing.T) (e *env, maker, taker string) {
	t.Helper()
	e = newEnv(t, ProfileTestnet)
	maker, taker = e.external("maker1"), e.external("taker1")
	e.fund(maker, "USDCx", "1000")
	e.fund(taker, "CBTC", "0.5")
	return e, maker, taker
}

// allocating is the start of the allocation tests: an external party maker1 holding 100
// USDCx, and the send allocation of amount to the operator's settlement s1 on leg.
func allocating(t *testing.T, leg, amount string) (*env, string, Allocate) {
	t.Helper()
	e := newEnv(t, ProfileTestnet)
	maker := e.external("maker1")
	e.fund(maker, "USDCx", "100")
	ref := SettlementRef{Executor: e.op, ID: "s1"}
	return e, maker, Allocate{Settlement: ref, LegID: leg, Side: SideSend, Instrument: "USDCx", Amount: d(amount), SettleBefore: t0.Add(time.Hour)}
}

func TestCancelReleasesAllocation(t *testing.T) {
	e, maker, a := allocating(t, "maker-quote", "40")
	u := e.must(maker, a)
	e.wantFree(maker, "USDCx", "60")
	// Same leg again → already exists.
	_, err := e.run(maker, a, "dup-leg")
	wantCat(t, err, CategoryAlreadyExists)
	// A stranger may not cancel.
	_, err = e.submit(e.house, CancelAllocation{Allocation: u.Allocation}, "c1")
	wantCat(t, err, CategoryForbidden)
	// The executor may.
	cu := e.must(e.op, CancelAllocation{Allocation: u.Allocation})
	if len(cu.Released) != 1 {
		t.Fatalf("released %v", cu.Released)
	}
	e.wantFree(maker, "USDCx", "100")
	// Withdraw by a non-owner is forbidden; by the owner fine.
	u = e.must(maker, a)
	_, err = e.submit(e.op, WithdrawAllocation{Allocation: u.Allocation}, "w1")
	wantCat(t, err, CategoryForbidden)
	e.must(maker, WithdrawAllocation{Allocation: u.Allocation})
	e.wantFree(maker, "USDCx", "100")
	e.check()
}

func TestAllocateErrors(t *testing.T) {
	e, maker, base := allocating(t, "l", "10")
	cases := []struct {
		name string
		mod  func(a *Allocate)
		want Category
	}{
		{"ok", func(a *Allocate) {}, CategoryNone},
		{"insufficient", func(a *Allocate) { a.Amount = d("1000") }, CategoryInsufficientFunds},
		{"no holdings to name", func(a *Allocate) { a.Instrument = "CBTC" }, CategoryInvalid},
		{"unknown instrument", func(a *Allocate) { a.Instrument = "XYZ" }, CategoryNotFound},
		{"unknown executor", func(a *Allocate) { a.Settlement.Executor = "nobody::1220" }, CategoryNotFound},
		{"zero amount", func(a *Allocate) { a.Amount = money.Zero }, CategoryInvalid},
		{"more digits than the instrument's decimals", func(a *Allocate) { a.Amount = d("9.0000000001") }, CategoryNone},
		{"bad side", func(a *Allocate) { a.Side = 7 }, CategoryInvalid},
		{"no settleBefore", func(a *Allocate) { a.SettleBefore = time.Time{} }, CategoryInvalid},
		{"settleBefore passed", func(a *Allocate) { a.SettleBefore = t0.Add(-time.Second) }, CategoryExpired},
		{"allocateBefore passed", func(a *Allocate) { a.AllocateBefore = t0.Add(-time.Second) }, CategoryExpired},
		{"allocateBefore after settleBefore", func(a *Allocate) { a.AllocateBefore = t0.Add(2 * time.Hour) }, CategoryInvalid},
		{"empty leg", func(a *Allocate) { a.LegID = "" }, CategoryInvalid},
		{"receive needs no funds", func(a *Allocate) { a.Side = SideReceive; a.Amount = d("1000000"); a.LegID = "r" }, CategoryNone},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			a.LegID = tc.name
			tc.mod(&a)
			_, err := e.prepare(maker, a, "alloc-"+string(rune('a'+i)))
			wantCat(t, err, tc.want)
		})
	}
}

// TestAmountsIgnoreInstrumentDecimals: an instrument's Decimals is catalog metadata; every
// amount may carry up to 10 fractional digits (SPEC.md, DECISIONS.md Money), so a trade
// whose qty × price and fee land on 10 digits settles in instruments of fewer decimals.
func TestAmountsIgnoreInstrumentDecimals(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	if in, _ := e.l.Instrument("USDCx"); in.Decimals != 6 {
		t.Fatalf("USDCx decimals %d, the test needs fewer than 10", in.Decimals)
	}
	maker, taker := e.external("maker1"), e.external("taker1")
	e.fund(maker, "USDCx", "1000.0000000001") // 10 digits, USDCx has 6
	e.fund(taker, "CBTC", "0.0000000123")     // 10 digits, CBTC has 8
	tr := sellTrade(e, "t_digits", maker, taker, "CBTC", "USDCx", d("0.0000000123"), d("98765.4321"), 25)
	// q = 0.0000000123 × 98765.4321 = 0.00121481481483 → 0.0012148148 (half-even);
	// fee = 0.0012148148 × 25 / 10000 = 0.0000030370370 → 0.000003037 (truncated).
	if q := tr.allocs[1].a.Amount; !q.Equal(d("0.0012148148")) {
		t.Fatalf("quote amount %s", q)
	}
	if fee := tr.legs[2].Amount; !fee.Equal(d("0.000003037")) {
		t.Fatalf("fee %s", fee)
	}
	cids := e.allocateAll(tr)
	e.must(e.op, Settle{Settlement: tr.ref, Legs: tr.legs, Allocations: cids})
	e.wantFree(maker, "CBTC", "0.0000000123")
	e.wantFree(maker, "USDCx", "999.9987851853")
	e.wantFree(taker, "USDCx", "0.0012117778")
	e.wantFree(e.fees, "USDCx", "0.000003037")
	e.check()

	// Genesis funding and faucet drips of 10 digits are fine for an instrument of 0 decimals.
	cfg := testConfig(ProfileTestnet, NewManualClock(t0))
	cfg.Instruments = append(cfg.Instruments, InstrumentSpec{ID: "Whole", Decimals: 0})
	cfg.Parties[2].Funding = append(cfg.Parties[2].Funding, Funding{Instrument: "Whole", Amount: d("5.0000000001")})
	cfg.Faucet.Drip = append(cfg.Faucet.Drip, Funding{Instrument: "Whole", Amount: d("0.0000000001")})
	if _, err := New(cfg); err != nil {
		t.Fatalf("10-digit funding of a 0-decimals instrument refused: %v", err)
	}

	// Positive still required.
	_, err := e.submit(e.house, Transfer{Receiver: taker, Instrument: "USDCx", Amount: money.Zero}, "zero")
	wantCat(t, err, CategoryInvalid)
}
