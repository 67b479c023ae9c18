package transport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/deskco/rfqdesk/machine"
)

// errorBody is the error body of SPEC.md: {error, code?}.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

// writeJSON writes status and the JSON of body (no body for 204).
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, body any) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		// A reply the desk built but that cannot be encoded is a bug, never the client's.
		s.log.Error("encode reply", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal error"}`)
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes the error body with status and an optional stable code.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	s.writeJSON(w, r, status, errorBody{Error: msg, Code: code})
}

// writeWire writes a refusal of the transport's own checks; on a keyed route an unknown
// key is answered 401 instead (authfirst.go).
func (s *Server) writeWire(w http.ResponseWriter, r *http.Request, e *wireError) {
	if s.refusedKey(w, r) {
		return
	}
	s.writeError(w, r, e.status, "", e.msg)
}

// writeReply writes the desk's reply: a refusal as {error, code?} with its status, else the
// body with the reply's status (200 when unset; 204 without a body).
func (s *Server) writeReply(w http.ResponseWriter, r *http.Request, rep machine.Reply) {
	if rep.Replayed {
		w.Header().Set(HeaderIdempotentReplayed, "true")
	}
	if rep.Err != nil {
		status := rep.Err.Status
		if status < 400 || status > 599 {
			status = rep.Status
		}
		if status < 400 || status > 599 {
			s.log.Error("desk refusal without an error status", "path", r.URL.Path, "err", rep.Err)
			status = http.StatusInternalServerError
		}
		if status >= 500 {
			s.log.Warn("desk refused with a server error", "id", requestIDOf(w), "method", r.Method, "path", r.URL.Path, "status", status, "err", rep.Err.Message)
		}
		s.writeError(w, r, status, rep.Err.Code, rep.Err.Message)
		return
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	s.writeJSON(w, r, status, rep.Body)
}

// writeDeskFailure answers a request the desk could not answer (stopped, overloaded, the
// request's time ran out): 503 RETRY_LATER, as SPEC.md's "write the desk could not persist".
func (s *Server) writeDeskFailure(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Warn("desk call failed", "id", requestIDOf(w), "method", r.Method, "path", r.URL.Path, "err", err)
	s.writeError(w, r, http.StatusServiceUnavailable, machine.CodeRetryLater, "the desk could not answer; retry with backoff")
}

// statusWriter records the status and route of a request for the log line and the counters.
type statusWriter struct {
	http.ResponseWriter
	status    int
	route     string
	requestID string
	keyHash   string // the caller's key hash on a keyed route (authfirst.go)
	hijacked  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Hijack lets the stream upgrade take the connection over.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be hijacked")
	}
	c, rw, err := hj.Hijack()
	if err == nil {
		w.hijacked = true
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// setRoute names the matched route on the request's statusWriter.
func setRoute(w http.ResponseWriter, route string) {
	if sw, ok := w.(*statusWriter); ok {
		sw.route = route
	}
}

// panicValue renders a recovered panic for the log (never for the client).
func panicValue(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}
