package transport

import (
	"net/http"

	"github.com/deskco/rfqdesk/machine"
)

// Authenticate first: on a keyed route an unknown API key is 401 whatever else is wrong
// with the request (a malformed body, a bad path parameter or query). The desk
// authenticates every keyed command and query before it looks at anything else, so a
// request that passes the transport's own checks costs no extra call; only when the
// transport is about to refuse a keyed request does it first ask the desk whether the key
// is known, and answers the desk's 401 if it is not. wrap records the key hash on the
// request's statusWriter and writeWire consults it, so every keyed route, present or
// future, is covered without each handler having to remember.

// authQuery is the query that asks the desk who a key is: any query answers 401 for an
// unknown key before it reads anything, and the maker status is among the cheapest.
var authQuery = machine.QMakerStatus{}

// setKeyHash records the caller's key hash on the request's statusWriter.
func setKeyHash(w http.ResponseWriter, keyHash string) {
	if sw, ok := w.(*statusWriter); ok {
		sw.keyHash = keyHash
	}
}

// refusedKey answers a keyed request whose key the desk does not know with the desk's 401,
// or 503 when the desk cannot say; true when it has answered. It is called only before a
// refusal of the transport's own checks.
func (s *Server) refusedKey(w http.ResponseWriter, r *http.Request) bool {
	sw, ok := w.(*statusWriter)
	if !ok || sw.keyHash == "" {
		return false
	}
	ctx, cancel := s.withTimeout(r)
	defer cancel()
	rep, err := s.desk.Read(ctx, sw.keyHash, authQuery)
	if err != nil {
		s.writeDeskFailure(w, r, err)
		return true
	}
	if rep.Status != http.StatusUnauthorized && (rep.Err == nil || rep.Err.Status != http.StatusUnauthorized) {
		return false
	}
	s.writeReply(w, r, rep)
	return true
}
