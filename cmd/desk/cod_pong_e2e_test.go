package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/lxzan/gws"
)

// silentStream is a raw stream socket whose client never answers the desk's pings, as a
// maker whose process hangs or whose network silently stops would.
type silentStream struct{ rawStream }

func (*silentStream) OnPing(*gws.Conn, []byte) {}

// openSilent opens a raw stream of the party with key at base that answers no ping, with
// query (e.g. "cancelOnDisconnect=true"), and waits for its snapshot to end.
func openSilent(t *testing.T, base, key, query string) *silentStream {
	t.Helper()
	r := &silentStream{rawStream{frames: make(chan rawFrame, 1024)}}
	r.dial(t, r, base, key, query)
	r.until(t, "snapshot.end")
	return r
}

// dropped waits until the desk closes the socket (the frames channel closes).
func (r *silentStream) dropped(t *testing.T, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case _, ok := <-r.frames:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("the desk did not drop a socket that answers no ping within %s", within)
		}
	}
}

// codPongPing is the test desk's stream heartbeat: short, so that a silent socket is
// dropped within two intervals. The configuration allows 100ms (minPingInterval) to 10m.
const codPongPing = 300 * time.Millisecond

// TestCancelOnDisconnectOnMissedPong: with ping_interval 300ms, two makers quote over an
// answering stream and then swap it for a raw socket that answers no ping: Marked's with
// ?cancelOnDisconnect=true, Unmarked's without. The desk drops both silent sockets for the
// missed pong (desk_stream_pong_timeouts_total counts 2), which takes both makers offline:
// Marked's live quote is revoked (the taker's stream says revoked, without a reason, and
// GET /rfq/incoming shows Marked its quote revoked with revokeReason disconnect), while
// Unmarked's quote stays pending and the taker hears nothing of it. The answering streams
// of the taker (and the makers while they quote) are never dropped.
func TestCancelOnDisconnectOnMissedPong(t *testing.T) {
	d := startLive(t, "ping_interval = \""+codPongPing.String()+"\"\n"+baseConfig)
	taker := house(t, d)
	ts := subscribe(t, taker)

	type party struct {
		c     *client.Client
		query string
		q     *client.QuoteWithActions
		raw   *silentStream
	}
	marked := &party{c: maker(t, d, "Marked", true), query: "cancelOnDisconnect=true"}
	unmarked := &party{c: maker(t, d, "Unmarked", true)}
	for _, p := range []*party{marked, unmarked} {
		s := subscribe(t, p.c) // answers pings
		_, p.q = quoteRFQ(t, taker, p.c, s, client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "cbtc", Quote: "usdcx", TTLSeconds: 120}, "50000")
		anchor(t, p.c, s, p.q)
		await(t, ts, "quote.created", nil)
		// Several intervals pass on the answering stream: it is not dropped.
		time.Sleep(3 * codPongPing)
		p.raw = openSilent(t, d.base, p.c.APIKey(), p.query)
		s.Close() // the party stays online through its silent socket
	}

	marked.raw.dropped(t, 10*codPongPing)
	unmarked.raw.dropped(t, 10*codPongPing)

	ev, _ := await(t, ts, client.EventQuoteStatus, func(e client.Event) bool {
		p, err := e.Decode()
		st, ok := p.(*client.QuoteStatus)
		return err == nil && ok && (st.QuoteID == marked.q.QuoteID || st.QuoteID == unmarked.q.QuoteID)
	})
	p, _ := ev.Decode()
	if st := p.(*client.QuoteStatus); st.QuoteID != marked.q.QuoteID || st.Status != client.QuoteRevoked || st.Reason != "" {
		t.Fatalf("the taker got %+v, want %s revoked without a reason", st, marked.q.QuoteID)
	}

	for _, c := range []struct {
		p              *party
		status, reason string
	}{{marked, client.QuoteRevoked, "disconnect"}, {unmarked, client.QuotePending, ""}} {
		rfqs, err := c.p.c.IncomingRFQs(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rfqs {
			if r.MyQuote != nil && r.MyQuote.QuoteID == c.p.q.QuoteID {
				found = true
				if r.MyQuote.Status != c.status || r.MyQuote.RevokeReason != c.reason {
					t.Errorf("quote %s is %s (reason %q) after its silent socket was dropped, want %s (reason %q)",
						c.p.q.QuoteID, r.MyQuote.Status, r.MyQuote.RevokeReason, c.status, c.reason)
				}
			}
		}
		if !found {
			t.Errorf("GET /rfq/incoming does not show quote %s", c.p.q.QuoteID)
		}
	}

	// The taker's stream, answering, was kept: nothing more about Unmarked's quote on it.
	select {
	case e := <-ts.Events():
		if p, err := e.Decode(); err == nil {
			if st, ok := p.(*client.QuoteStatus); ok && st.QuoteID == unmarked.q.QuoteID {
				t.Fatalf("the taker heard %+v of the unmarked maker's quote", st)
			}
		}
		if e.Type == client.EventConnected {
			t.Fatal("the taker's answering stream was dropped and reconnected")
		}
	case <-time.After(3 * codPongPing):
	}
	if n := pongTimeouts(t, d); n != "2" {
		t.Fatalf("desk_stream_pong_timeouts_total is %s, want 2 (the two silent sockets only)", n)
	}
}

// pongTimeouts reads desk_stream_pong_timeouts_total from the admin listener's /metrics.
func pongTimeouts(t *testing.T, d *liveDesk) string {
	t.Helper()
	_, b := httpCall(t, "GET", d.admin+"/metrics", "", nil)
	m := regexp.MustCompile(`(?m)^desk_stream_pong_timeouts_total (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no desk_stream_pong_timeouts_total in /metrics:\n%s", b)
	}
	return string(m[1])
}
