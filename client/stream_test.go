package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/lxzan/gws"
)

// streamServer is a fake desk stream: it records each upgrade's API key and runs a script
// per accepted socket.
type streamServer struct {
	t      *testing.T
	mu     sync.Mutex
	keys   []string
	query  []string // the raw query of every upgrade attempt
	conns  int
	reject func(n int) int // HTTP status to refuse upgrade attempt n (1-based) with; 0 accepts
	script func(n int, s *gws.Conn)
	pongs  chan string
}

type serverHandler struct {
	gws.BuiltinEventHandler
	pongs chan string
}

// OnPong records the payload of a pong from the client.
func (h serverHandler) OnPong(_ *gws.Conn, payload []byte) {
	select {
	case h.pongs <- string(payload):
	default:
	}
}

func newStreamServer(t *testing.T, script func(n int, s *gws.Conn)) (*streamServer, *Client) {
	ss := &streamServer{t: t, script: script, pongs: make(chan string, 4)}
	up := gws.NewUpgrader(serverHandler{pongs: ss.pongs}, &gws.ServerOption{})
	attempts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/maker/stream" || r.Method != http.MethodGet {
			t.Errorf("stream request %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		ss.mu.Lock()
		attempts++
		n := attempts
		ss.keys = append(ss.keys, r.Header.Get(APIKeyHeader))
		ss.query = append(ss.query, r.URL.RawQuery)
		reject := ss.reject
		ss.mu.Unlock()
		if reject != nil {
			if st := reject(n); st != 0 {
				http.Error(w, `{"error":"no"}`, st)
				return
			}
		}
		ss.mu.Lock() // counted before the 101 leaves, so the client never sees it first
		ss.conns++
		c := ss.conns
		ss.mu.Unlock()
		sock, err := up.Upgrade(w, r)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			return
		}
		go sock.ReadLoop()
		go ss.script(c, sock)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithAPIKey("mk_first"))
	if err != nil {
		t.Fatal(err)
	}
	return ss, c
}

func (ss *streamServer) snapshot() (keys []string, conns int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]string(nil), ss.keys...), ss.conns
}

func send(s *gws.Conn, typ, payload string) {
	_ = s.WriteString(`{"type":"` + typ + `","payload":` + payload + `}`)
}

var fastBackoff = &StreamOptions{MinBackoff: 2 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Buffer: 4}

// next returns the next event, failing the test after a generous bound (a hang guard, not
// a timing assertion).
func next(t *testing.T, s *Stream) Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatalf("stream ended: %v", s.Err())
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return Event{}
}

func wantConnected(t *testing.T, ev Event, reconnect bool, n uint64) {
	t.Helper()
	c, err := ev.Connected()
	if err != nil || c.Reconnect != reconnect || c.Connects != n {
		t.Fatalf("event %s %s, want connected reconnect=%v connects=%d (%v)", ev.Type, ev.Payload, reconnect, n, err)
	}
}

