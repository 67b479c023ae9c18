package model

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

const houseKey = "house-key-hash"

func testConfig() machine.Config {
	cfg := machine.DefaultConfig()
	cfg.Instruments = []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), RegistryID: "reg-cbtc"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), RegistryID: "reg-usdcx"},
	}
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}, {MinNotionalUSD: money.MustParse("10000"), FeeBps: 10}}
	cfg.Operator, cfg.FeeParty = "operator::1220", "fee::1220"
	cfg.House = []machine.HouseParty{{Hint: "house-taker", PartyID: "house-taker::1220ab", Role: machine.HouseTaker, KeyHash: houseKey}}
	return cfg
}

type bogus struct{}

func (bogus) Kind() string { return "bogus" }

func TestUnknownInputIsADivergence(t *testing.T) {
	m, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	err = m.Apply(machine.Envelope{Seq: 1, At: time.Unix(0, 0), Input: bogus{}}, machine.Outputs{})
	var d *Divergence
	if !errors.As(err, &d) || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown input: %v", err)
	}
	if err := m.Apply(machine.Envelope{Seq: 2}, machine.Outputs{}); !errors.As(err, &d) {
		t.Fatalf("nil input: %v", err)
	}
}

func TestCommandJudgements(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	// An unknown key is 401; a 400 for it is a divergence naming both.
	c := machine.CancelRFQ{Req: machine.Req{KeyHash: "nobody"}, RFQID: "rfq_1"}
	err = m.Apply(machine.Envelope{Seq: 1, At: at, Input: c}, machine.Outputs{Replies: []machine.Reply{{Seq: 1, Status: 400, Err: &machine.APIError{Status: 400, Message: "x"}}}})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong status for an unknown key: %v", err)
	}
	if err := m.Apply(machine.Envelope{Seq: 2, At: at, Input: c}, machine.Outputs{Replies: []machine.Reply{{Seq: 2, Status: 401, Err: &machine.APIError{Status: 401, Message: "x"}}}}); err != nil {
		t.Fatal(err)
	}
	// The house taker cancelling an unknown RFQ: 404 exactly.
	c.KeyHash = houseKey
	if err := m.Apply(machine.Envelope{Seq: 3, At: at, Input: c}, machine.Outputs{Replies: []machine.Reply{{Seq: 3, Status: 404, Err: &machine.APIError{Status: 404}}}}); err != nil {
		t.Fatal(err)
	}
	// An RFQ inviting a maker that does not exist is a plain 400, not BELOW_MIN_NOTIONAL.
	cr := machine.CreateRFQ{Req: machine.Req{KeyHash: houseKey}, Direction: machine.Sell, Qty: money.MustParse("1"), Base: "CBTC", Quote: "usdcx", InvitedMakers: []string{"ghost"}, TTLSeconds: 60}
	err = m.Apply(machine.Envelope{Seq: 4, At: at, Input: cr}, machine.Outputs{Replies: []machine.Reply{{Seq: 4, Status: 400, Err: &machine.APIError{Status: 400, Code: machine.CodeBelowMinNotional}}}})
	if err == nil {
		t.Fatal("a BELOW_MIN_NOTIONAL for an unknown maker passed")
	}
	// Never answered at all.
	if err := m.Apply(machine.Envelope{Seq: 5, At: at, Input: cr}, machine.Outputs{}); err == nil || !strings.Contains(err.Error(), "never answered") {
		t.Fatalf("a command left unanswered: %v", err)
	}
	// A reply to a request nobody made.
	if err := m.Apply(machine.Envelope{Seq: 6, At: at, Input: machine.Tick{}}, machine.Outputs{Replies: []machine.Reply{{Seq: 99, Status: 200}}}); err == nil {
		t.Fatal("a reply to no request passed")
	}
}

