package transport

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/lxzan/gws"
)

// wait bounds every wait of the stream tests; no test asserts a duration.
const wait = 10 * time.Second

// wsClient is a test stream client: it records frames, pings and the close it saw.
type wsClient struct {
	conn    *gws.Conn
	frames  chan []byte
	closed  chan closeInfo
	pings   atomic.Int32
	noPong  bool
	blocked chan struct{} // when set, OnMessage waits on it (a consumer that stopped reading)
}

type closeInfo struct {
	code   uint16
	reason string
}

func (c *wsClient) OnOpen(*gws.Conn) {}

func (c *wsClient) OnClose(_ *gws.Conn, err error) {
	var ce *gws.CloseError
	if errors.As(err, &ce) {
		c.closed <- closeInfo{ce.Code, string(ce.Reason)}
		return
	}
	c.closed <- closeInfo{}
}

func (c *wsClient) OnPing(conn *gws.Conn, payload []byte) {
	c.pings.Add(1)
	if !c.noPong {
		_ = conn.WritePong(payload)
	}
}

func (c *wsClient) OnPong(*gws.Conn, []byte) {}

func (c *wsClient) OnMessage(_ *gws.Conn, m *gws.Message) {
	if c.blocked != nil {
		<-c.blocked
	}
	c.frames <- append([]byte(nil), m.Bytes()...)
	_ = m.Close()
}

