package transport

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/lxzan/gws"
)

// Close codes the transport sends besides the machine's (machine.CloseUnauthorized,
// machine.CloseRestart).
const (
	CloseGoingAway    = 1001 // the server shuts down
	ClosePolicy       = 1008 // too many sockets for the party, slow consumer, missed pong
	CloseInternal     = 1011 // the desk could not register the socket
	CloseTryAgain     = 1013 // too many sockets in total
	closeKillDeadline = time.Second
)

// hubConfig is what the hub needs from the server's options.
type hubConfig struct {
	desk         Desk
	log          *slog.Logger
	metrics      *metrics
	pingInterval time.Duration
	writeTimeout time.Duration
	sendQueue    int
	maxPerParty  int
	maxSockets   int
	opTimeout    time.Duration
}

// Hub routes the desk's stream outputs to sockets. Deliver is called from the desk loop and
// never blocks: it encodes each event once and enqueues the bytes into bounded per-socket
// queues, each drained by its socket's own writer goroutine.
type Hub struct {
	cfg    hubConfig
	nextID atomic.Uint64
	wg     sync.WaitGroup // one per registered socket, done at OnClose

	mu      sync.Mutex
	sockets map[uint64]*socket
	byParty map[string]map[uint64]*socket
	closed  bool
	stop    chan struct{}
}

// frame is one queued write: a data frame, a ping or pong, or a close.
type frame struct {
	op     gws.Opcode
	data   []byte // payload; the reason of a close
	code   uint16 // close code
	stream bool   // a stream event (counted as a frame sent)
	// batch, when set, are the events of one socket's connect answer (its snapshot, or a
	// resume's replay, and the frame that ends it), encoded and written in order by the
	// socket's writer as one queue entry: a replay of thousands of retained events is one
	// step of the bounded queue, not thousands, and its encoding does not hold up the desk
	// loop that calls Deliver (resume.go).
	batch []machine.Event
}

// socket is one stream connection. Fields after mu-guarded comment are guarded by Hub.mu.
type socket struct {
	id      uint64
	conn    *gws.Conn
	keyHash string
	// cancelOnDisconnect is the upgrade's ?cancelOnDisconnect=true (cancelondisconnect.go).
	cancelOnDisconnect bool
	// resume and since are the upgrade's ?since= (resume.go).
	resume bool
	since  uint64
	// ticketHash is the hash of the upgrade's ?ticket=, when it carried one instead of
	// a key (streamticket.go).
	ticketHash string
	queue      chan frame
	kill       chan struct{} // closed to make the writer close the socket now
	alive      atomic.Bool   // a pong (or the open) since the last ping

	// guarded by Hub.mu
	party      string
	closing    bool // a close is queued or the socket is being killed: nothing more is sent
	killed     bool
	killCode   uint16
	killReason string
}

func newHub(cfg hubConfig) *Hub {
	h := &Hub{
		cfg:     cfg,
		sockets: make(map[uint64]*socket),
		byParty: make(map[string]map[uint64]*socket),
		stop:    make(chan struct{}),
	}
	go h.heartbeat()
	return h
}

