package transport

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/deskco/rfqdesk/machine"
	"github.com/julienschmidt/httprouter"
)

// Stream tickets (docs/stream.md, "Browser access"): a browser's native WebSocket cannot
// send X-API-Key, so POST /maker/stream/ticket (keyed) hands out a one-shot ticket and
// GET /maker/stream?ticket=T authenticates as the ticket's key. The transport draws the
// ticket from crypto/rand and hands the desk only its hash (HashKey), as it does for API
// keys; the desk records it, redeems it once and voids it at the key's rotation
// (machine/stream_ticket.go).

// StreamTicketPrefix is the fixed prefix of every stream ticket the desk hands out.
const StreamTicketPrefix = "st_"

// ticketParam is the stream upgrade's query parameter carrying a ticket.
const ticketParam = "ticket"

// TicketSocketOpener is what a Desk implements to open a stream socket authenticated by a
// ticket: OpenSocket's report with the ticket's hash instead of a key hash, and the
// upgrade's other options. The loop implements it.
type TicketSocketOpener interface {
	OpenTicketSocket(ctx context.Context, socket uint64, ticketHash string, cancelOnDisconnect, resume bool, since uint64) error
}

// errNoTicket is the answer of a desk that cannot open a socket with a ticket.
var errNoTicket = errors.New("this desk cannot open a stream with a ticket")

// newStreamTicket returns "st_" + base64url(32 random bytes, no padding).
func (s secrets) newStreamTicket() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("draw a stream ticket: %w", err)
	}
	return StreamTicketPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// streamTicket is POST /maker/stream/ticket: a fresh one-shot ticket for the caller's
// stream, valid machine.StreamTicketTTL. Its body is empty or {} (anything else is 400).
func (s *Server) streamTicket(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
	if !s.noBody(w, r) {
		return
	}
	callWithSecret(s, w, r, "stream ticket", s.secrets.newStreamTicket,
		func(hash string) machine.Command_ {
			return machine.IssueStreamTicket{Req: machine.Req{KeyHash: keyHash}, TicketHash: hash}
		},
		func(b *machine.StreamTicketDTO, ticket string) { b.Ticket = ticket })
}

// streamTicketHash reads ?ticket= of a stream upgrade: absent is none; given more than
// once, or together with an X-API-Key header, it is an error answered 400 before the
// upgrade (which credential would count is not guessed). Any value given once is hashed:
// an empty or malformed ticket is one the desk never issued, refused 4401 after the
// upgrade as an unknown key is.
func streamTicketHash(r *http.Request) (string, error) {
	vals, ok := r.URL.Query()[ticketParam]
	if !ok {
		return "", nil
	}
	if len(vals) != 1 {
		return "", fmt.Errorf("%s given %d times; give it once", ticketParam, len(vals))
	}
	if r.Header.Get("X-API-Key") != "" {
		return "", fmt.Errorf("give either the X-API-Key header or ?%s=, not both", ticketParam)
	}
	return HashKey(vals[0]), nil
}