// dial opens a stream socket; key "" sends no X-API-Key.
func dial(t *testing.T, ts *httptest.Server, key string, c *wsClient) *wsClient {
	t.Helper()
	if c == nil {
		c = &wsClient{}
	}
	c.frames = make(chan []byte, 4096)
	c.closed = make(chan closeInfo, 1)
	hdr := http.Header{}
	if key != "" {
		hdr.Set("X-API-Key", key)
	}
	conn, _, err := gws.NewClient(c, &gws.ClientOption{
		Addr:          "ws" + strings.TrimPrefix(ts.URL, "http") + "/maker/stream",
		RequestHeader: hdr,
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.conn = conn
	go conn.ReadLoop()
	t.Cleanup(func() { _ = conn.NetConn().Close() })
	return c
}

func (c *wsClient) next(t *testing.T) frameJSON {
	t.Helper()
	decode := func(b []byte) frameJSON {
		var f frameJSON
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame %q: %v", b, err)
		}
		return f
	}
	select {
	case b := <-c.frames:
		return decode(b)
	case ci := <-c.closed:
		// The read loop queues every frame before it reports the close.
		select {
		case b := <-c.frames:
			c.closed <- ci
			return decode(b)
		default:
		}
		t.Fatalf("closed (%d %q) while waiting for a frame", ci.code, ci.reason)
	case <-time.After(wait):
		t.Fatal("no frame")
	}
	return frameJSON{}
}

func (c *wsClient) closeCode(t *testing.T) closeInfo {
	t.Helper()
	for {
		select {
		case <-c.frames: // frames before the close
		case ci := <-c.closed:
			return ci
		case <-time.After(wait):
			t.Fatal("socket not closed")
		}
	}
}

type frameJSON struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// streamDesk is a fake desk whose OpenSocket binds the socket to the party named by its
// key (keys "mk_<party>") and sends a snapshot, as the loop would; key "mk_unknown" gets
// a 4401 close.
func streamDesk(t *testing.T, mod func(*Options)) (*fakeDesk, *Server, *httptest.Server, chan uint64) {
	t.Helper()
	d := newFakeDesk()
	srv, ts := testServer(t, d, mod)
	opened := make(chan uint64, 64)
	parties := map[string]string{}
	for _, p := range []string{"alice", "bob"} {
		parties[HashKey("mk_"+p)] = p
	}
	d.openFn = func(socket uint64, keyHash string) error {
		party, ok := parties[keyHash]
		if !ok {
			srv.Hub().Deliver(machine.Outputs{Closes: []machine.SocketClose{{Socket: socket, Code: machine.CloseUnauthorized, Reason: "unknown or missing API key"}}})
		} else {
			srv.Hub().Deliver(machine.Outputs{
				Bindings: []machine.SocketBinding{{Socket: socket, Party: party}},
				Events: []machine.Event{{Party: party, Socket: socket, Type: machine.EvRfqCreated,
					Payload: machine.RfqIDPayload{RfqID: "rfq_snapshot"}}},
			})
		}
		opened <- socket
		return nil
	}
	return d, srv, ts, opened
}

// connect dials as party and waits for its snapshot frame; it returns the socket id.
func connect(t *testing.T, ts *httptest.Server, opened chan uint64, party string, c *wsClient) (*wsClient, uint64) {
	t.Helper()
	c = dial(t, ts, "mk_"+party, c)
	var id uint64
	select {
	case id = <-opened:
	case <-time.After(wait):
		t.Fatal("socket not reported to the desk")
	}
	if c.blocked == nil {
		if f := c.next(t); f.Type != machine.EvRfqCreated || !strings.Contains(string(f.Payload), "rfq_snapshot") {
			t.Fatalf("snapshot frame %+v", f)
		}
	}
	return c, id
}

func event(party, typ, rfq string) machine.Event {
	return machine.Event{Party: party, Type: typ, Payload: machine.RfqIDPayload{RfqID: rfq}}
}

func TestStreamMissingKeyIs4401WithoutTheDesk(t *testing.T) {
	d, _, ts, _ := streamDesk(t, nil)
	c := dial(t, ts, "", nil)
	if ci := c.closeCode(t); ci.code != machine.CloseUnauthorized {
		t.Fatalf("close %d %q, want 4401", ci.code, ci.reason)
	}
	if d.calls() != 0 {
		t.Error("the desk was called for a missing key")
	}
}

func TestStreamUnknownKeyIs4401FromTheDesk(t *testing.T) {
	d, _, ts, opened := streamDesk(t, nil)
	c := dial(t, ts, "mk_unknown", nil)
	id := <-opened
	if ci := c.closeCode(t); ci.code != machine.CloseUnauthorized {
		t.Fatalf("close %d, want 4401", ci.code)
	}
	if got := <-d.closeCh; got != id {
		t.Errorf("CloseSocket(%d), want %d", got, id)
	}
	d.mu.Lock()
	kh := d.opened[0].keyHash
	d.mu.Unlock()
	if kh != HashKey("mk_unknown") {
		t.Error("OpenSocket did not get the key hash")
	}
}

func TestStreamSnapshotAndRoutingByBinding(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, nil)
	a1, _ := connect(t, ts, opened, "alice", nil)
	a2, a2id := connect(t, ts, opened, "alice", nil)
	b, _ := connect(t, ts, opened, "bob", nil)
	hub := srv.Hub()

	// Party-wide events reach every socket of the party, in order, and no one else.
	hub.Deliver(machine.Outputs{Events: []machine.Event{event("alice", machine.EvRfqClosed, "r1"), event("bob", machine.EvRfqExpired, "r2"), event("alice", machine.EvRfqExpired, "r3")}})
	for _, c := range []*wsClient{a1, a2} {
		if f := c.next(t); f.Type != machine.EvRfqClosed || string(f.Payload) != `{"rfqId":"r1"}` {
			t.Errorf("frame %s %s", f.Type, f.Payload)
		}
		if f := c.next(t); f.Type != machine.EvRfqExpired || string(f.Payload) != `{"rfqId":"r3"}` {
			t.Errorf("frame %s %s", f.Type, f.Payload)
		}
	}
	if f := b.next(t); string(f.Payload) != `{"rfqId":"r2"}` {
		t.Errorf("bob got %s", f.Payload)
	}
	// A socket-addressed event reaches that socket only.
	e := event("alice", machine.EvQuoteStatus, "only-a2")
	e.Socket = a2id
	hub.Deliver(machine.Outputs{Events: []machine.Event{e, event("alice", machine.EvRfqClosed, "all")}})
	if f := a2.next(t); !strings.Contains(string(f.Payload), "only-a2") {
		t.Errorf("a2 got %s", f.Payload)
	}
	if f := a1.next(t); !strings.Contains(string(f.Payload), "all") {
		t.Errorf("a1 got %s first, want the party-wide frame", f.Payload)
	}
	// The counter moves right after the write, so it may trail what the client saw.
	eventually(t, func() bool { m := srv.Metrics(); return m.SocketsOpen == 3 && m.FramesSent == 11 })
}

