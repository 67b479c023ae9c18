package machine

import (
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// rapidTB lets the harness fail a rapid test (so that rapid shrinks the sequence).
type rapidTB struct{ *rapid.T }

func (rapidTB) Helper() {}

// validStatus are the statuses the machine may answer with.
var validStatus = map[int]bool{200: true, 202: true, 204: true, 400: true, 401: true, 403: true, 404: true,
	409: true, 410: true, 501: true, 502: true, 503: true}

// propModel drives a desk through random API commands, ticks and ledger answers or failures
// (the fake ledger in manual mode, so that answers interleave with everything else).
type propModel struct {
	h      *harness
	makers []actor // makers[0] also takes
	rfqs   []string
	quotes []string
	seen   int // replies checked so far
}

func newPropModel(t *rapid.T) *propModel {
	h := newHarnessWith(rapidTB{t}, testConfig())
	m := &propModel{h: h}
	for _, name := range []string{"Alpha", "Beta", "Gamma"} {
		m.makers = append(m.makers, h.maker(name))
	}
	h.auto = false
	return m
}

func (m *propModel) party(t *rapid.T) actor {
	all := append([]actor{houseTaker}, m.makers...)
	return all[rapid.IntRange(0, len(all)-1).Draw(t, "party")]
}

func (m *propModel) pick(t *rapid.T, ids []string, label string) string {
	if len(ids) == 0 || rapid.IntRange(0, 9).Draw(t, label+"-unknown") == 0 {
		return label + "_unknown"
	}
	return ids[rapid.IntRange(0, len(ids)-1).Draw(t, label)]
}

func (m *propModel) actions() map[string]func(*rapid.T) {
	h := m.h
	return map[string]func(*rapid.T){
		"createRFQ": func(t *rapid.T) {
			taker := []actor{houseTaker, m.makers[0]}[rapid.IntRange(0, 1).Draw(t, "taker")]
			var hints []string
			for _, mk := range m.makers[1:] {
				if rapid.Bool().Draw(t, "invite") {
					hints = append(hints, h.hint(mk))
				}
			}
			seq := h.apply(CreateRFQ{Req: taker.req(), Direction: rapid.SampledFrom([]Direction{Sell, Buy}).Draw(t, "dir"),
				Qty:  money.MustParse(rapid.SampledFrom([]string{"1", "0.5", "0.00001"}).Draw(t, "qty")),
				Base: "cbtc", Quote: "usdcx", InvitedMakers: hints, TTLSeconds: int64(rapid.IntRange(4, 300).Draw(t, "ttl"))})
			if r, ok := h.replies[seq]; ok && r.Err == nil {
				m.rfqs = append(m.rfqs, r.Body.(RfqDTO).RfqID)
			}
		},
		"submitQuote": func(t *rapid.T) {
			mk := m.makers[rapid.IntRange(0, len(m.makers)-1).Draw(t, "maker")]
			c := SubmitQuote{Req: mk.req(), RFQID: m.pick(t, m.rfqs, "rfq"),
				Price: money.MustParse(rapid.SampledFrom([]string{"60000", "59000.5", "1", "0.00000001"}).Draw(t, "price"))}
			if rapid.Bool().Draw(t, "explicit") {
				until := h.now.Add(time.Duration(rapid.IntRange(-5, 400).Draw(t, "until")) * time.Second)
				c.ValidUntil = &until
			}
			h.apply(c)
			// The quote id is known once the answer arrives; collect every id the desk made.
			m.collectQuotes()
		},
		"deleteQuote": func(t *rapid.T) {
			h.apply(DeleteQuote{Req: m.party(t).req(), QuoteID: m.pick(t, m.quotes, "quote")})
		},
		"cancelAllQuotes": func(t *rapid.T) {
			checkCancelAll(rapidTB{t}, h, m.party(t))
		},
		"acceptQuote": func(t *rapid.T) {
			taker := []actor{houseTaker, m.makers[0]}[rapid.IntRange(0, 1).Draw(t, "taker")]
			h.apply(AcceptQuote{Req: taker.req(), QuoteID: m.pick(t, m.quotes, "quote")})
		},
		"cancelRFQ": func(t *rapid.T) {
			h.apply(CancelRFQ{Req: m.party(t).req(), RFQID: m.pick(t, m.rfqs, "rfq")})
		},
		"sign": func(t *rapid.T) {
			p := m.makers[rapid.IntRange(0, len(m.makers)-1).Draw(t, "signer")]
			pending := h.read(p.key, QTxPending{}).Body.(ActionsDTO).Actions
			var entries []SignedAction
			for _, x := range pending {
				if !rapid.Bool().Draw(t, "include") {
					continue
				}
				sig := ed25519.Sign(h.keys[p.id], x.Hash)
				if rapid.IntRange(0, 9).Draw(t, "bad") == 0 {
					sig = make([]byte, 64)
				}
				entries = append(entries, SignedAction{ActionID: x.ID, Signature: sig})
			}
			if len(entries) == 0 {
				entries = []SignedAction{{ActionID: "act_unknown", Signature: make([]byte, 64)}}
			}
			h.apply(ExecuteActions{Req: p.req(), Entries: entries, Batch: len(entries) > 1 || rapid.Bool().Draw(t, "batch")})
		},
		"withdraw": func(t *rapid.T) {
			h.apply(Withdraw{Req: m.party(t).req(), Symbol: rapid.SampledFrom([]string{"cbtc", "USDCx", "cc"}).Draw(t, "sym"),
				Amount: money.FromInt(1), Receiver: "someone::1220ff"})
		},
		"acceptIncoming": func(t *rapid.T) {
			h.apply(AcceptIncoming{Req: m.party(t).req(), CID: rapid.SampledFrom([]string{"00a1", "00a2"}).Draw(t, "cid")})
		},
		"faucet": func(t *rapid.T) {
			h.apply(FaucetDraw{Req: m.party(t).req()})
		},
		"socket": func(t *rapid.T) {
			mk := m.makers[rapid.IntRange(0, len(m.makers)-1).Draw(t, "maker")]
			if rapid.Bool().Draw(t, "open") {
				h.connect(mk.key)
				return
			}
			for _, id := range sortedKeys(h.d.Sockets) {
				if h.d.Sockets[id].PartyID == mk.id {
					h.apply(SocketClosed{Socket: id})
					return
				}
			}
		},
		"tick": func(t *rapid.T) {
			h.advance(time.Duration(rapid.IntRange(0, 200_000).Draw(t, "ms")) * time.Millisecond)
		},
		"bigTick": func(t *rapid.T) {
			h.advance(time.Duration(rapid.IntRange(1, 12).Draw(t, "min")) * time.Minute)
		},
		"ledgerAnswer": func(t *rapid.T) {
			if len(h.queued) == 0 {
				t.Skip("nothing queued")
			}
			i := rapid.IntRange(0, len(h.queued)-1).Draw(t, "call")
			c := h.queued[i]
			h.queued = append(h.queued[:i:i], h.queued[i+1:]...)
			h.answer(c)
		},
		"ledgerFail": func(t *rapid.T) {
			if len(h.queued) == 0 {
				t.Skip("nothing queued")
			}
			i := rapid.IntRange(0, len(h.queued)-1).Draw(t, "call")
			cat := rapid.SampledFrom([]string{LedgerContention, LedgerUnavailable, LedgerRejected, LedgerUnknownOutcome,
				LedgerBadSignature, LedgerExpired, LedgerInsufficientFunds, LedgerNotFound, LedgerForbidden}).Draw(t, "category")
			h.failWhere(cat, func(c LedgerCall) bool { return c.CommandID == h.queued[i].CommandID })
		},
		"boot": func(t *rapid.T) {
			if rapid.IntRange(0, 4).Draw(t, "rarely") != 0 {
				t.Skip("boot is rare")
			}
			h.apply(Boot{})
		},
		"": func(t *rapid.T) { m.check(t) },
	}
}

// collectQuotes remembers every quote id the desk knows.
func (m *propModel) collectQuotes() {
	known := map[string]bool{}
	for _, id := range m.quotes {
		known[id] = true
	}
	for _, id := range sortedKeys(m.h.d.Quotes) {
		if !known[id] {
			m.quotes = append(m.quotes, id)
		}
	}
}

// check asserts the invariants after every step.
func (m *propModel) check(t *rapid.T) {
	h, d := m.h, m.h.d
	m.collectQuotes()
	checkRFQIndex(t, d)
	checkSpentDeadlines(t, d)
	// Every reply has a valid status, and a refusal says why.
	for seq := uint64(m.seen + 1); seq <= h.seq; seq++ {
		r, ok := h.replies[seq]
		if !ok {
			continue
		}
		if !validStatus[r.Status] || (r.Err != nil) != (r.Status >= 400) || (r.Err != nil && (r.Err.Status != r.Status || r.Err.Message == "")) {
			t.Fatalf("reply %d: %d %+v", seq, r.Status, r.Err)
		}
		if _, held := d.Held[seq]; held {
			t.Fatalf("request %d answered and still held", seq)
		}
	}
	m.seen = int(h.seq)
	// A quote the taker sees is anchored.
	for _, taker := range []actor{houseTaker, m.makers[0]} {
		for _, r := range h.read(taker.key, QRfqMine{}).Body.([]RfqDTO) {
			for _, q := range *r.Quotes {
				if !d.Quotes[q.QuoteID].Anchored {
					t.Fatalf("unanchored quote %s visible", q.QuoteID)
				}
			}
		}
	}
	// At most one trade settles per RFQ, and it is the one the RFQ names.
	settling := map[string]string{}
	for _, id := range sortedKeys(d.Trades) {
		tr := d.Trades[id]
		if tr.State != TradeAllocating && tr.State != TradeSettling {
			continue
		}
		if other, dup := settling[tr.RFQ]; dup {
			t.Fatalf("trades %s and %s settle on RFQ %s", other, id, tr.RFQ)
		}
		settling[tr.RFQ] = id
		if r := d.RFQs[tr.RFQ]; r == nil || r.SettlingTrade != id || r.State != RFQOpen {
			t.Fatalf("trade %s settles on RFQ %+v", id, r)
		}
		if q := d.Quotes[tr.Quote]; q == nil || q.State != QuoteSettling {
			t.Fatalf("trade %s settles on quote %+v", id, q)
		}
	}
	for _, id := range sortedKeys(d.RFQs) {
		if r := d.RFQs[id]; r.SettlingTrade != "" && (settling[id] != r.SettlingTrade) {
			if _, accepting := d.Held[d.heldFor(r.SettlingTrade)]; !accepting {
				t.Fatalf("RFQ %s names trade %s that does not settle", id, r.SettlingTrade)
			}
		}
	}
	// Every pending action's flow is alive.
	for _, id := range sortedKeys(d.Actions) {
		x := d.Actions[id]
		alive := false
		switch x.Flow {
		case FlowQuote:
			q := d.Quotes[x.FlowID]
			alive = q != nil && q.State == QuoteFunding
		case FlowTrade:
			tr := d.Trades[x.FlowID]
			alive = tr != nil && tr.State == TradeAllocating
		case FlowDeposit:
			alive = d.Deposits[x.FlowID] == x.ID
		case FlowWithdraw:
			alive = d.Withdrawals[x.FlowID] == x.ID
		}
		if !alive {
			t.Fatalf("action %s (%s %s) outlives its flow", id, x.Flow, x.FlowID)
		}
	}
	// The state round-trips through its snapshot form.
	roundTrip(rapidTB{t}, d)
}

// settle is the liveness phase: the ledger answers everything and time runs past every
// deadline and window; then nothing may be left in flight.
func (m *propModel) settle(t *rapid.T) {
	h, d := m.h, m.h.d
	for i := 0; i < 8; i++ {
		h.flush()
		h.advance(15 * time.Minute)
	}
	h.flush()
	for _, id := range sortedKeys(d.RFQs) {
		if d.RFQs[id].State == RFQOpen {
			t.Fatalf("RFQ %s still open", id)
		}
	}
	for _, id := range sortedKeys(d.Trades) {
		if st := d.Trades[id].State; st == TradeAllocating || st == TradeSettling {
			t.Fatalf("trade %s still %s", id, st)
		}
	}
	for _, id := range sortedKeys(d.Actions) {
		x := d.Actions[id]
		t.Logf("action left: %+v (now %v)", *x, d.Now)
	}
	if len(d.Actions) != 0 || len(d.Held) != 0 || len(d.Pending) != 0 {
		t.Fatalf("left in flight: %d actions, %d held replies, %d ledger calls", len(d.Actions), len(d.Held), len(d.Pending))
	}
	for _, id := range sortedKeys(d.Quotes) {
		if d.Quotes[id].pending() {
			t.Fatalf("quote %s still pending", id)
		}
	}
	if len(d.Deposits) != 0 || len(d.Withdrawals) != 0 {
		t.Fatalf("wallet flows left: %v %v", d.Deposits, d.Withdrawals)
	}
	m.check(t)
}

// TestProperty_RandomAPI runs random sequences of API commands, ticks, ledger answers and
// ledger failures, checking the invariants after every step and liveness at the end.
// RAPID_CHECKS and RAPID_STEPS scale it.
func TestProperty_RandomAPI(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPropModel(t)
		t.Repeat(m.actions())
		m.settle(t)
	})
}

