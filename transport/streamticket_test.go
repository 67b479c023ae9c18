package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/lxzan/gws"
)

// OpenTicketSocket makes the fake desk a TicketSocketOpener: it records the socket with the
// ticket's hash in keyHash and answers through openFn as for a key.
func (d *fakeDesk) OpenTicketSocket(_ context.Context, socket uint64, ticketHash string, cancelOnDisconnect, resume bool, since uint64) error {
	return d.open(openCall{socket, ticketHash, cancelOnDisconnect, resume, since})
}

// TestStreamTicketEndpoint: POST /maker/stream/ticket hands the desk the hash of a fresh
// "st_" ticket of 32 random bytes under the caller's key hash, and answers the ticket with
// the desk's expiresAt; without a key it is 401 and the desk hears nothing.
func TestStreamTicketEndpoint(t *testing.T) {
	d := newFakeDesk()
	exp := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	d.doFn = func(machine.Command_) (machine.Reply, error) {
		return machine.Reply{Status: 200, Body: machine.StreamTicketDTO{ExpiresAt: machine.WireTime(exp)}}, nil
	}
	_, ts := testServer(t, d, nil)
	if res := request(t, ts, "POST", "/maker/stream/ticket", "", "", ""); res.status != 401 || d.calls() != 0 {
		t.Fatalf("without a key: %d %s, %d desk calls", res.status, res.body, d.calls())
	}
	res := request(t, ts, "POST", "/maker/stream/ticket", "", "mk_alice", "")
	var got struct {
		Ticket    string `json:"ticket"`
		ExpiresAt string `json:"expiresAt"`
	}
	if res.status != 200 || json.Unmarshal([]byte(res.body), &got) != nil {
		t.Fatalf("ticket: %d %s", res.status, res.body)
	}
	if !strings.HasPrefix(got.Ticket, StreamTicketPrefix) || len(got.Ticket) != len(StreamTicketPrefix)+43 || got.ExpiresAt != machine.FormatTime(exp) {
		t.Fatalf("ticket answer %+v", got)
	}
	cmds := d.commands()
	if len(cmds) != 1 {
		t.Fatalf("commands %+v", cmds)
	}
	c, ok := cmds[0].(machine.IssueStreamTicket)
	if !ok || c.KeyHash != HashKey("mk_alice") || c.TicketHash != HashKey(got.Ticket) {
		t.Fatalf("the desk got %+v, want the hash of %q under alice's key", cmds[0], got.Ticket)
	}
	if strings.Contains(res.body, c.TicketHash) {
		t.Fatal("the answer carries the ticket's hash")
	}
}

// TestStreamTicketOpensSocket: ?ticket=T opens the socket through OpenTicketSocket with
// T's hash and the other options of the upgrade; the desk's binding streams as for a key;
// an unknown ticket is closed 4401 as an unknown key is.
func TestStreamTicketOpensSocket(t *testing.T) {
	d, srv, ts, opened := streamDesk(t, nil)
	d.openFn = func(socket uint64, hash string) error {
		if hash == HashKey("st_good") {
			srv.Hub().Deliver(machine.Outputs{
				Bindings: []machine.SocketBinding{{Socket: socket, Party: "alice"}},
				Events:   []machine.Event{{Party: "alice", Socket: socket, Type: machine.EvRfqCreated, Payload: machine.RfqIDPayload{RfqID: "rfq_snapshot"}}},
			})
		} else {
			srv.Hub().Deliver(machine.Outputs{Closes: []machine.SocketClose{{Socket: socket, Code: machine.CloseUnauthorized, Reason: "unknown or missing API key"}}})
		}
		opened <- socket
		return nil
	}
	base := "ws" + strings.TrimPrefix(ts.URL, "http") + "/maker/stream"
	c := &wsClient{frames: make(chan []byte, 64), closed: make(chan closeInfo, 1)}
	conn, _, err := gws.NewClient(c, &gws.ClientOption{Addr: base + "?ticket=st_good&cancelOnDisconnect=true&since=5"})
	if err != nil {
		t.Fatal(err)
	}
	go conn.ReadLoop()
	defer func() { _ = conn.NetConn().Close() }()
	select {
	case f := <-c.frames:
		if !strings.Contains(string(f), "rfq_snapshot") {
			t.Fatalf("first frame %s", f)
		}
	case <-time.After(wait):
		t.Fatal("no frame on the ticket's socket")
	}
	d.mu.Lock()
	got := d.opened[0]
	d.mu.Unlock()
	if got.keyHash != HashKey("st_good") || !got.cod || !got.resume || got.since != 5 {
		t.Fatalf("the desk got %+v", got)
	}
	bad := &wsClient{frames: make(chan []byte, 64), closed: make(chan closeInfo, 1)}
	conn2, _, err := gws.NewClient(bad, &gws.ClientOption{Addr: base + "?ticket=not-a-ticket"})
	if err != nil {
		t.Fatal(err)
	}
	go conn2.ReadLoop()
	select {
	case ci := <-bad.closed:
		if ci.code != machine.CloseUnauthorized {
			t.Fatalf("an unknown ticket closed %+v, want 4401", ci)
		}
	case <-time.After(wait):
		t.Fatal("an unknown ticket was not closed")
	}
}

// TestStreamTicketUpgradeRefusals: a ticket given twice, or with an X-API-Key header too,
// is 400 before the upgrade naming the parameter; the desk hears nothing.
func TestStreamTicketUpgradeRefusals(t *testing.T) {
	d, _, ts, _ := streamDesk(t, nil)
	for _, tc := range []struct{ query, key string }{{"ticket=a&ticket=b", ""}, {"ticket=a", "mk_alice"}} {
		res := upgradeRequest(t, ts, "/maker/stream?"+tc.query, tc.key, "")
		if res.status != http.StatusBadRequest || !strings.Contains(res.body, "ticket") {
			t.Errorf("%q key %q: %d %s, want 400 naming the ticket", tc.query, tc.key, res.status, res.body)
		}
	}
	if n := d.calls(); n != 0 {
		t.Errorf("the desk was called %d times for refused upgrades", n)
	}
}

// upgradeRequest sends a WebSocket upgrade request over plain HTTP and returns the answer
// (refusals come before the handshake); key and origin "" send no header.
func upgradeRequest(t *testing.T, ts *httptest.Server, path, key, origin string) response {
	t.Helper()
	return requestWith(t, "GET", ts.URL+path, "", http.Header{"X-API-Key": orNone(key), "Origin": orNone(origin), "Connection": {"Upgrade"},
		"Upgrade": {"websocket"}, "Sec-WebSocket-Version": {"13"}, "Sec-WebSocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}})
}