func TestStreamDecodesEveryEventAndSkipsJunk(t *testing.T) {
	type frame struct{ typ, payload string }
	frames := []frame{
		{EventRFQCreated, rfqJSON},
		{"rfq.renamed", `{"rfqId":"rfq_1"}`}, // unknown: skipped
		{EventRFQClosed, `{"rfqId":"rfq_1"}`},
		{EventRFQExpired, `{"rfqId":"rfq_2"}`},
		{EventQuoteCreated, quoteJSON},
		{EventQuoteStatus, `{"quoteId":"q_1","rfqId":"rfq_1","status":"lost"}`},
		{EventQuoteAnchored, `{"quoteId":"q_1","rfqId":"rfq_1","anchorCids":["00a","00b"]}`},
		{EventTradeStep, `{"tradeId":"t_1","rfqId":"rfq_1","step":"allocated","refs":["00c"]}`},
		{EventTradeSettled, tradeJSON},
		{EventTradeFailed, `{"tradeId":"t_2","rfqId":"rfq_1","reason":"window expired"}`},
		{EventSignRequested, actionJSON},
		{EventSignCompleted, `{"actionId":"act_1"}`},
		{EventHistoryRecorded, historyJSON},
	}
	want := []any{&wantRFQ, &RFQRef{RFQID: "rfq_1"}, &RFQRef{RFQID: "rfq_2"}, &wantQuote,
		&QuoteStatus{QuoteID: "q_1", RFQID: "rfq_1", Status: QuoteLost},
		&QuoteAnchored{QuoteID: "q_1", RFQID: "rfq_1", AnchorCIDs: []string{"00a", "00b"}},
		&TradeStep{TradeID: "t_1", RFQID: "rfq_1", Step: TradeStepAllocated, Refs: []string{"00c"}},
		&wantTrade, &TradeFailure{TradeID: "t_2", RFQID: "rfq_1", Reason: "window expired"},
		&wantAction, &SignCompleted{ActionID: "act_1"}, &wantHistory, &Resync{}}
	ss, c := newStreamServer(t, func(n int, s *gws.Conn) {
		for _, f := range frames {
			send(s, f.typ, f.payload)
		}
		_ = s.WriteString(`not json`)                                                  // malformed
		_ = s.WriteString(`{"payload":{}}`)                                            // malformed: no type
		_ = s.WriteString(`{"type":7,"payload":{}}`)                                   // malformed: type not a string
		send(s, EventQuoteStatus, `"lost"`)                                            // malformed: payload not an object
		send(s, EventRFQCreated, `{"rfqId":"rfq_9","qty":1.5}`)                        // malformed: float amount
		send(s, EventConnected, `{"reconnect":true}`)                                  // the synthetic type is never taken from the wire
		_ = s.WriteMessage(gws.OpcodeBinary, []byte(`{"type":"resync","payload":{}}`)) // binary frames decode too
	})
	var wantTypes []string
	for _, f := range frames {
		if KnownEvent(f.typ) {
			wantTypes = append(wantTypes, f.typ)
		}
	}
	wantTypes = append(wantTypes, EventResync)
	s := c.Subscribe(context.Background(), &StreamOptions{Buffer: 1})
	defer s.Close()

	wantConnected(t, next(t, s), false, 1)
	for i, w := range want {
		ev := next(t, s)
		got, err := ev.Decode()
		if err != nil {
			t.Fatalf("event %d (%s): %v", i, ev.Type, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("event %d (%s):\n got %#v\nwant %#v", i, ev.Type, got, w)
		}
		if ev.Type != wantTypes[i] {
			t.Errorf("event %d has type %s, want %s", i, ev.Type, wantTypes[i])
		}
		if err := checkTypedHelper(ev, w); err != nil {
			t.Errorf("event %d: %v", i, err)
		}
	}
	if st := s.Stats(); st.Unknown != 2 || st.Malformed != 5 || st.Connects != 1 {
		t.Errorf("stats %+v, want 2 unknown, 5 malformed, 1 connect", st)
	}
	if keys, _ := ss.snapshot(); len(keys) != 1 || keys[0] != "mk_first" {
		t.Errorf("upgrade keys %q", keys)
	}
	s.Close()
	if !errors.Is(s.Err(), context.Canceled) {
		t.Errorf("Err after Close = %v", s.Err())
	}
	if _, ok := <-s.Events(); ok {
		t.Error("events channel open after Close")
	}
}

// checkTypedHelper decodes ev with its own typed helper and compares with want; it also
// checks that another helper refuses the event.
func checkTypedHelper(ev Event, want any) error {
	var got any
	var err error
	switch ev.Type {
	case EventRFQCreated:
		got, err = ev.RFQCreated()
	case EventRFQClosed:
		got, err = ev.RFQClosed()
	case EventRFQExpired:
		got, err = ev.RFQExpired()
	case EventQuoteCreated:
		got, err = ev.QuoteCreated()
	case EventQuoteStatus:
		got, err = ev.QuoteStatus()
	case EventQuoteAnchored:
		got, err = ev.QuoteAnchored()
	case EventTradeStep:
		got, err = ev.TradeStep()
	case EventTradeSettled:
		got, err = ev.TradeSettled()
	case EventTradeFailed:
		got, err = ev.TradeFailed()
	case EventSignRequested:
		got, err = ev.SignRequested()
	case EventSignCompleted:
		got, err = ev.SignCompleted()
	case EventHistoryRecorded:
		got, err = ev.HistoryRecorded()
	case EventResync:
		got, err = ev.Resync()
	default:
		return fmt.Errorf("no helper for %s", ev.Type)
	}
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("helper gave %#v", got)
	}
	if _, err := ev.Connected(); err == nil {
		return fmt.Errorf("Connected() accepted a %s event", ev.Type)
	}
	return nil
}

