package transport

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
)

// RequestIDHeader carries a request's id: taken from the request when the client sent a
// sane one (see SaneRequestID), made by the server otherwise, and echoed in every answer.
const RequestIDHeader = "X-Request-Id"

// MaxRequestIDLen bounds a client's request id; a longer one is replaced.
const MaxRequestIDLen = 64

// HealthRoute is the route of the public liveness probe, which needs no key.
const HealthRoute = "GET /healthz"

// RequestObserver hears of every answered request: its route (the registered pattern, or
// NotFoundRoute / MethodNotAllowedRoute, never the raw path), its status and how long it
// took. It is called on the request's goroutine and must be quick and safe for concurrent use.
type RequestObserver func(route string, status int, took time.Duration)

// SaneRequestID reports whether a client's request id may be taken as is: 1 to
// MaxRequestIDLen characters among letters, digits and - _ . : (nothing a log line or a
// header could be confused by).
func SaneRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

// requestID is the id of r: the client's when sane, else 16 random hex digits (unique, not
// secret; crypto/rand never fails since Go 1.24, and the options' Rand is left to the keys).
func requestID(r *http.Request) string {
	if id := r.Header.Get(RequestIDHeader); SaneRequestID(id) {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stampRequestID gives the request its id: echoed in the answer's header and kept on the
// request's statusWriter for the log lines about it (no copy of the request is made).
func stampRequestID(sw *statusWriter, r *http.Request) string {
	sw.requestID = requestID(r)
	sw.Header().Set(RequestIDHeader, sw.requestID)
	return sw.requestID
}

// requestIDOf is the id of the request answered through w ("" when w is not the server's).
func requestIDOf(w http.ResponseWriter) string {
	if sw, ok := w.(*statusWriter); ok {
		return sw.requestID
	}
	return ""
}

// healthz answers the public liveness probe: 200 {"status":"ok"} without a key and without
// a desk call, so that a client waiting for the desk to come up (deskctl wait) is neither an
// authentication failure nor a load on the loop.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ string) {
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

// PartiesOnline is the number of parties with at least one stream socket bound.
func (h *Hub) PartiesOnline() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.byParty)
}
