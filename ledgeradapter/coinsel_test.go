package ledgeradapter_test

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// TestSelectInputsRule: SelectInputs never names a reserved holding, names at most
// maxInputs, covers the amount whenever the unreserved holdings can within the limit
// (and only then), takes a single holding whenever one covers, the smallest such, and
// otherwise the largest first.
func TestSelectInputsRule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(t, "holdings")
		free := make([]ledgersim.FreeHolding, n)
		for i := range free {
			free[i] = ledgersim.FreeHolding{CID: fmt.Sprintf("00%02d", i), Amount: money.FromInt(int64(rapid.IntRange(1, 9).Draw(t, "amount")))}
		}
		slices.SortFunc(free, func(a, b ledgersim.FreeHolding) int {
			if c := b.Amount.Cmp(a.Amount); c != 0 {
				return c
			}
			return strings.Compare(a.CID, b.CID)
		})
		var reserved []string
		for _, h := range free {
			if rapid.IntRange(0, 3).Draw(t, "reserve") == 0 {
				reserved = append(reserved, h.CID)
			}
		}
		slices.Sort(reserved)
		amount := money.FromInt(int64(rapid.IntRange(1, 30).Draw(t, "needed")))
		limit := rapid.IntRange(1, 4).Draw(t, "limit")
		got, short := ledgeradapter.SelectInputs(free, reserved, amount, limit)

		var usable []ledgersim.FreeHolding
		total := money.Zero
		for _, h := range free {
			if !slices.Contains(reserved, h.CID) {
				usable = append(usable, h)
				total = total.Add(h.Amount)
			}
		}
		// What the largest `limit` usable holdings hold: the most any choice covers.
		best := money.Zero
		for _, h := range usable[:min(limit, len(usable))] {
			best = best.Add(h.Amount)
		}
		if best.Cmp(amount) < 0 {
			if short == nil || got != nil || !short.Free.Equal(total) || !short.Needed.Equal(amount) ||
				(short.MaxInputs != 0) != (total.Cmp(amount) >= 0) {
				t.Fatalf("uncoverable: got %v %+v (total %s, best %s, need %s)", got, short, total, best, amount)
			}
			return
		}
		if short != nil || len(got) == 0 || len(got) > limit {
			t.Fatalf("coverable by %s: got %v %+v", best, got, short)
		}
		sum := money.Zero
		for _, cid := range got {
			if slices.Contains(reserved, cid) {
				t.Fatalf("named reserved holding %s", cid)
			}
			i := slices.IndexFunc(free, func(h ledgersim.FreeHolding) bool { return h.CID == cid })
			sum = sum.Add(free[i].Amount)
		}
		if sum.Cmp(amount) < 0 {
			t.Fatalf("%v hold %s < %s", got, sum, amount)
		}
		var single *ledgersim.FreeHolding
		for i := range usable {
			if usable[i].Amount.Cmp(amount) >= 0 {
				single = &usable[i] // the last covering one: the smallest
			}
		}
		switch {
		case single != nil && (len(got) != 1 || got[0] != single.CID):
			t.Fatalf("a single holding %s covers %s, got %v", single.CID, amount, got)
		case single == nil:
			for i, cid := range got {
				if cid != usable[i].CID {
					t.Fatalf("not largest first: got %v, usable %v", got, usable)
				}
			}
		}
	})
}

