package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lxzan/gws"
)

// CloseUnauthorized is the WebSocket close code of an authentication failure on the stream.
const CloseUnauthorized = 4401

// StreamOptions tunes a Stream. The zero value (or nil) gives the defaults.
type StreamOptions struct {
	// Buffer is the capacity of the events channel (default 64).
	Buffer int
	// MinBackoff is the first reconnect delay (default 500 ms); each failed attempt in a row
	// doubles it up to MaxBackoff (default 30 s). The delay actually waited is drawn
	// uniformly from [d/2, d] (jitter). A socket that delivered at least one frame resets
	// the sequence.
	MinBackoff, MaxBackoff time.Duration
	// IdleTimeout closes and reopens a socket on which nothing arrived (frame or ping) for
	// that long (default 75 s: the desk pings every 30 s).
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the dial and upgrade (default 10 s).
	HandshakeTimeout time.Duration
	// MaxFrameBytes bounds one frame (default 1 MiB); a larger one closes the socket.
	MaxFrameBytes int
	// TLSConfig is used for wss (default: the system roots).
	TLSConfig *tls.Config
	// CancelOnDisconnect opens every socket with ?cancelOnDisconnect=true: when the party
	// goes offline with such a socket among those that closed (a restart of the desk
	// included), the desk revokes its pending quotes that are not settling, and the maker's
	// quote.status frames say reason "disconnect". A reconnect opens a marked socket again.
	CancelOnDisconnect bool
	// NoResume turns resuming off: every reconnect gets the snapshot, as from a desk
	// before sequence numbers. By default a reconnect asks for the events missed
	// (?since=, resume.go).
	NoResume bool
	// Ticket opens every socket as a browser does: a fresh one-shot ticket from
	// POST /maker/stream/ticket (with the key) in ?ticket=, and no X-API-Key header on the
	// upgrade (streamticket.go). An unauthorized ticket request ends the stream as a 4401
	// does.
	Ticket bool
}

func (o *StreamOptions) withDefaults() StreamOptions {
	var r StreamOptions
	if o != nil {
		r = *o
	}
	if r.Buffer <= 0 {
		r.Buffer = 64
	}
	if r.MinBackoff <= 0 {
		r.MinBackoff = 500 * time.Millisecond
	}
	if r.MaxBackoff < r.MinBackoff {
		r.MaxBackoff = max(30*time.Second, r.MinBackoff)
	}
	if r.IdleTimeout <= 0 {
		r.IdleTimeout = 75 * time.Second
	}
	if r.HandshakeTimeout <= 0 {
		r.HandshakeTimeout = 10 * time.Second
	}
	if r.MaxFrameBytes <= 0 {
		r.MaxFrameBytes = 1 << 20
	}
	return r
}

// StreamStats are counters of a Stream.
type StreamStats struct {
	// Connects counts sockets opened (upgrades that succeeded).
	Connects uint64
	// Unknown counts well-formed frames of an event type this client does not know; they are
	// skipped.
	Unknown uint64
	// Malformed counts frames that are not `{type, payload}` JSON or whose payload does not
	// decode as its type's; they are skipped.
	Malformed uint64
}

// Stream consumes the desk's maker stream (GET /maker/stream) and delivers its events in
// order on a channel. It reconnects by itself with exponential backoff and jitter after any
// close or failure except an authentication failure (close code 4401, or an upgrade answered
// 401), which ends it with an error matching ErrUnauthorized: recover the key
// (Client.RecoverKey) and subscribe again.
//
// Every socket starts with a synthetic EventConnected event, then the desk's snapshot, then
// live events: on EventConnected the consumer treats what follows as a resync. A reconnect
// resumes instead (unless StreamOptions.NoResume): its Connected.Resume is set, and the
// desk sends the events missed and EventStreamResumed (keep the state), or EventStreamGap
// and the snapshot (resync). A numbered event already delivered is not delivered again.
//
// Backpressure: the channel holds StreamOptions.Buffer events. When it is full the read loop
// waits for the consumer, so the socket stops being read and TCP pushes back on the desk;
// events are never dropped. A consumer stalled for longer than the desk's heartbeat (about
// 30 s, since pings are not answered while the loop waits) gets the socket dropped by the
// desk; the stream then reconnects and resyncs.
type Stream struct {
	c      *Client
	opts   StreamOptions
	url    string
	events chan Event
	done   chan struct{}
	cancel context.CancelFunc
	rng    *rand.Rand // only the run goroutine uses it
	resume resumePoint

	err       error // set before done is closed
	connects  atomic.Uint64
	unknown   atomic.Uint64
	malformed atomic.Uint64
}

