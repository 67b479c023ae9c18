package main

import (
	"slices"
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// TestMassCancelOverTheWire: a maker with two live quotes and one unsigned one calls
// DELETE /maker/quotes through the client: all three are revoked, in the order they were
// made, the stream says so, and the next mass cancel finds nothing. The house taker, who
// quotes nothing, gets two empty lists.
func TestMassCancelOverTheWire(t *testing.T) {
	d := startLive(t, baseConfig)
	m, taker := maker(t, d, "Mass Cancel Maker", true), house(t, d)
	s := subscribe(t, m)
	var made []string
	for i, price := range []client.Decimal{"60000", "60001", "60002"} {
		rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "CBTC", Quote: "usdcx",
			InvitedMakers: []string{m.Hint()}, TTLSeconds: 120})
		if err != nil {
			t.Fatal(err)
		}
		q, err := m.SubmitQuote(ctx(t), client.QuoteRequest{RFQID: rfq.RFQID, Price: price})
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			signAll(t, m, q.Actions)
			await(t, s, "quote.anchored", nil)
		}
		made = append(made, q.QuoteID)
	}
	none, err := taker.CancelAllQuotes(ctx(t))
	if err != nil || none.Revoked == nil || len(none.Revoked) != 0 || none.Settling == nil || len(none.Settling) != 0 {
		t.Fatalf("taker's mass cancel: %+v %v, want two empty lists", none, err)
	}
	res, err := m.CancelAllQuotes(ctx(t))
	if err != nil || !slices.Equal(res.Revoked, made) || len(res.Settling) != 0 {
		t.Fatalf("mass cancel: %+v %v, want revoked %v", res, err, made)
	}
	for range made {
		e, _ := await(t, s, "quote.status", nil)
		st, err := e.QuoteStatus()
		if err != nil || st.Status != client.QuoteRevoked {
			t.Fatalf("quote.status %+v %v, want revoked", st, err)
		}
	}
	if pending, err := m.PendingActions(ctx(t)); err != nil || len(pending) != 0 {
		t.Fatalf("pending actions after the mass cancel: %+v %v", pending, err)
	}
	again, err := m.CancelAllQuotes(ctx(t))
	if err != nil || len(again.Revoked) != 0 {
		t.Fatalf("second mass cancel: %+v %v, want nothing revoked", again, err)
	}
}