func TestEventDecodeUnknown(t *testing.T) {
	if _, err := (Event{Type: "x.y", Payload: []byte(`{}`)}).Decode(); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("unknown type: %v", err)
	}
	if KnownEvent("x.y") || !KnownEvent(EventTradeStep) {
		t.Error("KnownEvent")
	}
}

func TestStreamReconnectsAfterServerCloses(t *testing.T) {
	proceed := make(chan struct{})
	ss, c := newStreamServer(t, func(n int, s *gws.Conn) {
		switch n {
		case 1: // resync, then the desk's 1012 close
			send(s, EventRFQCreated, rfqJSON)
			send(s, EventResync, `{}`)
			<-proceed
			_ = s.WriteClose(1012, []byte("restart"))
		case 2: // a dropped TCP connection, no close frame
			send(s, EventRFQClosed, `{"rfqId":"rfq_1"}`)
			time.Sleep(10 * time.Millisecond)
			_ = s.NetConn().Close()
		case 3:
			send(s, EventRFQExpired, `{"rfqId":"rfq_1"}`)
		}
	})
	s := c.Subscribe(context.Background(), fastBackoff)
	defer s.Close()

	wantConnected(t, next(t, s), false, 1)
	if ev := next(t, s); ev.Type != EventRFQCreated {
		t.Fatalf("got %s", ev.Type)
	}
	if ev := next(t, s); ev.Type != EventResync {
		t.Fatalf("got %s", ev.Type)
	}
	c.SetAPIKey("mk_second") // the next upgrade must carry it
	close(proceed)
	wantConnected(t, next(t, s), true, 2)
	if ev := next(t, s); ev.Type != EventRFQClosed {
		t.Fatalf("got %s", ev.Type)
	}
	wantConnected(t, next(t, s), true, 3)
	if ev := next(t, s); ev.Type != EventRFQExpired {
		t.Fatalf("got %s", ev.Type)
	}
	keys, _ := ss.snapshot()
	if !reflect.DeepEqual(keys, []string{"mk_first", "mk_second", "mk_second"}) {
		t.Errorf("upgrade keys %q", keys)
	}
	if s.Err() != nil {
		t.Errorf("Err while running = %v", s.Err())
	}
}

func TestStreamRetriesRefusedUpgrades(t *testing.T) {
	ss, c := newStreamServer(t, func(n int, s *gws.Conn) { send(s, EventResync, `{}`) })
	ss.reject = func(n int) int {
		if n <= 3 {
			return http.StatusServiceUnavailable
		}
		return 0
	}
	s := c.Subscribe(context.Background(), fastBackoff)
	defer s.Close()
	wantConnected(t, next(t, s), false, 1)
	if keys, conns := ss.snapshot(); len(keys) != 4 || conns != 1 {
		t.Errorf("%d attempts, %d sockets; want 4 and 1", len(keys), conns)
	}
}