func TestStreamSlowConsumerIsDropped(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, func(o *Options) { o.SendQueue = 8 })
	fast, _ := connect(t, ts, opened, "alice", nil)
	release := make(chan struct{})
	slow, slowID := connect(t, ts, opened, "alice", &wsClient{blocked: release})
	defer close(release)

	big := strings.Repeat("x", 256<<10)
	hub := srv.Hub()
	for i := 0; srv.Metrics().SlowConsumersDropped == 0; i++ {
		if i == 2000 {
			t.Fatal("the stalled socket was never dropped")
		}
		hub.Deliver(machine.Outputs{Events: []machine.Event{event("alice", machine.EvRfqClosed, big)}})
		// The fast socket keeps receiving every frame while the slow one stalls.
		if f := fast.next(t); f.Type != machine.EvRfqClosed {
			t.Fatalf("fast got %s", f.Type)
		}
	}
	hub.Deliver(machine.Outputs{Events: []machine.Event{event("alice", machine.EvRfqExpired, "after")}})
	if f := fast.next(t); f.Type != machine.EvRfqExpired {
		t.Fatalf("fast got %s after the drop", f.Type)
	}
	_ = slow
	_ = slowID
	if m := srv.Metrics(); m.SlowConsumersDropped != 1 {
		t.Errorf("slow consumers %d", m.SlowConsumersDropped)
	}
}

func TestStreamPingPong(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, func(o *Options) { o.PingInterval = 20 * time.Millisecond })
	good, _ := connect(t, ts, opened, "alice", nil)
	silent, _ := connect(t, ts, opened, "bob", &wsClient{noPong: true})
	if ci := silent.closeCode(t); ci.code != ClosePolicy {
		t.Fatalf("silent socket closed with %d %q, want %d", ci.code, ci.reason, ClosePolicy)
	}
	eventually(t, func() bool { return good.pings.Load() >= 5 })
	select {
	case ci := <-good.closed:
		t.Fatalf("answering socket closed: %d %q", ci.code, ci.reason)
	default:
	}
	srv.Hub().Deliver(machine.Outputs{Events: []machine.Event{event("alice", machine.EvRfqClosed, "still")}})
	if f := good.next(t); !strings.Contains(string(f.Payload), "still") {
		t.Errorf("got %s", f.Payload)
	}
	if m := srv.Metrics(); m.PongTimeouts != 1 {
		t.Errorf("pong timeouts %d", m.PongTimeouts)
	}
}

func TestStreamResyncThen1012(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, nil)
	c, _ := connect(t, ts, opened, "alice", nil)
	srv.Hub().Deliver(machine.Outputs{Events: []machine.Event{{Party: "alice", Type: machine.EvResync}}})
	if f := c.next(t); f.Type != machine.EvResync || string(f.Payload) != "{}" {
		t.Fatalf("frame %s %s", f.Type, f.Payload)
	}
	if ci := c.closeCode(t); ci.code != machine.CloseRestart {
		t.Fatalf("close %d, want 1012", ci.code)
	}
}

func TestStreamHubResyncAll(t *testing.T) {
	_, srv, ts, opened := streamDesk(t, nil)
	a, _ := connect(t, ts, opened, "alice", nil)
	b, _ := connect(t, ts, opened, "bob", nil)
	srv.Hub().Resync()
	for _, c := range []*wsClient{a, b} {
		if f := c.next(t); f.Type != machine.EvResync {
			t.Fatalf("frame %s", f.Type)
		}
		if ci := c.closeCode(t); ci.code != machine.CloseRestart {
			t.Fatalf("close %d", ci.code)
		}
	}
}

func TestStreamDeskClose4401AfterRotation(t *testing.T) {
	d, srv, ts, opened := streamDesk(t, nil)
	c, id := connect(t, ts, opened, "alice", nil)
	other, _ := connect(t, ts, opened, "alice", nil)
	srv.Hub().Deliver(machine.Outputs{
		Events: []machine.Event{event("alice", machine.EvRfqClosed, "before")},
		Closes: []machine.SocketClose{{Socket: id, Code: machine.CloseUnauthorized, Reason: "API key rotated"}},
	})
	if f := c.next(t); !strings.Contains(string(f.Payload), "before") {
		t.Errorf("frame before the close: %s", f.Payload)
	}
	ci := c.closeCode(t)
	if ci.code != machine.CloseUnauthorized || ci.reason != "API key rotated" {
		t.Fatalf("close %d %q", ci.code, ci.reason)
	}
	if got := <-d.closeCh; got != id {
		t.Errorf("CloseSocket(%d), want %d", got, id)
	}
	if f := other.next(t); !strings.Contains(string(f.Payload), "before") {
		t.Errorf("other socket: %s", f.Payload)
	}
}