// Subscribe opens the maker stream of the client's party and returns at once; the stream
// runs until ctx is done, Close is called, or authentication fails. The API key is read
// again at every connect, so SetAPIKey applies from the next socket on.
func (c *Client) Subscribe(ctx context.Context, opts *StreamOptions) *Stream {
	ctx, cancel := context.WithCancel(ctx)
	o := opts.withDefaults()
	s := &Stream{
		c:      c,
		opts:   o,
		url:    c.streamURL(o.CancelOnDisconnect),
		events: make(chan Event, o.Buffer),
		done:   make(chan struct{}),
		cancel: cancel,
		rng:    rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
	go s.run(ctx)
	return s
}

// StreamURL returns the ws (or wss, for an https base) address of the maker stream.
func (c *Client) StreamURL() string { return c.streamURL(false) }

// streamURL is StreamURL, marked for cancel-on-disconnect when cod is set.
func (c *Client) streamURL(cod bool) string {
	u := *c.base
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	u.Path += "/maker/stream"
	if cod {
		u.RawQuery = "cancelOnDisconnect=true"
	}
	return u.String()
}

// withQuery appends one query parameter to an address that may hold a query already.
func withQuery(addr, kv string) string {
	if strings.Contains(addr, "?") {
		return addr + "&" + kv
	}
	return addr + "?" + kv
}

// Events returns the channel of events. It is closed when the stream ends; Err then says
// why.
func (s *Stream) Events() <-chan Event { return s.events }

// Done is closed when the stream has ended.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Err returns why the stream ended: an error matching ErrUnauthorized, or the context's
// error. It returns nil while the stream runs.
func (s *Stream) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close stops the stream, closes its socket and waits until it has ended.
func (s *Stream) Close() {
	s.cancel()
	<-s.done
}

// Stats returns the stream's counters.
func (s *Stream) Stats() StreamStats {
	return StreamStats{Connects: s.connects.Load(), Unknown: s.unknown.Load(), Malformed: s.malformed.Load()}
}

func (s *Stream) run(ctx context.Context) {
	// Deferred calls run last-first: done closes before events, so a consumer that sees the
	// events channel closed always finds Err set.
	defer close(s.events)
	defer close(s.done)
	defer s.cancel()
	attempt := 0 // failures in a row
	for {
		if attempt > 0 {
			t := time.NewTimer(backoffDelay(attempt, s.opts.MinBackoff, s.opts.MaxBackoff, s.rng))
			select {
			case <-ctx.Done():
				t.Stop()
				s.err = ctx.Err()
				return
			case <-t.C:
			}
		}
		if err := ctx.Err(); err != nil {
			s.err = err
			return
		}
		frames, err := s.connectOnce(ctx)
		if errors.Is(err, ErrUnauthorized) {
			s.err = err
			return
		}
		if frames > 0 {
			attempt = 1
		} else {
			attempt++
		}
	}
}

// backoffDelay returns the wait before reconnect attempt n (n ≥ 1): min·2^(n-1) capped at
// max, with equal jitter (uniform in [d/2, d]).
func backoffDelay(n int, minD, maxD time.Duration, rng *rand.Rand) time.Duration {
	d := minD
	for i := 1; i < n && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	half := d / 2
	return half + time.Duration(rng.Int64N(int64(d-half)+1))
}

// connectOnce opens one socket and reads it until it closes. It returns the number of data
// frames read and an error matching ErrUnauthorized on an authentication failure.
func (s *Stream) connectOnce(ctx context.Context) (uint64, error) {
	h := &streamHandler{s: s, ctx: ctx}
	addr, since := s.url, ""
	if !s.opts.NoResume {
		since = s.resume.since()
	}
	if since != "" {
		addr = withQuery(addr, "since="+since)
	}
	hdr := http.Header{}
	if key := s.c.APIKey(); key != "" {
		hdr.Set(APIKeyHeader, key)
	}
	if s.opts.Ticket {
		var err error
		if addr, err = s.ticketed(ctx, addr, hdr); err != nil {
			return 0, fmt.Errorf("client: stream: ticket: %w", err)
		}
	}
	conn, resp, err := gws.NewClient(h, &gws.ClientOption{
		Addr:               addr,
		RequestHeader:      hdr,
		HandshakeTimeout:   s.opts.HandshakeTimeout,
		ReadMaxPayloadSize: s.opts.MaxFrameBytes,
		TlsConfig:          s.opts.TLSConfig,
		NewDialer: func() (gws.Dialer, error) {
			return ctxDialer{ctx: ctx, d: net.Dialer{Timeout: s.opts.HandshakeTimeout}}, nil
		},
	})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return 0, fmt.Errorf("client: stream: upgrade answered %d: %w", resp.StatusCode, ErrUnauthorized)
		}
		return 0, fmt.Errorf("client: stream: connect: %w", err)
	}
	n := s.connects.Add(1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			_ = conn.WriteClose(1000, nil)
		case <-stop:
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout))
	conn1 := Connected{Reconnect: n > 1, Connects: n}
	if since != "" {
		conn1.Resume, conn1.Since = true, s.resume.last
	}
	payload, _ := json.Marshal(conn1)
	h.deliver(Event{Type: EventConnected, Payload: payload})
	conn.ReadLoop()
	close(stop)
	wg.Wait()
	var ce *gws.CloseError
	if errors.As(h.closeErr, &ce) && ce.Code == CloseUnauthorized {
		return h.frames, fmt.Errorf("client: stream: closed with code %d (%s): %w", ce.Code, ce.Reason, ErrUnauthorized)
	}
	return h.frames, h.closeErr
}