// Deliver hands the hub the socket outputs of one batch of desk outputs: Bindings first
// (they precede the events addressed to those sockets), then Events (Socket zero: every
// socket bound to Party; otherwise that socket only), then Closes. A `resync` event is
// followed by a 1012 close of the socket it went to. Deliver never blocks.
func (h *Hub) Deliver(out machine.Outputs) {
	if len(out.Bindings) == 0 && len(out.Events) == 0 && len(out.Closes) == 0 {
		return
	}
	encoded := make([][]byte, len(out.Events))
	for i, ev := range out.Events {
		if ev.Socket == 0 || ev.Type == machine.EvResync {
			encoded[i] = h.encode(ev)
		} // a socket's connect answer is encoded by its writer (writeBatch), off the loop
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range out.Bindings {
		h.bindLocked(b)
	}
	for i := 0; i < len(out.Events); i++ {
		ev := out.Events[i]
		if ev.Socket != 0 && ev.Type != machine.EvResync {
			// The frames addressed to one socket come together (a connect's answer): one
			// queue entry.
			j := i
			for j < len(out.Events) && out.Events[j].Socket == ev.Socket && out.Events[j].Party == ev.Party && out.Events[j].Type != machine.EvResync {
				j++
			}
			batch := out.Events[i:j:j]
			i = j - 1
			if s := h.sockets[ev.Socket]; s != nil && s.party == ev.Party && len(batch) > 0 {
				h.enqueueLocked(s, frame{op: gws.OpcodeText, batch: batch, stream: true})
			}
			continue
		}
		if encoded[i] == nil {
			continue
		}
		resync := ev.Type == machine.EvResync
		send := func(s *socket) {
			h.enqueueLocked(s, frame{op: gws.OpcodeText, data: encoded[i], stream: true})
			if resync {
				h.closeLocked(s, machine.CloseRestart, "resync: reconnect for a fresh snapshot")
			}
		}
		if ev.Socket != 0 {
			if s := h.sockets[ev.Socket]; s != nil && s.party == ev.Party {
				send(s)
			}
			continue
		}
		for _, s := range h.byParty[ev.Party] {
			send(s)
		}
	}
	for _, c := range out.Closes {
		if s := h.sockets[c.Socket]; s != nil {
			h.closeLocked(s, uint16(c.Code), c.Reason)
		}
	}
}

// Resync sends a `resync` frame to every socket and closes each with 1012, so that clients
// reconnect and consume a fresh snapshot (for example after the desk's state was reset).
func (h *Hub) Resync() {
	b := h.encode(machine.Event{Type: machine.EvResync, Payload: struct{}{}})
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.sockets {
		if s.party == "" {
			continue
		}
		h.enqueueLocked(s, frame{op: gws.OpcodeText, data: b, stream: true})
		h.closeLocked(s, machine.CloseRestart, "resync: reconnect for a fresh snapshot")
	}
}

// encode renders {type, payload, seq} once (seq only on a numbered event); a payload that cannot be encoded is a desk bug,
// logged and dropped.
func (h *Hub) encode(ev machine.Event) []byte {
	raw := ev.Raw
	if r, ok := ev.Payload.(json.RawMessage); ok && raw == nil {
		raw = r
	}
	if len(raw) > 0 {
		// The desk encoded the payload already (a numbered event, or a replayed one).
		typ, err := json.Marshal(ev.Type)
		if err != nil {
			h.cfg.log.Error("encode stream event", "type", ev.Type, "err", err)
			return nil
		}
		b := make([]byte, 0, len(raw)+len(typ)+48)
		b = append(append(append(b, `{"type":`...), typ...), `,"payload":`...)
		b = append(b, raw...)
		if ev.Seq != 0 {
			b = strconv.AppendUint(append(b, `,"seq":`...), ev.Seq, 10)
		}
		return append(b, '}')
	}
	payload := ev.Payload
	if payload == nil {
		payload = struct{}{}
	}
	b, err := json.Marshal(struct {
		Type    string `json:"type"`
		Payload any    `json:"payload"`
		Seq     uint64 `json:"seq,omitempty"`
	}{ev.Type, payload, ev.Seq})
	if err != nil {
		h.cfg.log.Error("encode stream event", "type", ev.Type, "err", err)
		return nil
	}
	return b
}

// bindLocked attaches a socket to its party, or closes it past the per-party bound.
func (h *Hub) bindLocked(b machine.SocketBinding) {
	s := h.sockets[b.Socket]
	if s == nil || s.closing || s.party != "" {
		return
	}
	if len(h.byParty[b.Party]) >= h.cfg.maxPerParty {
		h.cfg.metrics.refused.Add(1)
		h.closeLocked(s, ClosePolicy, "too many stream sockets for this party")
		return
	}
	s.party = b.Party
	m := h.byParty[b.Party]
	if m == nil {
		m = make(map[uint64]*socket)
		h.byParty[b.Party] = m
	}
	m[s.id] = s
}

// unbindLocked takes a socket out of its party's set: nothing more is routed to it.
func (h *Hub) unbindLocked(s *socket) {
	if m := h.byParty[s.party]; m != nil {
		delete(m, s.id)
		if len(m) == 0 {
			delete(h.byParty, s.party)
		}
	}
}

// enqueueLocked queues a frame without blocking; a full queue closes the socket as a slow
// consumer.
func (h *Hub) enqueueLocked(s *socket, f frame) {
	if s.closing {
		return
	}
	select {
	case s.queue <- f:
	default:
		h.cfg.metrics.slowDropped.Add(1)
		h.cfg.log.Warn("stream socket dropped: slow consumer", "socket", s.id)
		h.killLocked(s, ClosePolicy, "slow consumer: send queue full", true)
	}
}

// closeLocked queues a close frame after everything already queued.
func (h *Hub) closeLocked(s *socket, code uint16, reason string) {
	if s.closing {
		return
	}
	select {
	case s.queue <- frame{op: gws.OpcodeCloseConnection, code: code, data: []byte(reason)}:
		s.closing = true
		h.unbindLocked(s)
	default:
		h.killLocked(s, code, reason, true)
	}
}

// killLocked makes the writer close the socket at once, ahead of its queue. urgent also
// cuts a write in progress (the peer is not reading), so the close frame may not arrive.
func (h *Hub) killLocked(s *socket, code uint16, reason string, urgent bool) {
	s.closing = true
	h.unbindLocked(s)
	if s.killed {
		return
	}
	s.killed = true
	s.killCode, s.killReason = code, reason
	close(s.kill)
	if urgent {
		_ = s.conn.SetWriteDeadline(time.Now())
	}
}

// register adds a socket whose handshake finished; false when the hub is closed or full
// (the caller closes the connection).
func (h *Hub) register(s *socket) (ok bool, code uint16, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false, CloseGoingAway, "server shutting down"
	}
	if len(h.sockets) >= h.cfg.maxSockets {
		return false, CloseTryAgain, "too many stream sockets; retry later"
	}
	h.sockets[s.id] = s
	h.wg.Add(1)
	h.cfg.metrics.socketsOpen.Add(1)
	h.cfg.metrics.socketsOpened.Add(1)
	return true, 0, ""
}

