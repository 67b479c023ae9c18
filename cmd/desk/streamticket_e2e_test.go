package main

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/lxzan/gws"
)

// closeWatch is a bare WebSocket that records its frames' types and its close code.
type closeWatch struct {
	frames chan string
	closed chan uint16 // 0 when the socket ended without a close frame
}

func (w *closeWatch) OnOpen(*gws.Conn)             {}
func (w *closeWatch) OnPing(c *gws.Conn, p []byte) { _ = c.WritePong(p) }
func (w *closeWatch) OnPong(*gws.Conn, []byte)     {}
func (w *closeWatch) OnMessage(_ *gws.Conn, m *gws.Message) {
	defer m.Close()
	w.frames <- string(m.Bytes())
}
func (w *closeWatch) OnClose(_ *gws.Conn, err error) {
	var ce *gws.CloseError
	if errors.As(err, &ce) {
		w.closed <- ce.Code
		return
	}
	w.closed <- 0
}

// dialTicket opens the stream at base with ?ticket= and no X-API-Key, as a browser does.
func dialTicket(t *testing.T, c *client.Client, ticket string) *closeWatch {
	t.Helper()
	w := &closeWatch{frames: make(chan string, 1024), closed: make(chan uint16, 1)}
	conn, _, err := gws.NewClient(w, &gws.ClientOption{Addr: c.StreamURLWithTicket(ticket),
		RequestHeader: http.Header{"Origin": []string{"https://console.example"}}})
	if err != nil {
		t.Fatalf("dial with a ticket: %v", err)
	}
	go conn.ReadLoop()
	t.Cleanup(func() { _ = conn.NetConn().Close() })
	return w
}

// untilFrame waits for a frame containing want; it fails on a close or after 15 s.
func (w *closeWatch) untilFrame(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case f := <-w.frames:
			if strings.Contains(f, want) {
				return
			}
		case code := <-w.closed:
			t.Fatalf("closed %d waiting for %s", code, want)
		case <-timeout:
			t.Fatalf("no frame with %s within 15s", want)
		}
	}
}

// refused waits for the 4401 close, with no frame before it.
func (w *closeWatch) refused(t *testing.T, what string) {
	t.Helper()
	select {
	case f := <-w.frames:
		t.Fatalf("%s: a frame arrived: %s", what, f)
	case code := <-w.closed:
		if code != client.CloseUnauthorized {
			t.Fatalf("%s: closed %d, want 4401", what, code)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: not closed within 15s", what)
	}
}

// TestStreamTicketOverTheWire: a maker's ticket opens its stream with no header (the
// snapshot arrives, and an RFQ inviting the maker reaches it); the same ticket again, an
// unknown one and one voided by a key rotation are closed 4401 after the upgrade; a
// client stream with StreamOptions.Ticket connects the same way; X-API-Key with a ticket
// is 400 before the upgrade. The ticket's expiry (30 s) is proved in the machine by input
// time (TestStreamTicketOneShot).
func TestStreamTicketOverTheWire(t *testing.T) {
	d := startLive(t, `cors_origins = ["https://console.example"]`+"\n"+baseConfig)
	m, taker := maker(t, d, "Ticket Maker", false), house(t, d)
	tk, err := m.StreamTicket(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tk.Ticket, "st_") || time.Until(tk.ExpiresAt) > 31*time.Second || time.Until(tk.ExpiresAt) < 20*time.Second {
		t.Fatalf("ticket %+v", tk)
	}
	w := dialTicket(t, m, tk.Ticket)
	w.untilFrame(t, `"snapshot.end"`)
	rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "CBTC", Quote: "usdcx",
		InvitedMakers: []string{m.Hint()}, TTLSeconds: 120})
	if err != nil {
		t.Fatal(err)
	}
	w.untilFrame(t, rfq.RFQID)

	dialTicket(t, m, tk.Ticket).refused(t, "the same ticket again")
	dialTicket(t, m, "st_never-issued").refused(t, "an unknown ticket")

	s := m.Subscribe(ctx(t), &client.StreamOptions{Ticket: true, MinBackoff: 50 * time.Millisecond})
	t.Cleanup(s.Close)
	await(t, s, client.EventSnapshotEnd, nil)

	if status, _ := refusedUpgrade(t, d.base, "/maker/stream?ticket="+tk.Ticket, m.APIKey()); status != http.StatusBadRequest {
		t.Fatalf("key and ticket: %d, want 400", status)
	}

	voided, err := m.StreamTicket(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.RecoverKey(ctx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-w.closed:
		if code != client.CloseUnauthorized {
			t.Fatalf("the ticket's socket closed %d at the rotation, want 4401", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the rotation did not close the ticket's socket")
	}
	dialTicket(t, m, voided.Ticket).refused(t, "a ticket of the rotated key")
}

// TestCORSOverTheWire: with cors_origins set, a preflight from a named origin for an API
// route is 204 with the origin echoed and the allowed methods and headers, and a browser
// upgrade from another origin is 403; without it, the same preflight is 405 with no CORS
// header. A malformed origin stops the desk at start naming the key.
func TestCORSOverTheWire(t *testing.T) {
	preflight := func(base, origin string) *http.Response {
		res, _ := httpCall(t, "OPTIONS", base+"/maker/stream/ticket", "", map[string]string{"Origin": origin,
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-api-key"})
		return res
	}
	open := startLive(t, `cors_origins = ["https://console.example", "http://localhost:5173"]`+"\n"+baseConfig)
	res := preflight(open.base, "http://localhost:5173")
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		res.Header.Get("Vary") == "" || !strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "X-API-Key") ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight with cors_origins: %d %v", res.StatusCode, res.Header)
	}
	if res := preflight(open.base, "https://evil.example"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d %v", res.StatusCode, res.Header)
	}
	m := maker(t, open, "Origin Maker", false)
	tk, err := m.StreamTicket(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, resp, err := gws.NewClient(&closeWatch{frames: make(chan string, 1), closed: make(chan uint16, 1)}, &gws.ClientOption{
		Addr: m.StreamURLWithTicket(tk.Ticket), RequestHeader: http.Header{"Origin": []string{"https://evil.example"}}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an upgrade from another origin: %v %v, want 403", resp, err)
	}

	closed := startLive(t, baseConfig)
	if res := preflight(closed.base, "http://localhost:5173"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Access-Control-Allow-Origin") != "" || res.Header.Get("Vary") != "" {
		t.Fatalf("preflight without cors_origins: %d %v", res.StatusCode, res.Header)
	}
}