func TestStreamShutdown1001(t *testing.T) {
	d, srv, ts, opened := streamDesk(t, nil)
	a, _ := connect(t, ts, opened, "alice", nil)
	b, _ := connect(t, ts, opened, "bob", nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*wsClient{a, b} {
		if ci := c.closeCode(t); ci.code != CloseGoingAway {
			t.Errorf("close %d, want 1001", ci.code)
		}
	}
	d.mu.Lock()
	n := len(d.closed)
	d.mu.Unlock()
	if n != 2 {
		t.Errorf("CloseSocket called %d times, want 2", n)
	}
	if m := srv.Metrics(); m.SocketsOpen != 0 {
		t.Errorf("sockets open %d", m.SocketsOpen)
	}
}

func TestStreamSocketsPerPartyBound(t *testing.T) {
	_, _, ts, opened := streamDesk(t, func(o *Options) { o.MaxSocketsPerParty = 2 })
	connect(t, ts, opened, "alice", nil)
	connect(t, ts, opened, "alice", nil)
	c := dial(t, ts, "mk_alice", nil)
	<-opened
	if ci := c.closeCode(t); ci.code != ClosePolicy || !strings.Contains(ci.reason, "too many") {
		t.Fatalf("close %d %q", ci.code, ci.reason)
	}
	connect(t, ts, opened, "bob", nil) // another party is not affected
}

func TestStreamTotalSocketsBound(t *testing.T) {
	_, _, ts, opened := streamDesk(t, func(o *Options) { o.MaxSockets = 1 })
	connect(t, ts, opened, "alice", nil)
	_, res, err := gws.NewClient(&wsClient{}, &gws.ClientOption{
		Addr:          "ws" + strings.TrimPrefix(ts.URL, "http") + "/maker/stream",
		RequestHeader: http.Header{"X-Api-Key": {"mk_bob"}},
	})
	if err == nil {
		t.Fatal("second socket accepted")
	}
	if res != nil && res.StatusCode != 503 {
		t.Errorf("status %d, want 503", res.StatusCode)
	}
}

func TestStreamPlainGETIs400JSON(t *testing.T) {
	d := newFakeDesk()
	_, ts := testServer(t, d, nil)
	res := request(t, ts, "GET", "/maker/stream", "", testKey, "")
	if res.status != 400 {
		t.Fatalf("status %d", res.status)
	}
	assertErrorBody(t, res, "")
}

func TestStreamOpenSocketFailureCloses(t *testing.T) {
	d := newFakeDesk()
	d.openFn = func(uint64, string) error { return errDeskDown }
	_, ts := testServer(t, d, nil)
	c := dial(t, ts, "mk_alice", nil)
	if ci := c.closeCode(t); ci.code != CloseInternal {
		t.Fatalf("close %d", ci.code)
	}
	<-d.closeCh
}

// eventually waits until cond holds (bounded by wait).
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestStreamCloseReportedUntilTheDeskTakesIt: a close the desk could not take at once (its
// queue full past the bound) is reported again until it goes through, so no socket stays
// open on the desk after its connection is gone (cancel-on-disconnect depends on it).
func TestStreamCloseReportedUntilTheDeskTakesIt(t *testing.T) {
	d, _, ts, opened := streamDesk(t, nil)
	d.mu.Lock()
	d.closeFails = 2
	d.mu.Unlock()
	c, id := connect(t, ts, opened, "alice", nil)
	_ = c.conn.NetConn().Close() // the client goes away
	select {
	case got := <-d.closeCh:
		if got != id {
			t.Fatalf("CloseSocket(%d), want %d", got, id)
		}
	case <-time.After(wait):
		t.Fatal("the close was never reported after two failures")
	}
	d.mu.Lock()
	left := d.closeFails
	d.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d failures left: the close went through without trying again", left)
	}
}