func TestStreamStopsOn4401(t *testing.T) {
	ss, c := newStreamServer(t, func(n int, s *gws.Conn) {
		send(s, EventRFQExpired, `{"rfqId":"rfq_1"}`)
		_ = s.WriteClose(CloseUnauthorized, []byte("key rotated"))
	})
	s := c.Subscribe(context.Background(), fastBackoff)
	defer s.Close()
	wantConnected(t, next(t, s), false, 1)
	if ev := next(t, s); ev.Type != EventRFQExpired {
		t.Fatalf("got %s", ev.Type)
	}
	select {
	case _, ok := <-s.Events():
		if ok {
			t.Fatal("event after 4401")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream still running after 4401")
	}
	if !errors.Is(s.Err(), ErrUnauthorized) {
		t.Errorf("Err = %v, want ErrUnauthorized", s.Err())
	}
	if _, conns := ss.snapshot(); conns != 1 {
		t.Errorf("%d sockets: reconnected after 4401", conns)
	}
}

func TestStreamStopsOnRefusedKey(t *testing.T) {
	ss, c := newStreamServer(t, func(int, *gws.Conn) {})
	ss.reject = func(int) int { return http.StatusUnauthorized }
	s := c.Subscribe(context.Background(), fastBackoff)
	<-s.Done()
	if !errors.Is(s.Err(), ErrUnauthorized) {
		t.Errorf("Err = %v", s.Err())
	}
	if keys, _ := ss.snapshot(); len(keys) != 1 {
		t.Errorf("%d attempts after a 401", len(keys))
	}
}

func TestStreamAnswersPing(t *testing.T) {
	ss, c := newStreamServer(t, func(n int, s *gws.Conn) { _ = s.WritePing([]byte("hb-1")) })
	s := c.Subscribe(context.Background(), fastBackoff)
	defer s.Close()
	select {
	case p := <-ss.pongs:
		if p != "hb-1" {
			t.Errorf("pong payload %q", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ping not answered")
	}
}

func TestStreamIdleSocketIsReplaced(t *testing.T) {
	_, c := newStreamServer(t, func(n int, s *gws.Conn) {}) // never sends, never pings
	opts := *fastBackoff
	opts.IdleTimeout = 20 * time.Millisecond
	s := c.Subscribe(context.Background(), &opts)
	defer s.Close()
	wantConnected(t, next(t, s), false, 1)
	wantConnected(t, next(t, s), true, 2)
}

func TestStreamBackpressureDropsNothing(t *testing.T) {
	const n = 300
	_, c := newStreamServer(t, func(_ int, s *gws.Conn) {
		for i := range n {
			send(s, EventSignCompleted, fmt.Sprintf(`{"actionId":"act_%d"}`, i))
		}
	})
	s := c.Subscribe(context.Background(), &StreamOptions{Buffer: 1})
	defer s.Close()
	wantConnected(t, next(t, s), false, 1)
	for i := range n {
		ev := next(t, s)
		sc, err := ev.SignCompleted()
		if err != nil || sc.ActionID != fmt.Sprintf("act_%d", i) {
			t.Fatalf("event %d: %+v %v", i, sc, err)
		}
		if i%50 == 0 {
			time.Sleep(time.Millisecond) // a slow consumer
		}
	}
}

func TestStreamCloseDuringBackoff(t *testing.T) {
	ss, c := newStreamServer(t, func(int, *gws.Conn) {})
	ss.reject = func(int) int { return http.StatusBadGateway }
	s := c.Subscribe(context.Background(), &StreamOptions{MinBackoff: time.Hour})
	for {
		if keys, _ := ss.snapshot(); len(keys) > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	s.Close() // must not wait out the hour
	if !errors.Is(s.Err(), context.Canceled) {
		t.Errorf("Err = %v", s.Err())
	}
}

func TestStreamContextCancel(t *testing.T) {
	_, c := newStreamServer(t, func(int, *gws.Conn) {})
	ctx, cancel := context.WithCancel(context.Background())
	s := c.Subscribe(ctx, fastBackoff)
	wantConnected(t, next(t, s), false, 1)
	cancel()
	<-s.Done()
	if !errors.Is(s.Err(), context.Canceled) {
		t.Errorf("Err = %v", s.Err())
	}
}

func TestBackoffDelay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	minD, maxD := 100*time.Millisecond, 3*time.Second
	for n := 1; n <= 40; n++ {
		d := minD << min(n-1, 20)
		d = min(d, maxD)
		for range 50 {
			got := backoffDelay(n, minD, maxD, rng)
			if got < d/2 || got > d {
				t.Fatalf("attempt %d: delay %v outside [%v, %v]", n, got, d/2, d)
			}
		}
	}
}
