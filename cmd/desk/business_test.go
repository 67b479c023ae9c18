package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

func dec(t testing.TB, s string) money.Decimal {
	t.Helper()
	var d money.Decimal
	if err := d.UnmarshalText([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return d
}

func ev(party, typ string, payload any) machine.Event {
	return machine.Event{Party: party, Type: typ, Payload: payload}
}

// TestObserveOutputsCountsFactsOnce: the events of one input as the machine emits them (an
// RFQ to every invited maker, a settlement to both sides, a status to maker and taker) count
// each fact once; a socket's connect snapshot counts nothing; the taker's quote.created
// that goes with the maker's quote.anchored is not a second quote.
func TestObserveOutputsCountsFactsOnce(t *testing.T) {
	m := newDeskMetrics()
	rfq := machine.RfqDTO{RfqID: "rfq_1"}
	m.observeOutputs(machine.Outputs{Events: []machine.Event{
		ev("m1", machine.EvRfqCreated, rfq), ev("m2", machine.EvRfqCreated, rfq), ev("m3", machine.EvRfqCreated, rfq),
	}})
	quote := machine.QuoteDTO{QuoteID: "q_1", RfqID: "rfq_1"}
	m.observeOutputs(machine.Outputs{Events: []machine.Event{ev("m1", machine.EvQuoteCreated, quote)}})
	m.observeOutputs(machine.Outputs{Events: []machine.Event{
		ev("m1", machine.EvQuoteAnchored, machine.QuoteAnchoredPayload{QuoteID: "q_1"}),
		ev("t", machine.EvQuoteCreated, quote),
	}})
	// A socket's snapshot repeats old facts.
	m.observeOutputs(machine.Outputs{Events: []machine.Event{
		{Party: "m2", Socket: 7, Type: machine.EvRfqCreated, Payload: rfq},
		{Party: "m2", Socket: 7, Type: machine.EvQuoteCreated, Payload: quote},
		{Party: "m2", Socket: 7, Type: machine.EvQuoteStatus, Payload: machine.QuoteStatusPayload{QuoteID: "q_1", Status: "pending"}},
	}})
	trade := machine.TradeDTO{TradeID: "t_1", Base: "cbtc", Quote: "usdcx", Qty: dec(t, "0.05"), Price: dec(t, "60000"), Fee: dec(t, "9")}
	m.observeOutputs(machine.Outputs{Events: []machine.Event{
		ev("t", machine.EvTradeSettled, trade), ev("m1", machine.EvTradeSettled, trade),
		ev("m1", machine.EvQuoteStatus, machine.QuoteStatusPayload{QuoteID: "q_1", Status: "won"}),
		ev("m2", machine.EvRfqClosed, machine.RfqIDPayload{RfqID: "rfq_1"}),
		ev("m2", machine.EvQuoteStatus, machine.QuoteStatusPayload{QuoteID: "q_2", Status: "lost"}),
		ev("t", machine.EvQuoteStatus, machine.QuoteStatusPayload{QuoteID: "q_2", Status: "lost"}),
	}})
	failed := machine.TradeFailedPayload{TradeID: "t_2", Reason: "the settlement window expired"}
	m.observeOutputs(machine.Outputs{Events: []machine.Event{
		ev("t", machine.EvTradeFailed, failed), ev("m1", machine.EvTradeFailed, failed),
		ev("t", machine.EvHistoryRecorded, machine.RfqHistoryDTO{Kind: "failed"}),
	}})
	m.observeOutputs(machine.Outputs{Events: []machine.Event{
		ev("m1", machine.EvRfqExpired, machine.RfqIDPayload{RfqID: "rfq_3"}), ev("t", machine.EvRfqExpired, machine.RfqIDPayload{RfqID: "rfq_3"}),
		ev("t", machine.EvHistoryRecorded, machine.RfqHistoryDTO{Kind: "expired"}),
		ev("m1", machine.EvRfqClosed, machine.RfqIDPayload{RfqID: "rfq_4"}), ev("t", machine.EvRfqClosed, machine.RfqIDPayload{RfqID: "rfq_4"}),
		ev("t", machine.EvHistoryRecorded, machine.RfqHistoryDTO{Kind: "cancelled"}),
	}})

	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"rfqs created", testutil.ToFloat64(m.rfqs.WithLabelValues("created")), 1},
		{"rfqs filled", testutil.ToFloat64(m.rfqs.WithLabelValues("filled")), 1},
		{"rfqs expired", testutil.ToFloat64(m.rfqs.WithLabelValues("expired")), 1},
		{"rfqs cancelled", testutil.ToFloat64(m.rfqs.WithLabelValues("cancelled")), 1},
		{"quotes created", testutil.ToFloat64(m.quotes.WithLabelValues("created")), 1},
		{"quotes won", testutil.ToFloat64(m.quotes.WithLabelValues("won")), 1},
		{"quotes lost", testutil.ToFloat64(m.quotes.WithLabelValues("lost")), 1},
		{"trades settled", testutil.ToFloat64(m.tradesSettled), 1},
		{"trades failed", testutil.ToFloat64(m.tradesFailed.WithLabelValues("the settlement window expired")), 1},
		{"volume cbtc", testutil.ToFloat64(m.volume.WithLabelValues("cbtc")), 0.05},
		{"volume usdcx", testutil.ToFloat64(m.volume.WithLabelValues("usdcx")), 3000},
		{"fees usdcx", testutil.ToFloat64(m.fees.WithLabelValues("usdcx")), 9},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.quotes); n != 6 {
		t.Errorf("quote outcomes: %d series, want the 6 outcomes (no pending)", n)
	}
}