// ctxDialer dials with the stream's context, so Close interrupts a dial.
type ctxDialer struct {
	ctx context.Context
	d   net.Dialer
}

// Dial implements gws.Dialer.
func (d ctxDialer) Dial(network, addr string) (net.Conn, error) {
	return d.d.DialContext(d.ctx, network, addr)
}

// streamHandler is the gws event handler of one socket. gws calls it from the goroutine
// running ReadLoop only, so its fields need no lock.
type streamHandler struct {
	s        *Stream
	ctx      context.Context
	frames   uint64
	closeErr error
}

// deliver hands e to the consumer, waiting while the channel is full (backpressure) unless
// the stream is stopping.
func (h *streamHandler) deliver(e Event) {
	select {
	case h.s.events <- e:
	case <-h.ctx.Done():
	}
}

// OnOpen implements gws.Event.
func (h *streamHandler) OnOpen(*gws.Conn) {}

// OnClose implements gws.Event; it records why the socket closed.
func (h *streamHandler) OnClose(_ *gws.Conn, err error) { h.closeErr = err }

// OnPing implements gws.Event: it answers with a pong echoing the payload.
func (h *streamHandler) OnPing(c *gws.Conn, payload []byte) {
	_ = c.WritePong(payload)
	_ = c.SetReadDeadline(time.Now().Add(h.s.opts.IdleTimeout))
}

// OnPong implements gws.Event.
func (h *streamHandler) OnPong(c *gws.Conn, _ []byte) {
	_ = c.SetReadDeadline(time.Now().Add(h.s.opts.IdleTimeout))
}

// OnMessage implements gws.Event: it decodes the frame, skips (and counts) unknown and
// malformed ones, and delivers the rest.
func (h *streamHandler) OnMessage(c *gws.Conn, m *gws.Message) {
	defer m.Close()
	h.frames++
	ev, ok := h.s.parse(m.Bytes())
	if ok && h.s.resume.track(ev) {
		h.deliver(ev)
	}
	_ = c.SetReadDeadline(time.Now().Add(h.s.opts.IdleTimeout))
}

// parse decodes one frame. Unknown types and malformed frames are counted and skipped; a
// known type must carry a payload that decodes as that type's. The synthetic
// EventConnected type is refused from the wire.
func (s *Stream) parse(data []byte) (Event, bool) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil || ev.Type == "" {
		s.malformed.Add(1)
		return Event{}, false
	}
	p := newPayload(ev.Type)
	if p == nil || ev.Type == EventConnected {
		s.unknown.Add(1)
		return Event{}, false
	}
	if err := decodePayload(ev.Payload, p); err != nil {
		s.malformed.Add(1)
		return Event{}, false
	}
	return ev, true
}