// full reports whether a new socket would be refused (checked before the upgrade).
func (h *Hub) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed || len(h.sockets) >= h.cfg.maxSockets
}

// unregister forgets a socket once its read loop ended and stops its writer; it reports
// whether the socket was registered (the caller then reports it to the desk and calls
// h.wg.Done, so that Shutdown waits for the desk to hear of every close).
func (h *Hub) unregister(s *socket) bool {
	h.mu.Lock()
	if _, ok := h.sockets[s.id]; !ok {
		h.mu.Unlock()
		return false
	}
	delete(h.sockets, s.id)
	h.unbindLocked(s)
	s.closing = true
	if !s.killed {
		s.killed = true
		close(s.kill)
	}
	h.mu.Unlock()
	h.cfg.metrics.socketsOpen.Add(-1)
	return true
}

// writer drains a socket's queue; it ends when the socket is closed or killed.
func (h *Hub) writer(s *socket) {
	var carried *frame // taken from the queue while coalescing, and written next
	for {
		select {
		case <-s.kill:
			h.writeKill(s)
			return
		default:
		}
		next := s.queue
		if carried != nil {
			next = carriedQueue(carried)
			carried = nil
		}
		select {
		case <-s.kill:
			h.writeKill(s)
			return
		case f := <-next:
			_ = s.conn.SetWriteDeadline(time.Now().Add(h.cfg.writeTimeout))
			select {
			case <-s.kill: // an urgent kill may have cut the deadline just before ours
				h.writeKill(s)
				return
			default:
			}
			if f.op == gws.OpcodeCloseConnection {
				_ = s.conn.WriteClose(f.code, f.data)
				return
			}
			if f.batch != nil {
				if !h.writeBatch(s, f.batch) {
					return
				}
				continue
			}
			if coalescable(f) && len(s.queue) > 0 {
				var ok bool
				if carried, ok = h.writeFrames(s, f); !ok {
					return
				}
				continue
			}
			if err := s.conn.WriteMessage(f.op, f.data); err != nil {
				// gws closed the connection; the read loop ends and OnClose unregisters.
				return
			}
			if f.stream {
				h.cfg.metrics.framesSent.Add(1)
				h.cfg.metrics.streamWrites.Add(1)
			}
		}
	}
}

// batchChunk bounds the bytes of whole frames a batch writes with one call.
const batchChunk = 64 << 10

// writeBatch writes a batch's frames in order, whole WebSocket frames coalesced into
// writes of up to batchChunk bytes, each with the write deadline; it reports false when
// the socket must stop (killed, or a write failed: the connection is then closed, so its
// read loop ends and OnClose unregisters it).
//
// One write per frame cost a resume of 5,000 events 5,000 system calls and as many TCP
// segments (about half its time, BenchmarkStreamResume). The frames are built here as
// gws would build them for this server: final, text, unmasked, uncompressed (the upgrader
// enables no compression). A net.Conn write is whole with respect to other writes on the
// connection (gws's own, such as the answer to a client's close), so frames never
// interleave.
func (h *Hub) writeBatch(s *socket, batch []machine.Event) bool {
	buf := make([]byte, 0, batchChunk+1024)
	flush := func() bool {
		if len(buf) == 0 {
			return true
		}
		// 0 frames: each was counted in framesSent as it was framed.
		if !h.writeJoined(s, buf, 0) {
			return false
		}
		buf = buf[:0]
		return true
	}
	for _, ev := range batch {
		b := h.encode(ev)
		if b == nil {
			continue
		}
		if len(buf) > 0 && len(buf)+len(b)+10 > batchChunk && !flush() {
			return false
		}
		buf = appendTextFrame(buf, b)
		h.cfg.metrics.framesSent.Add(1)
	}
	return flush()
}