// funded onboards an external party and gives it holdings of amounts of usdcx.
func funded(t *testing.T, a *ledgeradapter.Adapter, ps ledgeradapter.Parties, hint string, amounts ...string) (string, ed25519.PrivateKey) {
	t.Helper()
	party, priv := onboard(t, a, hint)
	for i, amt := range amounts {
		res := do(t, a, machine.LedgerCall{CommandID: fmt.Sprintf("%s-fund-%d", hint, i), Op: machine.OpSubmit, ActAs: ps.Reservoir,
			Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: party, Instrument: "usdcx-registry", Amount: money.MustParse(amt)}}})
		if res.Failure != nil {
			t.Fatalf("fund: %+v", res.Failure)
		}
		prep := do(t, a, machine.LedgerCall{CommandID: fmt.Sprintf("%s-acc-%d", hint, i), Op: machine.OpPrepare, ActAs: party,
			Command: &machine.Command{AcceptTransfer: &machine.AcceptTransferCmd{InstructionCID: res.InstructionCID}}})
		if ex := do(t, a, machine.LedgerCall{CommandID: fmt.Sprintf("%s-acc-%d:x", hint, i), Op: machine.OpExecute, ActAs: party,
			PreparedID: prep.PreparedID, Prepared: prep.Prepared, Signature: ed25519.Sign(priv, prep.Hash)}); ex.Failure != nil {
			t.Fatalf("accept: %+v", ex.Failure)
		}
	}
	return party, priv
}

// TestAdapterSelectsAroundReserved: the adapter names the inputs of a send allocation
// (smallest covering first), never one the call reserves, answers with them, and, when
// the unreserved holdings cannot cover it, answers insufficient funds in the party's terms
// while the ledger's own free total would have covered it.
func TestAdapterSelectsAroundReserved(t *testing.T) {
	a, ps := embedded(t)
	party, _ := funded(t, a, ps, "maker", "5", "8")
	free := a.L.FreeHoldings(party, "usdcx-registry")
	if len(free) != 2 {
		t.Fatalf("free holdings %+v", free)
	}
	big, small := free[0].CID, free[1].CID
	alloc := func(id, amount string, reserved ...string) machine.LedgerResult {
		return do(t, a, machine.LedgerCall{CommandID: id, Op: machine.OpPrepare, ActAs: party, Reserved: reserved,
			Command: &machine.Command{Allocate: &machine.AllocateCmd{Executor: ps.Operator, SettlementID: id, LegID: "l", Owner: party,
				Send: true, Instrument: "usdcx-registry", Amount: money.MustParse(amount), SettleBefore: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}}})
	}
	if res := alloc("a1", "4"); res.Failure != nil || !slices.Equal(res.Inputs, []string{small}) {
		t.Fatalf("smallest covering: %+v", res)
	}
	if res := alloc("a2", "4", small); res.Failure != nil || !slices.Equal(res.Inputs, []string{big}) {
		t.Fatalf("around the reserved one: %+v", res)
	}
	if res := alloc("a3", "10"); res.Failure != nil || !slices.Equal(res.Inputs, []string{big, small}) {
		t.Fatalf("largest first: %+v", res)
	}
	res := alloc("a4", "6", big)
	if res.Failure == nil || res.Failure.Category != machine.LedgerInsufficientFunds || res.Failure.Message != "5 usdcx free, 6 usdcx needed" {
		t.Fatalf("reserved funds: %+v", res)
	}
	if res := alloc("a5", "1", big, small); res.Failure == nil || res.Failure.Category != machine.LedgerInsufficientFunds {
		t.Fatalf("all reserved: %+v", res)
	}
}

// TestConcurrentSubmitsOfOneParty: desk-signed submits of one party running at once (the
// faucet reservoir serving many draws) each name holdings nobody else names: the adapter
// holds the party while it reads its holdings and submits.
func TestConcurrentSubmitsOfOneParty(t *testing.T) {
	a, ps := embedded(t)
	party, _ := onboard(t, a, "taker")
	var wg sync.WaitGroup
	fails := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := a.Do(t.Context(), machine.LedgerCall{CommandID: fmt.Sprintf("f-%d", i), Op: machine.OpSubmit, ActAs: ps.Reservoir,
				Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: party, Instrument: "usdcx-registry", Amount: money.MustParse("1")}}})
			if res.Failure != nil {
				fails <- res.Failure.Message
			}
		}()
	}
	wg.Wait()
	close(fails)
	for f := range fails {
		t.Errorf("a concurrent submit failed: %s", f)
	}
	if got := len(a.Incoming(party)); got != 16 {
		t.Fatalf("%d transfers arrived, want 16", got)
	}
}