// TestObserveOutputsLaw: however many parties one batch addresses each fact to, and however
// the batch's facts are interleaved, each settled trade and each created RFQ counts once.
func TestObserveOutputsLaw(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newDeskMetrics()
		nTrades := rapid.IntRange(0, 40).Draw(t, "trades")
		nRFQs := rapid.IntRange(0, 40).Draw(t, "rfqs")
		var events []machine.Event
		for i := range nTrades {
			tr := machine.TradeDTO{TradeID: fmt.Sprintf("t_%d", i), Base: "a", Quote: "b", Qty: money.MustParse("1"), Price: money.MustParse("2"), Fee: money.MustParse("0")}
			for range rapid.IntRange(1, 3).Draw(t, "audience") {
				events = append(events, ev("p", machine.EvTradeSettled, tr))
			}
		}
		for i := range nRFQs {
			r := machine.RfqDTO{RfqID: fmt.Sprintf("rfq_%d", i)}
			for range rapid.IntRange(1, 5).Draw(t, "invited") {
				events = append(events, ev("p", machine.EvRfqCreated, r))
			}
		}
		perm := rapid.Permutation(events).Draw(t, "order")
		m.observeOutputs(machine.Outputs{Events: perm})
		if got := testutil.ToFloat64(m.tradesSettled); got != float64(nTrades) {
			t.Fatalf("settled %v, want %d", got, nTrades)
		}
		if got := testutil.ToFloat64(m.volume.WithLabelValues("a")); got != float64(nTrades) {
			t.Fatalf("volume %v, want %d", got, nTrades)
		}
		if got := testutil.ToFloat64(m.rfqs.WithLabelValues("created")); got != float64(nRFQs) {
			t.Fatalf("rfqs created %v, want %d", got, nRFQs)
		}
	})
}

// TestBoundedLabels: past the bound, new label values read "other", old ones keep theirs.
func TestBoundedLabels(t *testing.T) {
	m := newDeskMetrics()
	for i := range maxLabelValues + 10 {
		m.observeOutputs(machine.Outputs{Events: []machine.Event{
			ev("t", machine.EvTradeFailed, machine.TradeFailedPayload{TradeID: fmt.Sprint(i), Reason: fmt.Sprint("reason ", i)}),
		}})
	}
	if n := testutil.CollectAndCount(m.tradesFailed); n != maxLabelValues+1 {
		t.Errorf("%d reasons exposed, want %d and other", n, maxLabelValues)
	}
	if got := testutil.ToFloat64(m.tradesFailed.WithLabelValues("other")); got != 10 {
		t.Errorf("other = %v, want 10", got)
	}
	m.LedgerCall(machine.OpSubmit, time.Millisecond, "")
	m.LedgerCall(machine.OpSubmit, time.Millisecond, machine.LedgerContention)
	if got := testutil.ToFloat64(m.ledgerFailures.WithLabelValues(machine.LedgerContention)); got != 1 {
		t.Errorf("contention failures %v", got)
	}
}

// BenchmarkObserveOutputs is the cost on the loop goroutine of the outputs of a settlement
// (the heaviest common batch: two trade.settled, the win, rfq.closed to three losers and
// their quote.status to maker and taker).
func BenchmarkObserveOutputs(b *testing.B) {
	m := newDeskMetrics()
	trade := machine.TradeDTO{TradeID: "t_1", Base: "cbtc", Quote: "usdcx", Qty: dec(b, "0.05"), Price: dec(b, "60000"), Fee: dec(b, "9")}
	out := machine.Outputs{Events: []machine.Event{
		ev("t", machine.EvTradeSettled, trade), ev("m1", machine.EvTradeSettled, trade),
		ev("m1", machine.EvQuoteStatus, machine.QuoteStatusPayload{QuoteID: "q_1", Status: "won"}),
	}}
	for i := 2; i <= 4; i++ {
		q := machine.QuoteStatusPayload{QuoteID: fmt.Sprint("q_", i), Status: "lost"}
		out.Events = append(out.Events, ev(fmt.Sprint("m", i), machine.EvRfqClosed, machine.RfqIDPayload{RfqID: "rfq_1"}),
			ev(fmt.Sprint("m", i), machine.EvQuoteStatus, q), ev("t", machine.EvQuoteStatus, q))
	}
	b.ReportAllocs()
	for b.Loop() {
		m.observeOutputs(out)
	}
}
