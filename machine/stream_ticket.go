package machine

import "time"

// Stream tickets (docs/stream.md, "Browser access").
//
// A browser's native WebSocket cannot send X-API-Key. POST /maker/stream/ticket (keyed)
// issues a one-shot ticket: the transport draws it from crypto/rand, hashes it like an API
// key, and journals IssueStreamTicket carrying only the hash; the desk records the hash with
// the caller's party and key hash and an expiry StreamTicketTTL after the input's time, and
// answers StreamTicketDTO (the transport fills in the ticket itself, which the desk never
// sees). GET /maker/stream?ticket=T reports the socket with the ticket's hash instead of a
// key hash (SocketOpened.TicketHash): the desk consumes the ticket in that same input,
// whatever the outcome, and binds the socket to the ticket's key, so that a key rotation
// closes it with 4401 as it closes a keyed socket. A used, expired or unknown ticket gets
// exactly what an unknown key gets: the 4401 close. A rotation of the key voids the
// tickets issued under it.
//
// The tickets are state: they are in the snapshot (version 4), so a restart keeps them
// for the rest of their 30 seconds and a replay redeems them as the live desk did.
//
// The table is bounded: a party holds at most MaxStreamTicketsPerParty tickets (a new one
// evicts its party's oldest), the desk MaxStreamTickets (beyond it, after the expired ones
// are pruned, a new ticket is refused 503 RETRY_LATER). Expired tickets are pruned, by the
// input's time, whenever a ticket is issued.

// StreamTicketTTL is how long a stream ticket may be redeemed after it was issued.
const StreamTicketTTL = 30 * time.Second

// MaxStreamTicketsPerParty bounds the unexpired tickets one party holds; a new ticket
// beyond it evicts the party's oldest.
const MaxStreamTicketsPerParty = 16

// MaxStreamTickets bounds the desk's whole ticket table; a new ticket beyond it is refused
// 503 RETRY_LATER (the table frees itself within StreamTicketTTL).
const MaxStreamTickets = 4096

// IssueStreamTicket is POST /maker/stream/ticket. TicketHash is the hash (HashKey's form:
// 64 lowercase hex digits) of the ticket the transport drew and will hand out if this
// succeeds.
type IssueStreamTicket struct {
	Req
	TicketHash string `json:"ticketHash"`
}

// StreamTicket is an issued, unredeemed stream ticket, as the desk keeps it: only its hash.
type StreamTicket struct {
	Hash      string    `json:"hash"`
	PartyID   string    `json:"partyId"`
	KeyHash   string    `json:"keyHash"` // the key it was issued under
	ExpiresAt time.Time `json:"expiresAt"`
}

// StreamTicketDTO answers POST /maker/stream/ticket; the transport fills in Ticket.
type StreamTicketDTO struct {
	Ticket    string   `json:"ticket"`
	ExpiresAt WireTime `json:"expiresAt"`
}

var (
	errTicketHash     = badRequest("missing ticket hash")
	errTicketsFull    = unavailable(CodeRetryLater, "too many stream tickets outstanding; retry later")
	errIdemTicket     = badRequest("Idempotency-Key is not accepted here: the answer carries a new stream ticket, which the desk never stores, so it cannot be answered again")
	errTicketHashUsed = badRequest("this ticket hash was already issued; ask again")
)

func init() { registerFlow(IssueStreamTicket{}) }

// Kind names the input in the journal.
func (IssueStreamTicket) Kind() string { return "stream.ticket" }

func (c IssueStreamTicket) encodeBody(e *encoder) {
	e.Str(c.KeyHash)
	e.Str(c.TicketHash)
}

func (IssueStreamTicket) decodeBody(d *decoder) Input {
	return IssueStreamTicket{Req: Req{KeyHash: d.Str()}, TicketHash: d.Str()}
}

// validTicketHash reports whether h has the form of a hash of HashKey: 64 lowercase hex
// digits.
func validTicketHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (c IssueStreamTicket) run(a *applier, p *Party) {
	if !validTicketHash(c.TicketHash) {
		a.refuse(errTicketHash)
		return
	}
	if _, dup := a.d.StreamTickets[c.TicketHash]; dup {
		a.refuse(errTicketHashUsed) // 256 random bits: never in practice
		return
	}
	a.pruneStreamTickets()
	if mine := a.d.partyTickets(p.ID); len(mine) >= MaxStreamTicketsPerParty {
		delete(a.d.StreamTickets, mine[0].Hash) // the party's oldest
	}
	if len(a.d.StreamTickets) >= MaxStreamTickets {
		a.refuse(errTicketsFull)
		return
	}
	if a.d.StreamTickets == nil {
		a.d.StreamTickets = map[string]*StreamTicket{}
	}
	t := &StreamTicket{Hash: c.TicketHash, PartyID: p.ID, KeyHash: p.KeyHash, ExpiresAt: a.d.Now.Add(StreamTicketTTL)}
	a.d.StreamTickets[t.Hash] = t
	a.reply(200, StreamTicketDTO{ExpiresAt: WireTime(t.ExpiresAt)})
}

// pruneStreamTickets forgets the tickets expired by the input's time.
func (a *applier) pruneStreamTickets() {
	for h, t := range a.d.StreamTickets { // deleting only: the order decides nothing
		if !t.ExpiresAt.After(a.d.Now) {
			delete(a.d.StreamTickets, h)
		}
	}
}

// partyTickets returns a party's tickets, oldest first (by expiry, then hash).
func (d *Desk) partyTickets(party string) []*StreamTicket {
	var out []*StreamTicket
	for _, t := range d.StreamTickets {
		if t.PartyID == party {
			out = append(out, t)
		}
	}
	oldestFirst(out, func(t *StreamTicket) time.Time { return t.ExpiresAt }, func(t *StreamTicket) string { return t.Hash })
	return out
}

// redeemStreamTicket consumes the ticket with this hash, whatever the outcome, and returns
// the key hash it was issued under, or "" when it is unknown, used or expired (the socket
// is then refused as an unknown key is).
func (a *applier) redeemStreamTicket(hash string) string {
	t, ok := a.d.StreamTickets[hash]
	if !ok {
		return ""
	}
	delete(a.d.StreamTickets, hash)
	if !t.ExpiresAt.After(a.d.Now) {
		return ""
	}
	return t.KeyHash
}

// voidStreamTickets forgets every ticket issued under a key (its rotation).
func (a *applier) voidStreamTickets(keyHash string) {
	for h, t := range a.d.StreamTickets { // deleting only: the order decides nothing
		if t.KeyHash == keyHash {
			delete(a.d.StreamTickets, h)
		}
	}
}

// writeStreamTickets writes the ticket table (since snapshot version 4).
func writeStreamTickets(e *encoder, m map[string]*StreamTicket) {
	writePtrMap(e, m, func(e *encoder, t *StreamTicket) {
		e.Str(t.Hash)
		e.Str(t.PartyID)
		e.Str(t.KeyHash)
		e.Time(t.ExpiresAt)
	})
}

// readStreamTickets reads what writeStreamTickets wrote; an empty table is nil.
func readStreamTickets(d *decoder) map[string]*StreamTicket {
	m := readMap(d, (*decoder).Str, func(d *decoder) *StreamTicket {
		return &StreamTicket{Hash: d.Str(), PartyID: d.Str(), KeyHash: d.Str(), ExpiresAt: d.Time()}
	})
	if len(m) == 0 {
		return nil
	}
	return m
}
