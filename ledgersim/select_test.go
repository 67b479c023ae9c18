package ledgersim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// selectByRule is the selection rule applied to the whole list, largest first, as the
// adapter applies it to FreeHoldings (ledgeradapter.SelectInputs): the smallest usable
// single holding that covers amount, else the largest first up to maxInputs.
func selectByRule(free []*Holding, reserved []string, amount money.Decimal, maxInputs int) ([]string, bool) {
	usable := func(h *Holding) bool { _, found := slices.BinarySearch(reserved, h.CID); return !found }
	for i := len(free) - 1; i >= 0; i-- {
		if h := free[i]; h.Amount.Cmp(amount) >= 0 && usable(h) {
			return []string{h.CID}, true
		}
	}
	var out []string
	sum := money.Zero
	for _, h := range free {
		if usable(h) && len(out) < maxInputs && sum.Cmp(amount) < 0 {
			out = append(out, h.CID)
			sum = sum.Add(h.Amount)
		}
	}
	if sum.Cmp(amount) >= 0 {
		return out, true
	}
	return nil, false
}

// TestSelectFreeProperty: SelectFree's binary search and early stop choose exactly what
// the rule chooses over the whole list, for any set (ties in amount, amounts without an
// integer key, holdings in the sorted array and in the unsorted tail), any reserved
// subset, amount and input limit.
func TestSelectFreeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s holdingSet
		var model []*Holding
		n := rapid.IntRange(0, 80).Draw(t, "n")
		for i := range n {
			h := &Holding{CID: fmt.Sprintf("00%04x", rapid.IntRange(0, 1<<12).Draw(t, "cid")*128+i),
				Amount: money.MustParse(rapid.SampledFrom(testAmounts).Draw(t, "amount"))}
			s.add(h)
			model = append(model, h)
		}
		for range rapid.IntRange(0, len(model)).Draw(t, "removes") {
			h := rapid.SampledFrom(model).Draw(t, "removed")
			s.remove(h)
			model = slices.DeleteFunc(model, func(m *Holding) bool { return m == h })
		}
		var reserved []string
		for _, h := range model {
			if rapid.IntRange(0, 3).Draw(t, "reserve") == 0 {
				reserved = append(reserved, h.CID)
			}
		}
		slices.Sort(reserved)
		amount := money.MustParse(rapid.SampledFrom(append([]string{"0", "3", "20.5", "2000000000"}, testAmounts...)).Draw(t, "needed"))
		maxInputs := rapid.IntRange(0, 6).Draw(t, "maxInputs")
		list := slices.Clone(model)
		slices.SortFunc(list, holdingCmp) // selection order, largest first
		want, wantOK := selectByRule(list, reserved, amount, maxInputs)
		got, ok := s.selectFree(amount, reserved, maxInputs)
		if ok != wantOK || !slices.Equal(got, want) {
			t.Fatalf("selectFree(%s, max %d) = %v %v, the rule over %v chooses %v %v", amount, maxInputs, got, ok, cidsOf(list), want, wantOK)
		}
	})
}

// TestSelectFreeLedger: on a ledger, SelectFree agrees with the rule over FreeHoldings,
// and takes what a prepare accepts.
func TestSelectFreeLedger(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice := e.external("alice")
	for _, amt := range []string{"5", "30", "30", "12", "100"} {
		e.fund(alice, "USDCx", amt)
	}
	list := func() []*Holding {
		var out []*Holding
		for _, f := range e.l.FreeHoldings(alice, "USDCx") {
			out = append(out, &Holding{CID: f.CID, Amount: f.Amount})
		}
		return out
	}
	free := list()
	reserved := []string{free[1].CID} // one of the 30s
	slices.Sort(reserved)
	for _, c := range []struct {
		amount string
		max    int
	}{{"1", 4}, {"12", 4}, {"25", 4}, {"31", 4}, {"150", 4}, {"150", 2}, {"177", 5}, {"178", 5}} {
		want, wantOK := selectByRule(free, reserved, d(c.amount), c.max)
		got, ok := e.l.SelectFree(alice, "USDCx", d(c.amount), reserved, c.max)
		if ok != wantOK || !slices.Equal(got, want) {
			t.Errorf("SelectFree(%s, max %d) = %v %v, want %v %v", c.amount, c.max, got, ok, want, wantOK)
		}
	}
	if got, ok := e.l.SelectFree(alice, "CBTC", d("1"), nil, 4); ok || got != nil {
		t.Errorf("no holdings of the instrument: %v %v", got, ok)
	}
	inputs, ok := e.l.SelectFree(alice, "USDCx", d("40"), nil, 4)
	if !ok {
		t.Fatal("40 of 177 not covered")
	}
	if _, err := e.run(alice, Allocate{Settlement: SettlementRef{Executor: e.op, ID: "s"}, LegID: "a", Side: SideSend,
		Instrument: "USDCx", Amount: d("40"), SettleBefore: t0.Add(3600e9), Inputs: inputs}, "c"); err != nil {
		t.Fatal(err)
	}
}
