package main

import (
	"strconv"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// observeOutputs derives the business metrics from one batch of outputs the loop released
// (the events of one durable input; replayed inputs emit none, so nothing is counted twice).
// machine/ stays pure: nothing here feeds back into the desk. It runs on the loop goroutine,
// so it only counts.
//
// An event is addressed to a party, and one fact often reaches several parties in the same
// batch (an RFQ's creation every invited maker, a settlement the taker and the maker): each
// fact is counted once per batch by its id. Events addressed to one socket (the snapshot a
// newly connected socket gets) repeat old facts and are skipped.
func (m *deskMetrics) observeOutputs(out machine.Outputs) {
	var seen factSet
	createdQuotes := 0
	for _, ev := range out.Events {
		if ev.Socket != 0 {
			continue
		}
		switch ev.Type {
		case machine.EvRfqCreated:
			if p, ok := machine.PayloadAs[machine.RfqDTO](ev.Payload); ok && seen.first(ev.Type, p.RfqID) {
				m.rfqs.WithLabelValues("created").Inc()
			}
		case machine.EvRfqExpired:
			if p, ok := machine.PayloadAs[machine.RfqIDPayload](ev.Payload); ok && seen.first(ev.Type, p.RfqID) {
				m.rfqs.WithLabelValues("expired").Inc()
			}
		case machine.EvHistoryRecorded:
			// Only the taker hears of its history, once; a cancellation shows only here
			// (rfq.closed also announces fills).
			if p, ok := machine.PayloadAs[machine.RfqHistoryDTO](ev.Payload); ok && p.Kind == "cancelled" {
				m.rfqs.WithLabelValues("cancelled").Inc()
			}
		case machine.EvQuoteCreated:
			// The maker hears of its recorded quote; the taker hears of it once anchored,
			// together with the maker's quote.anchored (subtracted below).
			createdQuotes++
		case machine.EvQuoteAnchored:
			createdQuotes--
		case machine.EvQuoteStatus:
			if p, ok := machine.PayloadAs[machine.QuoteStatusPayload](ev.Payload); ok && p.Status != "pending" && seen.first(ev.Type, p.QuoteID) {
				m.quotes.WithLabelValues(p.Status).Inc()
			}
		case machine.EvTradeSettled:
			if p, ok := machine.PayloadAs[machine.TradeDTO](ev.Payload); ok && seen.first(ev.Type, p.TradeID) {
				m.tradeSettled(p)
			}
		case machine.EvTradeFailed:
			if p, ok := machine.PayloadAs[machine.TradeFailedPayload](ev.Payload); ok && seen.first(ev.Type, p.TradeID) {
				m.tradesFailed.WithLabelValues(m.failReasons.label(p.Reason)).Inc()
			}
		}
	}
	if createdQuotes > 0 {
		m.quotes.WithLabelValues("created").Add(float64(createdQuotes))
	}
}

// tradeSettled counts a settled trade: the fill of its RFQ, its volume in both instruments
// and its fee (paid in the quote instrument).
func (m *deskMetrics) tradeSettled(t machine.TradeDTO) {
	m.tradesSettled.Inc()
	m.rfqs.WithLabelValues("filled").Inc()
	m.volume.WithLabelValues(t.Base).Add(approx(t.Qty))
	m.volume.WithLabelValues(t.Quote).Add(approx(t.Qty.MulHalfEven(t.Price)))
	m.fees.WithLabelValues(t.Quote).Add(approx(t.Fee))
}

// approx is d as a float64, for a metric only: money itself is never a float.
func approx(d money.Decimal) float64 {
	f, err := strconv.ParseFloat(d.String(), 64)
	if err != nil || f < 0 {
		return 0 // a counter never goes down; a malformed amount is not a metric
	}
	return f
}

// factSet remembers the facts of one batch already counted: a short slice while the batch
// is small (the usual case: no allocation of a map on the loop goroutine), a map past that
// (a tick that expires many RFQs at once).
type factSet struct {
	keys []fact
	many map[fact]bool
}

type fact struct{ typ, id string }

const factSetSlice = 16

// first reports whether (typ, id) is new in the batch, and remembers it.
func (s *factSet) first(typ, id string) bool {
	f := fact{typ, id}
	if s.many != nil {
		if s.many[f] {
			return false
		}
		s.many[f] = true
		return true
	}
	for i := len(s.keys) - 1; i >= 0; i-- {
		if s.keys[i] == f {
			return false
		}
	}
	if len(s.keys) < factSetSlice {
		s.keys = append(s.keys, f)
		return true
	}
	s.many = make(map[fact]bool, 2*factSetSlice)
	for _, k := range s.keys {
		s.many[k] = true
	}
	s.many[f] = true
	s.keys = nil
	return true
}
