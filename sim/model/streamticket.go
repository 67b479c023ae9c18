package model

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Stream tickets (docs/api.md, "Browser access"): POST /maker/stream/ticket answers 200
// {ticket, expiresAt} with expiresAt 30 s after the request; the ticket (the model sees its
// hash) opens one socket as its key's party; a used, expired or unknown one is closed 4401
// as an unknown key; a rotation of the key voids its tickets. A party holds at most 16
// unredeemed tickets (a new one evicts its oldest), the desk 4,096 (then 503 RETRY_LATER,
// after the expired ones are pruned).

// The documented numbers.
const (
	ticketTTL           = 30 * time.Second
	ticketsPerParty     = 16
	ticketsTotal        = 4096
	ticketHashHexDigits = 64
)

// Ticket is an unredeemed stream ticket, by its hash.
type Ticket struct {
	Hash    string    `json:"hash"`
	Party   string    `json:"party"`
	KeyHash string    `json:"keyHash"`
	Expires time.Time `json:"expires"`
}

// validHash reports whether h is a key hash's form: 64 lowercase hex digits.
func validHash(h string) bool {
	if len(h) != ticketHashHexDigits {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// streamTicket judges POST /maker/stream/ticket by p.
func (s *step) streamTicket(p *Party, c machine.IssueStreamTicket) {
	m := s.m
	if !validHash(c.TicketHash) {
		s.immediate = one(400, "")
		return
	}
	if _, dup := m.st.Tickets[c.TicketHash]; dup {
		s.immediate = one(400, "")
		return
	}
	for _, h := range slices.Sorted(maps.Keys(m.st.Tickets)) {
		if t := m.st.Tickets[h]; !t.Expires.After(s.at) {
			delete(m.st.Tickets, h)
		}
	}
	var mine []*Ticket
	for _, t := range m.st.Tickets {
		if t.Party == p.ID {
			mine = append(mine, t)
		}
	}
	if len(mine) >= ticketsPerParty {
		oldest := slices.MinFunc(mine, func(x, y *Ticket) int {
			if c := x.Expires.Compare(y.Expires); c != 0 {
				return c
			}
			return cmp.Compare(x.Hash, y.Hash)
		})
		delete(m.st.Tickets, oldest.Hash)
	}
	if len(m.st.Tickets) >= ticketsTotal {
		s.immediate = one(503, machine.CodeRetryLater)
		return
	}
	if m.st.Tickets == nil {
		m.st.Tickets = map[string]*Ticket{}
	}
	expires := s.at.Add(ticketTTL)
	m.st.Tickets[c.TicketHash] = &Ticket{Hash: c.TicketHash, Party: p.ID, KeyHash: c.KeyHash, Expires: expires}
	s.immediate = &expect{alts: []sc{{200, ""}}, body: func(rep machine.Reply) string {
		dto, ok := rep.Body.(machine.StreamTicketDTO)
		switch {
		case !ok:
			return "the body is not {ticket, expiresAt}"
		case dto.Ticket != "":
			return "the desk's answer carries a ticket (only the transport draws it)"
		case !time.Time(dto.ExpiresAt).Equal(expires):
			return "expiresAt is " + machine.FormatTime(time.Time(dto.ExpiresAt)) + ", not 30 s after the request (" + machine.FormatTime(expires) + ")"
		}
		return ""
	}}
}

// redeemTicket consumes the ticket a socket opened with and returns the key hash it
// authenticates as: "" for a used, expired or unknown ticket (the socket is refused as an
// unknown key is).
func (m *Model) redeemTicket(hash string, at time.Time) string {
	t := m.st.Tickets[hash]
	if t == nil {
		return ""
	}
	delete(m.st.Tickets, hash)
	if !t.Expires.After(at) {
		return ""
	}
	return t.KeyHash
}

// voidTickets forgets a party's tickets at its key's rotation (every unredeemed ticket of a
// party was issued under its current key: a rotation voided the earlier ones).
func (m *Model) voidTickets(party string) {
	for _, h := range slices.Sorted(maps.Keys(m.st.Tickets)) {
		if m.st.Tickets[h].Party == party {
			delete(m.st.Tickets, h)
		}
	}
}
