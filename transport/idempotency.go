package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"

	"github.com/deskco/rfqdesk/machine"
)

// Idempotency-Key (docs/api.md, "Idempotency keys"): the transport checks the header's
// syntax after authentication, hashes the raw body and hands the command to the desk
// wrapped with the key, the method, the path and, for the unauthenticated registration
// calls, the caller's address group (the source the per-IP limits count, ipgroup.go). The
// desk keeps the records and answers a repeat (machine/idempotency.go); the transport
// marks a replayed answer with Idempotent-Replayed: true.

// Header names of the idempotency contract.
const (
	HeaderIdempotencyKey     = "Idempotency-Key"
	HeaderIdempotentReplayed = "Idempotent-Replayed"
)

// idemCtxKey carries a request's idempotency details from wrap to call.
type idemCtxKey struct{}

// idemInfo is what the desk's Idempotent input needs from the request.
type idemInfo struct {
	key, address, method, path, bodyHash string
}

// idempotency checks a write's Idempotency-Key and returns the request carrying its
// details (unchanged without the header); false when it has answered (400 for a malformed
// key, a repeated header or a route whose answer carries a new API key; an unknown API key
// is 401 first, authfirst.go).
func (s *Server) idempotency(w http.ResponseWriter, r *http.Request, rte route) (*http.Request, bool) {
	if r.Method != http.MethodPost && r.Method != http.MethodDelete {
		return r, true
	}
	vals := r.Header.Values(HeaderIdempotencyKey)
	if len(vals) == 0 {
		return r, true
	}
	switch {
	case len(vals) > 1:
		s.writeWire(w, r, badRequest("send one %s header, not %d", HeaderIdempotencyKey, len(vals)))
		return r, false
	case !machine.ValidIdempotencyKey(vals[0]):
		s.writeWire(w, r, badRequest("%s must be 1 to %d letters, digits, '_', '.', ':' or '-'", HeaderIdempotencyKey, machine.MaxIdempotencyKeyLen))
		return r, false
	case rte.path == "/maker/register/complete" || rte.path == "/maker/api-key/rotate":
		s.writeWire(w, r, badRequest("%s is not accepted here: the answer carries a new API key, which the desk never stores, so it cannot be answered again", HeaderIdempotencyKey))
		return r, false
	}
	info := &idemInfo{key: vals[0], method: r.Method, path: r.URL.Path}
	if !rte.auth {
		info.address = limitKey(clientIP(r))
	}
	// The body's SHA-256, over the bytes as sent; a body over the limit is the handler's
	// 413 as ever (the rest of it stays readable).
	sum := sha256.New()
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBodyBytes+1))
		if err != nil {
			s.writeWire(w, r, badRequest("cannot read the request body: %v", err))
			return r, false
		}
		sum.Write(b)
		r.Body = readCloser{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
	}
	info.bodyHash = hex.EncodeToString(sum.Sum(nil))
	return r.WithContext(context.WithValue(r.Context(), idemCtxKey{}, info)), true
}

// readCloser reads from one reader and closes another (the request's own body).
type readCloser struct {
	io.Reader
	io.Closer
}

// withIdempotency wraps a command with the request's Idempotency-Key, when it carried one.
func withIdempotency(r *http.Request, cmd machine.Command_) machine.Command_ {
	info, ok := r.Context().Value(idemCtxKey{}).(*idemInfo)
	if !ok {
		return cmd
	}
	return machine.Idempotent{Key: info.key, Address: info.address, Method: info.method, Path: info.path, BodyHash: info.bodyHash, Cmd: cmd}
}
