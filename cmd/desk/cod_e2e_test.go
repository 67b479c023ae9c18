package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// TestCancelOnDisconnectOverTheWire: a maker streams with StreamOptions.CancelOnDisconnect
// and holds a live quote; when its only (marked) stream closes, the desk revokes the quote:
// the taker's stream says revoked (no reason), and the maker, back, reads it revoked with
// revokeReason disconnect in GET /rfq/incoming. A bad cancelOnDisconnect value is 400 at
// the upgrade.
func TestCancelOnDisconnectOverTheWire(t *testing.T) {
	d := startLive(t, baseConfig)
	m, taker := maker(t, d, "Cautious", true), house(t, d)

	if status, _ := refusedUpgrade(t, d.base, "/maker/stream?cancelOnDisconnect=yes", m.APIKey()); status != http.StatusBadRequest {
		t.Fatalf("cancelOnDisconnect=yes: %d, want 400", status)
	}

	ts := subscribe(t, taker)
	s := m.Subscribe(context.Background(), &client.StreamOptions{CancelOnDisconnect: true, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	await(t, s, client.EventConnected, nil)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st, err := m.Status(ctx(t)); err == nil && st.Invitable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("maker never became invitable")
		}
	}
	_, q := quoteRFQ(t, taker, m, s, client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "cbtc", Quote: "usdcx", TTLSeconds: 120}, "50000")
	anchor(t, m, s, q)
	await(t, ts, "quote.created", nil) // the taker sees it live

	s.Close() // the maker's last socket, marked: it goes offline
	ev, _ := await(t, ts, client.EventQuoteStatus, func(e client.Event) bool {
		p, err := e.Decode()
		st, ok := p.(*client.QuoteStatus)
		return err == nil && ok && st.QuoteID == q.QuoteID
	})
	p, _ := ev.Decode()
	if st := p.(*client.QuoteStatus); st.Status != client.QuoteRevoked || st.Reason != "" {
		t.Fatalf("the taker got %+v, want revoked without a reason", st)
	}
	rfqs, err := m.IncomingRFQs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rfqs {
		if r.MyQuote != nil && r.MyQuote.QuoteID == q.QuoteID {
			found = true
			if r.MyQuote.Status != client.QuoteRevoked || r.MyQuote.RevokeReason != "disconnect" {
				t.Fatalf("the maker's quote is %s (reason %q) after its marked stream closed, want revoked for a disconnect",
					r.MyQuote.Status, r.MyQuote.RevokeReason)
			}
		}
	}
	if !found {
		t.Fatalf("GET /rfq/incoming does not show the maker's quote %s", q.QuoteID)
	}
}
