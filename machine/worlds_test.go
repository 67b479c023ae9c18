package machine

import (
	"testing"
	"time"
)

// The worlds that several tests share (the rows of SPEC's transition tables themselves are
// transcripts under testdata/transcripts).

// quoteWorld is a house-taker SELL RFQ of 1 cbtc with two streaming makers.
type quoteWorld struct {
	h      *harness
	m1, m2 actor
	rfq    RfqDTO
}

func newQuoteWorld(t *testing.T) quoteWorld {
	h := newHarness(t)
	m1, m2 := h.maker("Alpha"), h.maker("Beta")
	return quoteWorld{h: h, m1: m1, m2: m2, rfq: h.newRFQ(houseTaker, Sell, "1", 120, m1, m2)}
}

// tradeWorld is an external taker's SELL RFQ of 1 cbtc (ttl 1 h) with one live quote at
// 60000 whose validUntil is t0+60s.
type tradeWorld struct {
	h         *harness
	taker, mk actor
	rfq       RfqDTO
	q         QuoteWithActionsDTO
}

func newTradeWorld(t *testing.T) tradeWorld {
	h := newHarness(t)
	tk, mk := h.maker("Taker"), h.maker("Maker")
	rfq := h.newRFQ(tk, Sell, "1", 3600, mk)
	q := h.submitUntil(mk, rfq.RfqID, "60000", t0.Add(60*time.Second))
	h.ok(h.sign(mk.id, mk.key, q.Actions), 200)
	return tradeWorld{h: h, taker: tk, mk: mk, rfq: rfq, q: q}
}
