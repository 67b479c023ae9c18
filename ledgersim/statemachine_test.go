package ledgersim

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// machine drives random sequences of ledger calls and checks the invariants after each.
type machine struct {
	l        *Ledger
	clk      *ManualClock
	cfg      Config
	fault    Fault
	keys     map[string]ed25519.PrivateKey
	parties  []string // external and internal parties that trade
	op, res  string
	inputs   []Input
	prepCmd  map[string]string // prepared id → command id
	effects  map[string]string // command id → update id (from recorded inputs)
	results  map[string]string // command id → update id answered to us
	cmdIDs   []string
	actAs    map[string]string // command id → the party that sent it ("" for a listing)
	prepared []Prepared
	seq      int
	// listed are the instruments listed after genesis ("list" action), funded in the
	// reservoir and drawn by "fund" beside the genesis ones.
	listed []string
	// Swarm testing: each run draws its own fault and wrong-key rates (out of 20).
	faultRate, wrongKeyRate int
}

var (
	smAmounts     = []string{"0.0000000001", "0.5", "1", "2.25", "10", "40"}
	smInstruments = []string{"Amulet", "USDCx", "CBTC"}
)

func newMachine(t *rapid.T) *machine {
	m := &machine{clk: NewManualClock(t0), keys: map[string]ed25519.PrivateKey{}, prepCmd: map[string]string{},
		effects: map[string]string{}, results: map[string]string{}, actAs: map[string]string{}}
	m.faultRate = rapid.IntRange(0, 4).Draw(t, "faultRate")
	m.wrongKeyRate = rapid.IntRange(0, 3).Draw(t, "wrongKeyRate")
	m.cfg = testConfig(ProfileTestnet, m.clk)
	// The model never forgets a command: no bound by count or by age (dedup_window_test.go
	// covers the window).
	m.cfg.Limits.MaxRetainedUpdates = 1 << 20
	m.cfg.DedupWindow = -1
	m.cfg.FaultPlan = FaultFunc(func(CallInfo) Fault { f := m.fault; m.fault = Fault{}; return f })
	m.cfg.Recorder = func(in Input) { m.record(t, in) }
	l, err := New(m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.l = l
	m.op, _ = l.InternalParty("operator")
	m.res, _ = l.InternalParty("reservoir")
	house, _ := l.InternalParty("house")
	m.parties = []string{house}
	return m
}

func (m *machine) record(t *rapid.T, in Input) {
	m.inputs = append(m.inputs, in)
	switch in.Kind {
	case InputPrepare:
		m.prepCmd[in.PreparedID] = in.CommandID
	case InputExecute, InputSubmit:
		id := in.CommandID
		if in.Kind == InputExecute {
			id = m.prepCmd[in.PreparedID]
		}
		if prev, dup := m.effects[id]; dup {
			t.Fatalf("command %s took effect twice: %s and %s", id, prev, in.UpdateID)
		}
		m.effects[id] = in.UpdateID
	}
}

func (m *machine) maybeFault(t *rapid.T) {
	if rapid.IntRange(0, 19).Draw(t, "fault") >= m.faultRate {
		return
	}
	switch rapid.IntRange(0, 1).Draw(t, "faultKind") {
	case 0:
		m.fault = Fault{Reject: rapid.SampledFrom([]Category{CategoryContention, CategoryUnavailable, CategoryRejected, CategoryInternal}).Draw(t, "reject")}
	case 1:
		m.fault = Fault{LoseAnswer: true}
	}
}

func (m *machine) newCmdID() string {
	m.seq++
	id := fmt.Sprintf("c%d", m.seq)
	m.cmdIDs = append(m.cmdIDs, id)
	return id
}

// noteResult checks that every answer for a command id names the same update.
func (m *machine) noteResult(t *rapid.T, cmdID string, u Update, err error) {
	if err != nil {
		return
	}
	if prev, ok := m.results[cmdID]; ok && prev != u.UpdateID {
		t.Fatalf("command %s answered %s, earlier %s", cmdID, u.UpdateID, prev)
	}
	m.results[cmdID] = u.UpdateID
}

// run executes cmd for party, with a random fault and, for external parties, sometimes
// the wrong key.
func (m *machine) run(t *rapid.T, party string, cmd Command, cmdID string) (Update, error) {
	k, ext := m.keys[party]
	m.actAs[cmdID] = party
	if !ext {
		m.maybeFault(t)
		u, err := m.l.Submit(party, named(m.l, party, cmd), cmdID)
		m.noteResult(t, cmdID, u, err)
		return u, err
	}
	m.maybeFault(t)
	p, err := m.l.Prepare(party, named(m.l, party, cmd), cmdID)
	if err != nil {
		return Update{}, err
	}
	m.prepared = append(m.prepared, p)
	return m.execute(t, p, k)
}

func (m *machine) execute(t *rapid.T, p Prepared, k ed25519.PrivateKey) (Update, error) {
	if rapid.IntRange(0, 19).Draw(t, "wrongKey") < m.wrongKeyRate {
		k = testKey("mallory")
	}
	m.maybeFault(t)
	u, err := m.l.Execute(p.Blob, ed25519.Sign(k, p.Hash[:]))
	if err == nil && u.CommandID != p.CommandID {
		t.Fatalf("execute of %s answered command %s", p.CommandID, u.CommandID)
	}
	m.noteResult(t, p.CommandID, u, err)
	return u, err
}

func (m *machine) party(t *rapid.T) string { return rapid.SampledFrom(m.parties).Draw(t, "party") }
func (m *machine) amount(t *rapid.T) money.Decimal {
	return d(rapid.SampledFrom(smAmounts).Draw(t, "amount"))
}

func (m *machine) liveAllocations() []Allocation {
	var out []Allocation
	for _, p := range m.parties {
		out = append(out, m.l.Allocations(p)...)
	}
	out = append(out, m.l.Allocations(m.op)...)
	return out
}

func (m *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"onboard": func(t *rapid.T) {
			if len(m.parties) >= 5 {
				t.Skip("enough parties")
			}
			hint := fmt.Sprintf("p%d", len(m.parties))
			k := testKey(hint)
			m.maybeFault(t)
			ob, err := m.l.OnboardExternal(hint, k.Public().(ed25519.PublicKey))
			if err != nil { // an injected fault: retry without one
				ob, err = m.l.OnboardExternal(hint, k.Public().(ed25519.PublicKey))
				if err != nil {
					t.Fatalf("onboard retry: %v", err)
				}
			}
			var sigs [][]byte
			for _, tx := range ob.Topology {
				sigs = append(sigs, ed25519.Sign(k, tx.Hash))
			}
			if err := m.l.CompleteOnboarding(ob.PartyID, sigs); err != nil {
				t.Fatalf("complete: %v", err)
			}
			m.keys[ob.PartyID] = k
			m.parties = append(m.parties, ob.PartyID)
			// The party's own preapproval, or the operator's on its behalf (the desk's
			// register/complete path); a fault may leave it without one for now.
			if rapid.Bool().Draw(t, "byOperator") {
				m.run(t, m.op, CreatePreapproval{Receiver: ob.PartyID}, "pre-"+hint)
			} else {
				m.run(t, ob.PartyID, CreatePreapproval{}, "pre-"+hint)
			}
		},
		"preapproveFor": func(t *rapid.T) {
			m.run(t, m.op, CreatePreapproval{Receiver: m.party(t)}, m.newCmdID())
		},
		"fund": func(t *rapid.T) {
			to := m.party(t)
			u, err := m.run(t, m.res, Transfer{Receiver: to, Instrument: rapid.SampledFrom(append(smInstruments[:len(smInstruments):len(smInstruments)], m.listed...)).Draw(t, "inst"), Amount: d("50")}, m.newCmdID())
			if err == nil && rapid.IntRange(0, 4).Draw(t, "acceptNow") > 0 {
				m.run(t, to, AcceptTransfer{Instruction: u.TransferInstruction}, m.newCmdID())
			}
		},
		"transfer": func(t *rapid.T) {
			from, to := m.party(t), m.party(t)
			var eb time.Time
			if rapid.Bool().Draw(t, "expiring") {
				eb = m.clk.Now().Add(5 * time.Minute)
			}
			m.run(t, from, Transfer{Receiver: to, Instrument: rapid.SampledFrom(smInstruments).Draw(t, "inst"), Amount: m.amount(t), ExecuteBefore: eb}, m.newCmdID())
		},
		"endTransfer": func(t *rapid.T) {
			p := m.party(t)
			in := m.l.PendingTransfers(p)
			if len(in) == 0 {
				t.Skip("empty inbox")
			}
			ti := rapid.SampledFrom(in).Draw(t, "ti")
			var cmd Command
			actor := ti.Receiver
			switch rapid.IntRange(0, 3).Draw(t, "how") {
			case 0:
				cmd = RejectTransfer{Instruction: ti.CID}
			case 1:
				cmd, actor = WithdrawTransfer{Instruction: ti.CID}, ti.Sender
			default:
				cmd = AcceptTransfer{Instruction: ti.CID}
			}
			m.run(t, actor, cmd, m.newCmdID())
		},
		"trade": func(t *rapid.T) {
			if len(m.parties) < 2 {
				t.Skip("no counterparties")
			}
			maker, taker := m.party(t), m.party(t)
			if maker == taker {
				t.Skip("self trade")
			}
			m.trade(t, maker, taker)
		},
		"allocate": func(t *rapid.T) {
			p := m.party(t)
			ref := SettlementRef{Executor: m.op, ID: fmt.Sprintf("s%d", rapid.IntRange(0, 2).Draw(t, "settlement"))}
			m.run(t, p, Allocate{Settlement: ref, LegID: fmt.Sprintf("leg%d", rapid.IntRange(0, 3).Draw(t, "leg")),
				Side: rapid.SampledFrom([]Side{SideSend, SideReceive}).Draw(t, "side"), Instrument: rapid.SampledFrom(smInstruments).Draw(t, "inst"),
				Amount: m.amount(t), SettleBefore: m.clk.Now().Add(time.Duration(rapid.IntRange(1, 20).Draw(t, "window")) * time.Minute)}, m.newCmdID())
		},
		"cancel": func(t *rapid.T) {
			als := m.liveAllocations()
			if len(als) == 0 {
				t.Skip("no allocations")
			}
			al := rapid.SampledFrom(als).Draw(t, "alloc")
			if rapid.Bool().Draw(t, "byExecutor") {
				m.run(t, al.Settlement.Executor, CancelAllocation{Allocation: al.CID}, m.newCmdID())
			} else {
				m.run(t, al.Owner, WithdrawAllocation{Allocation: al.CID}, m.newCmdID())
			}
		},
		"settleRandom": func(t *rapid.T) {
			// A settlement built from whatever allocations exist: usually a mismatch.
			als := m.liveAllocations()
			if len(als) == 0 {
				t.Skip("no allocations")
			}
			ref := als[0].Settlement
			var cids []string
			var legs []Leg
			for _, al := range als {
				if al.Settlement == ref {
					cids = append(cids, al.CID)
				}
			}
			for _, al := range als {
				if al.Settlement == ref && al.Side == SideSend {
					for _, r := range als {
						if r.Settlement == ref && r.Side == SideReceive && r.Instrument == al.Instrument && r.Owner != al.Owner {
							legs = append(legs, Leg{Sender: al.Owner, Receiver: r.Owner, Instrument: al.Instrument, Amount: al.Amount})
							break
						}
					}
				}
			}
			m.settle(t, ref, legs, cids)
		},
		"executeOld": func(t *rapid.T) {
			if len(m.prepared) == 0 {
				t.Skip("nothing prepared")
			}
			p := rapid.SampledFrom(m.prepared).Draw(t, "prepared")
			m.execute(t, p, m.keys[p.ActAs])
		},
		"retry": func(t *rapid.T) {
			if len(m.cmdIDs) == 0 {
				t.Skip("no commands")
			}
			id := rapid.SampledFrom(m.cmdIDs).Draw(t, "cmdID")
			if u, ok := m.l.CommandResult(m.actAs[id], id); ok && u.ActAs != "" {
				m.noteResult(t, id, u, nil)
				m.maybeFault(t)
				_, err := m.l.Submit(u.ActAs, CreatePreapproval{}, id)
				if err == nil {
					t.Fatalf("retry of %s took a new effect", id)
				}
				var dup *Error
				if errors.As(err, &dup) && dup.Category == CategoryDuplicate {
					cs, cerr := m.l.Completions(u.ActAs, u.Offset-1, 1)
					if cerr != nil || len(cs) != 1 || cs[0].CommandID != id || cs[0].SubmissionID != dup.SubmissionID {
						t.Fatalf("the duplicate of %s names %s; completions %v %v", id, dup.SubmissionID, cs, cerr)
					}
				}
			}
		},
		"list": func(t *rapid.T) {
			if len(m.listed) >= 2 {
				t.Skip("enough instruments listed")
			}
			id := fmt.Sprintf("L%d", len(m.listed))
			cmdID := "list-" + id
			spec := InstrumentSpec{ID: id, Admin: "bitsafe", Decimals: rapid.IntRange(0, 10).Draw(t, "decimals")}
			u, err := m.l.ListInstrument(spec, d(rapid.SampledFrom([]string{"100", "1000"}).Draw(t, "reservoir")), cmdID)
			if err != nil {
				t.Fatalf("list %s: %v", id, err)
			}
			m.noteResult(t, cmdID, u, err)
			m.cmdIDs = append(m.cmdIDs, cmdID)
			m.actAs[cmdID] = ""
			m.listed = append(m.listed, id)
		},
		"advance": func(t *rapid.T) {
			m.clk.Advance(time.Duration(rapid.IntRange(0, 12*60).Draw(t, "seconds")) * time.Second)
		},
		"": func(t *rapid.T) {
			if err := m.l.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// trade runs a SELL trade: five allocations, then the settlement.
func (m *machine) trade(t *rapid.T, maker, taker string) {
	base := rapid.SampledFrom(smInstruments).Draw(t, "base")
	quote := rapid.SampledFrom([]string{"Amulet", "USDCx"}).Draw(t, "quote")
	if base == quote {
		t.Skip("same instrument")
	}
	qty := m.amount(t)
	q := qty.MulHalfEven(d(rapid.SampledFrom([]string{"1", "3.5", "0.25"}).Draw(t, "price")))
	fee := money.Fee(q, 30)
	if fee.IsZero() || (base == "CBTC" && qty.FractionDigits() > 8) {
		t.Skip("dust or too fine for CBTC")
	}
	fees, _ := m.l.InternalParty("fees")
	m.seq++
	ref := SettlementRef{Executor: m.op, ID: fmt.Sprintf("t%d", m.seq)}
	sb := m.clk.Now().Add(time.Duration(rapid.IntRange(1, 15).Draw(t, "window")) * time.Minute)
	type al struct {
		p string
		a Allocate
	}
	mk := func(leg string, side Side, inst string, amt money.Decimal) Allocate {
		return Allocate{Settlement: ref, LegID: leg, Side: side, Instrument: inst, Amount: amt, SettleBefore: sb}
	}
	allocs := []al{
		{maker, mk("maker-base", SideReceive, base, qty)},
		{maker, mk("maker-quote", SideSend, quote, q)},
		{taker, mk("taker-base", SideSend, base, qty)},
		{taker, mk("taker-quote", SideReceive, quote, q.Sub(fee))},
		{fees, mk("fee-quote", SideReceive, quote, fee)},
	}
	var cids []string
	for _, a := range allocs {
		id := m.newCmdID()
		u, err := m.run(t, a.p, a.a, id)
		for i := 0; i < 3 && (Retryable(err) || CategoryOf(err) == CategoryBadSignature); i++ {
			u, err = m.run(t, a.p, a.a, id) // retry with the same id
		}
		if err == nil {
			cids = append(cids, u.Allocation)
		} else if rapid.Bool().Draw(t, "settleAnyway") == false {
			return
		}
	}
	if rapid.IntRange(0, 3).Draw(t, "advanceBeforeSettle") == 0 {
		m.clk.Advance(time.Duration(rapid.IntRange(0, 16).Draw(t, "minutes")) * time.Minute)
	}
	legs := []Leg{
		{Sender: taker, Receiver: maker, Instrument: base, Amount: qty},
		{Sender: maker, Receiver: taker, Instrument: quote, Amount: q.Sub(fee)},
		{Sender: maker, Receiver: fees, Instrument: quote, Amount: fee},
	}
	m.settle(t, ref, legs, cids)
}

// settle submits a settlement and checks it is all or nothing.
func (m *machine) settle(t *rapid.T, ref SettlementRef, legs []Leg, cids []string) {
	id := m.newCmdID()
	off := m.l.Offset()
	u, err := m.run(t, m.op, Settle{Settlement: ref, Legs: legs, Allocations: cids}, id)
	if Retryable(err) {
		u, err = m.run(t, m.op, Settle{Settlement: ref, Legs: legs, Allocations: cids}, id)
	}
	if err != nil {
		if m.l.Offset() != off {
			if _, took := m.effects[id]; !took {
				t.Fatalf("failed settlement moved the offset")
			}
		}
		if _, took := m.effects[id]; !took {
			for _, cid := range cids {
				if _, e := m.l.Allocation(cid); e != nil {
					t.Fatalf("failed settlement consumed allocation %s", cid)
				}
			}
		}
		return
	}
	if len(u.Receipts) != len(legs) {
		t.Fatalf("settlement made %d receipts for %d legs", len(u.Receipts), len(legs))
	}
	for _, cid := range cids {
		if _, e := m.l.Allocation(cid); e == nil {
			t.Fatalf("settled allocation %s is still live", cid)
		}
	}
}

// replayCheck replays the recorded inputs into a fresh ledger and compares.
func (m *machine) replayCheck(t *rapid.T) {
	cfg := m.cfg
	cfg.Recorder, cfg.FaultPlan = nil, nil
	cfg.Clock = NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // replay must not read the clock
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Through JSON, as a journal would store them.
	raw, err := json.Marshal(m.inputs)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []Input
	if err := json.Unmarshal(raw, &inputs); err != nil {
		t.Fatal(err)
	}
	for i, in := range inputs {
		if err := r.Replay(in); err != nil {
			t.Fatalf("replay input %d (%s): %v", i, in.Kind, err)
		}
	}
	if r.Digest() != m.l.Digest() {
		t.Fatal("replayed digest differs")
	}
	cmpOpt := cmp.Comparer(func(a, b money.Decimal) bool { return a.Equal(b) })
	for _, p := range append(m.parties, m.op, m.res) {
		if diff := cmp.Diff(m.l.Holdings(p), r.Holdings(p), cmpOpt); diff != "" {
			t.Fatalf("holdings of %s differ after replay: %s", p, diff)
		}
		if diff := cmp.Diff(m.l.Allocations(p), r.Allocations(p), cmpOpt); diff != "" {
			t.Fatalf("allocations of %s differ after replay: %s", p, diff)
		}
	}
	if err := r.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestStateMachineLedger(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine(t)
		t.Repeat(m.actions())
		m.replayCheck(t)
	})
}