// String names the model in rapid's logs.
func (m *propModel) String() string { return fmt.Sprintf("desk with %d RFQs", len(m.rfqs)) }

// checkRFQIndex: the per-party RFQ index holds exactly what a scan of every retained RFQ
// finds, once it has been built (a read builds it; a fresh or restored desk has none yet).
func checkRFQIndex(t interface{ Fatalf(string, ...any) }, d *Desk) {
	if d.byParty == nil {
		return
	}
	want := rfqIndex{}
	for _, r := range d.RFQs {
		want.add(r)
	}
	if len(want) != len(d.byParty) {
		t.Fatalf("RFQ index has %d parties, a scan finds %d", len(d.byParty), len(want))
	}
	for party, rs := range want {
		got := d.byParty[party]
		if len(got) != len(rs) {
			t.Fatalf("RFQ index lists %d RFQs of %s, a scan finds %d", len(got), party, len(rs))
		}
		for id, r := range rs {
			if got[id] != r {
				t.Fatalf("RFQ index of %s misses %s", party, id)
			}
		}
	}
}

// checkSpentDeadlines: the front of the deadline queue is never spent (nextDeadline drops
// those), and a spent deadline anywhere in the queue is one whose firing changes nothing:
// fired on a copy of the desk at its time, it leaves the digest as it was and says nothing.
func checkSpentDeadlines(t interface{ Fatalf(string, ...any) }, d *Desk) {
	if len(d.Deadlines.Items) > 0 && d.spent(d.Deadlines.Items[0]) {
		t.Fatalf("the front deadline %+v is spent but was kept", d.Deadlines.Items[0])
	}
	state, err := d.EncodeSnapshot()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	fired := 0
	for _, dl := range d.Deadlines.Items {
		if !d.spent(dl) || fired == 8 {
			continue
		}
		fired++
		cp, err := decodeSnapshot(state)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if dl.At.After(cp.Now) {
			cp.Now = dl.At
		}
		before, _ := cp.Digest()
		var out Outputs
		(&applier{d: cp, out: &out}).fire(dl)
		if after, _ := cp.Digest(); after != before || len(out.Replies)+len(out.Events)+len(out.Calls)+len(out.Closes) > 0 {
			t.Fatalf("spent deadline %+v changed the desk (%v) or said something (%+v)", dl, after != before, out)
		}
	}
}