// appendTextFrame appends one final, unmasked text frame (RFC 6455 section 5.2) holding
// payload.
func appendTextFrame(b, payload []byte) []byte {
	const finText = 0x81
	switch n := len(payload); {
	case n < 126:
		b = append(b, finText, byte(n))
	case n <= 0xFFFF:
		b = append(b, finText, 126, byte(n>>8), byte(n))
	default:
		b = append(b, finText, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// writeKill sends the kill's close frame with a short deadline (a no-op on a socket that
// is already closed) and closes the connection.
func (h *Hub) writeKill(s *socket) {
	h.mu.Lock()
	code, reason := s.killCode, s.killReason
	h.mu.Unlock()
	if code == 0 {
		_ = s.conn.NetConn().Close()
		return
	}
	deadline := time.Now().Add(min(h.cfg.writeTimeout, closeKillDeadline))
	_ = s.conn.SetWriteDeadline(deadline)
	_ = s.conn.WriteClose(code, []byte(reason))
	_ = s.conn.NetConn().Close()
}

// heartbeat pings every socket each interval with one ticker, and drops a socket that
// did not answer the previous ping.
func (h *Hub) heartbeat() {
	t := time.NewTicker(h.cfg.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		for _, s := range h.sockets {
			if s.closing {
				continue
			}
			if !s.alive.Swap(false) {
				h.cfg.metrics.pongTimeouts.Add(1)
				h.cfg.log.Debug("stream socket dropped: missed pong", "socket", s.id)
				h.killLocked(s, ClosePolicy, "missed pong", false)
				continue
			}
			h.enqueueLocked(s, frame{op: gws.OpcodePing})
		}
		h.mu.Unlock()
	}
}

// pong queues the answer to a client's ping.
func (h *Hub) pong(s *socket, payload []byte) {
	h.mu.Lock()
	h.enqueueLocked(s, frame{op: gws.OpcodePong, data: append([]byte(nil), payload...)})
	h.mu.Unlock()
}

// closeSocket queues a close for one socket (used by the stream handler).
func (h *Hub) closeSocket(s *socket, code uint16, reason string) {
	h.mu.Lock()
	h.closeLocked(s, code, reason)
	h.mu.Unlock()
}

// Shutdown closes every socket with 1001 and refuses new ones, then waits until every
// socket is gone or ctx is done (then the rest are cut).
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.stop)
	}
	for _, s := range h.sockets {
		h.closeLocked(s, CloseGoingAway, "server shutting down")
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	h.mu.Lock()
	for _, s := range h.sockets {
		_ = s.conn.NetConn().Close()
	}
	h.mu.Unlock()
	return ctx.Err()
}

// openSocket and closeSocketOnDesk report a socket's life to the desk with a bounded wait.
func (h *Hub) openSocket(s *socket) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.opTimeout)
	defer cancel()
	if s.ticketHash != "" {
		t, ok := h.cfg.desk.(TicketSocketOpener)
		if !ok {
			return errNoTicket
		}
		return t.OpenTicketSocket(ctx, s.id, s.ticketHash, s.cancelOnDisconnect, s.resume, s.since)
	}
	if s.resume {
		r, ok := h.cfg.desk.(Resumer)
		if !ok {
			return errNoResume
		}
		return r.ResumeSocket(ctx, s.id, s.keyHash, s.cancelOnDisconnect, s.since)
	}
	return h.cfg.desk.OpenSocket(ctx, s.id, s.keyHash, s.cancelOnDisconnect)
}

// closeSocketOnDesk does not give up while the hub runs: a close the desk never hears of
// would leave a ghost socket, the party online and its cancel-on-disconnect never applied.
// It tries again, at most every closeRetryMax, until the desk takes it or the hub shuts
// down (then the desk is stopping too, and its restart closes every socket). A close the
// desk got although the wait ran out and that is sent again closes an unknown socket: a
// no-op.
func (h *Hub) closeSocketOnDesk(s *socket) {
	wait := closeRetryMin
	for {
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.opTimeout)
		err := h.cfg.desk.CloseSocket(ctx, s.id)
		cancel()
		if err == nil {
			return
		}
		h.cfg.log.Warn("report stream socket closed; trying again", "socket", s.id, "err", err, "in", wait)
		select {
		case <-h.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, closeRetryMax)
	}
}

// closeRetryMin and closeRetryMax bound the wait between two reports of a socket's close.
const (
	closeRetryMin = 50 * time.Millisecond
	closeRetryMax = time.Second
)