// Bad input to the model (malformed replies, events with payloads of the wrong type,
// unknown parties, reads with bodies of any shape) gives an error or passes, never a
// panic, and never the model's own failure to judge.
func TestBadInputNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, err := New(testConfig())
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		keys := []string{houseKey, "unknown", ""}
		bodies := []any{nil, 42, "x", machine.RfqDTO{}, &machine.RfqDTO{}, machine.QuoteWithActionsDTO{}, machine.TradeWithActionsDTO{},
			machine.ActionsDTO{}, machine.ExecBatchDTO{Results: []machine.ExecResultDTO{{}}}, machine.OKDTO{OK: true}, []machine.RfqDTO{{}}, machine.MakerStatusDTO{}}
		payloads := []any{nil, 7, machine.RfqIDPayload{RfqID: "rfq_x"}, machine.QuoteStatusPayload{QuoteID: "q_x", Status: "won"}, machine.TradeDTO{},
			machine.SignActionDTO{ID: "act_x"}, machine.ActionIDPayload{ActionID: "act_x"}, machine.RfqHistoryDTO{}, machine.QuoteAnchoredPayload{}}
		types := []string{machine.EvRfqCreated, machine.EvRfqClosed, machine.EvRfqExpired, machine.EvQuoteCreated, machine.EvQuoteStatus,
			machine.EvQuoteAnchored, machine.EvTradeStep, machine.EvTradeSettled, machine.EvTradeFailed, machine.EvSignRequested,
			machine.EvSignCompleted, machine.EvHistoryRecorded, "no.such.type"}
		parties := []string{"house-taker::1220ab", "stranger"}
		for seq := uint64(3); seq <= 22; seq++ {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			inputs := []machine.Input{
				machine.Tick{}, machine.Boot{}, machine.LedgerResult{}, bogus{},
				machine.SocketOpened{Socket: seq, KeyHash: key}, machine.SocketClosed{Socket: seq - 1},
				machine.CreateRFQ{Req: machine.Req{KeyHash: key}, Qty: money.MustParse("1"), Base: "cbtc", Quote: "usdcx", TTLSeconds: 60},
				machine.CancelRFQ{Req: machine.Req{KeyHash: key}, RFQID: "rfq_x"},
				machine.SubmitQuote{Req: machine.Req{KeyHash: key}, RFQID: "rfq_x", Price: money.MustParse("1")},
				machine.AcceptQuote{Req: machine.Req{KeyHash: key}, QuoteID: "q_x"},
				machine.ExecuteActions{Req: machine.Req{KeyHash: key}, Entries: []machine.SignedAction{{ActionID: "act_x"}}, Batch: rapid.Bool().Draw(t, "batch")},
				machine.Withdraw{Req: machine.Req{KeyHash: key}, Symbol: "cbtc", Amount: money.MustParse("1"), Receiver: "a::b"},
				machine.RegisterStart{DisplayName: "x", PublicKey: make([]byte, 32)},
				machine.RegisterComplete{RegistrationID: "reg_x"},
				machine.RotateKey{PartyID: "stranger"},
			}
			in := rapid.SampledFrom(inputs).Draw(t, "input")
			var out machine.Outputs
			for range rapid.IntRange(0, 3).Draw(t, "replies") {
				st := rapid.SampledFrom([]int{200, 202, 204, 400, 401, 404, 409, 503}).Draw(t, "status")
				rep := machine.Reply{Seq: rapid.Uint64Range(seq-2, seq).Draw(t, "rseq"), Status: st, Body: rapid.SampledFrom(bodies).Draw(t, "body")}
				if st >= 300 && rapid.Bool().Draw(t, "err") {
					rep.Err = &machine.APIError{Status: st}
				}
				out.Replies = append(out.Replies, rep)
			}
			for range rapid.IntRange(0, 3).Draw(t, "events") {
				out.Events = append(out.Events, machine.Event{Party: rapid.SampledFrom(parties).Draw(t, "party"), Type: rapid.SampledFrom(types).Draw(t, "type"), Payload: rapid.SampledFrom(payloads).Draw(t, "payload")})
			}
			if err := m.Apply(machine.Envelope{Seq: seq, At: at.Add(time.Duration(seq) * time.Second), Input: in}, out); err != nil {
				var d *Divergence
				if !errors.As(err, &d) || strings.Contains(err.Error(), "could not judge") {
					t.Fatalf("input %d (%s): %v", seq, in.Kind(), err)
				}
			}
			queries := []machine.Query{machine.QMakerStatus{}, machine.QDesk{}, machine.QRfqMine{}, machine.QRfqIncoming{}, machine.QTrades{Limit: -1},
				machine.QTxPending{}, machine.QBalances{Holdings: []machine.LedgerHolding{{Instrument: "reg-cbtc", Amount: money.MustParse("1")}}}, machine.QConfig{}, machine.QInstruments{}}
			q := rapid.SampledFrom(queries).Draw(t, "query")
			rep := machine.Reply{Status: rapid.SampledFrom([]int{200, 400, 401}).Draw(t, "qstatus"), Body: rapid.SampledFrom(bodies).Draw(t, "qbody")}
			if err := m.Read(at, key, q, rep); err != nil {
				var d *Divergence
				if !errors.As(err, &d) || strings.Contains(err.Error(), "could not judge") {
					t.Fatalf("read %T: %v", q, err)
				}
			}
		}
		// The state survives an encoding round trip, and a clone is the same state.
		b := mustMarshal(t, m)
		if _, err := Restore(b); err != nil {
			t.Fatal(err)
		}
		if c := mustMarshal(t, m.Clone()); string(c) != string(b) {
			t.Fatalf("a clone differs:\n%s\n%s", c, b)
		}
	})
}

func mustMarshal(t *rapid.T, m *Model) []byte {
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRestoreRefusesGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("{"), []byte("{}"), []byte(`{"parties":{}}`)} {
		if _, err := Restore(b); err == nil {
			t.Errorf("Restore(%q) succeeded", b)
		}
	}
}
