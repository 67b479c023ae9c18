package transport

import (
	"net/http"
	"strings"

	"github.com/deskco/rfqdesk/machine"
	"github.com/julienschmidt/httprouter"
	"github.com/lxzan/gws"
)

// streamReadMax bounds what a client may send on the stream: nothing but pongs (and
// perhaps pings), so 4 KiB is generous.
const streamReadMax = 4 << 10

// sessionKey stores the *socket in the gws session.
const sessionKey = "socket"

// upgrader builds the gws upgrader of the stream: recovery on, parallel processing off
// (it reorders messages), a small read bound.
func (h *Hub) upgrader() *gws.Upgrader {
	return gws.NewUpgrader(streamEvents{h: h}, &gws.ServerOption{
		Recovery:           gws.Recovery,
		ParallelEnabled:    false,
		ReadMaxPayloadSize: streamReadMax,
		CheckUtf8Enabled:   true,
		HandshakeTimeout:   h.cfg.writeTimeout,
		Logger:             gwsLogger{h: h},
	})
}

// stream is GET /maker/stream. The key is checked after the handshake, so that a missing
// or unknown key is a 4401 close (gws's Authorize could only answer HTTP 400): a missing
// key never reaches the desk; an unknown one is reported with OpenSocket and the desk
// answers with a 4401 close through Deliver.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ string) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.writeError(w, r, http.StatusBadRequest, "", "this endpoint is a WebSocket: send an upgrade request")
		return
	}
	cod, err := cancelOnDisconnect(r) // before capacity: a bad request is never worth a retry
	if err != nil {
		s.writeError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	resume, since, err := streamSince(r)
	if err != nil {
		s.writeError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	ticketHash, err := streamTicketHash(r)
	if err != nil {
		s.writeError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	if !s.cors.upgradeAllowed(r) {
		s.writeError(w, r, http.StatusForbidden, "", "this Origin may not open the stream")
		return
	}
	if s.hub.full() {
		s.metrics.refused.Add(1)
		s.writeError(w, r, http.StatusServiceUnavailable, machine.CodeRetryLater, "no stream capacity right now; retry with backoff")
		return
	}
	key := r.Header.Get("X-API-Key")
	conn, err := s.upgrade.Upgrade(w, r)
	if err != nil {
		s.log.Debug("stream upgrade failed", "err", err)
		return // gws answered the handshake error itself
	}
	if key == "" && ticketHash == "" {
		s.metrics.refused.Add(1)
		_ = conn.SetWriteDeadline(deadlineIn(s.opts.StreamWriteTimeout))
		_ = conn.WriteClose(machine.CloseUnauthorized, []byte("missing X-API-Key header"))
		return
	}
	sock := &socket{
		id:         s.hub.nextID.Add(1),
		conn:       conn,
		keyHash:    HashKey(key),
		ticketHash: ticketHash,
		queue:      make(chan frame, s.opts.SendQueue),
		kill:       make(chan struct{}),

		cancelOnDisconnect: cod,
		resume:             resume,
		since:              since,
	}
	sock.alive.Store(true)
	if ok, code, reason := s.hub.register(sock); !ok {
		s.metrics.refused.Add(1)
		_ = conn.SetWriteDeadline(deadlineIn(s.opts.StreamWriteTimeout))
		_ = conn.WriteClose(code, []byte(reason))
		return
	}
	conn.Session().Store(sessionKey, sock)
	go s.hub.writer(sock)
	go conn.ReadLoop() // OnOpen reports the socket to the desk; OnClose unregisters it
}

// streamEvents is the gws event handler of the stream sockets.
type streamEvents struct{ h *Hub }

func socketOf(c *gws.Conn) *socket {
	v, ok := c.Session().Load(sessionKey)
	if !ok {
		return nil
	}
	s, _ := v.(*socket)
	return s
}

// OnOpen reports the socket to the desk, which answers through Deliver.
func (e streamEvents) OnOpen(c *gws.Conn) {
	s := socketOf(c)
	if s == nil {
		return
	}
	if err := e.h.openSocket(s); err != nil {
		e.h.cfg.log.Warn("report stream socket opened", "socket", s.id, "err", err)
		e.h.closeSocket(s, CloseInternal, "the desk could not register the socket; reconnect")
	}
}

// OnClose unregisters the socket and reports it to the desk.
func (e streamEvents) OnClose(c *gws.Conn, _ error) {
	s := socketOf(c)
	if s == nil {
		return
	}
	if e.h.unregister(s) {
		e.h.closeSocketOnDesk(s)
		e.h.wg.Done()
	}
}

// OnPing answers a client's ping through the socket's queue.
func (e streamEvents) OnPing(c *gws.Conn, payload []byte) {
	if s := socketOf(c); s != nil {
		e.h.pong(s, payload)
	}
}

// OnPong marks the socket alive for the heartbeat.
func (e streamEvents) OnPong(c *gws.Conn, _ []byte) {
	if s := socketOf(c); s != nil {
		s.alive.Store(true)
	}
}

// OnMessage ignores client messages (the stream is one-way) and releases their buffers.
func (e streamEvents) OnMessage(_ *gws.Conn, m *gws.Message) { _ = m.Close() }

// gwsLogger routes gws's own error logs to slog.
type gwsLogger struct{ h *Hub }

func (l gwsLogger) Error(v ...any) { l.h.cfg.log.Error("gws", "msg", v) }
