package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Stream tickets in the simulation (docs/api.md, "Browser access"): a connect in four of
// a registered actor opens its stream as a browser does, with a one-shot ticket from
// POST /maker/stream/ticket instead of the key. The actors also misuse tickets, as a
// hostile or confused client would: the ticket just used, again; a spare kept past its
// 30 s; another party's used one; a spare drawn before a key rotation, after it. Each
// misuse opens a socket of nobody's (the desk must close it 4401, and the model says so);
// these are the coverage goals.
const (
	covTicketStream  = "a stream opened with a ticket"
	covTicketUsed    = "a used ticket refused"
	covTicketExpired = "an expired ticket refused"
	covTicketRotated = "a rotation voided a ticket"
)

// ticketCoverage lists the situations in report order.
var ticketCoverage = []string{covTicketStream, covTicketUsed, covTicketExpired, covTicketRotated}

// ticketGoals are those a long run of several seeds must reach: every one.
func ticketGoals(runs int) []string {
	if runs < 2 {
		return nil
	}
	return ticketCoverage
}

// ticketTTL is the documented life of a ticket; ticketBookAge bounds what the sim
// remembers of one, and ticketUsedRing how many used ones it keeps for misuse.
const (
	ticketTTL      = 30 * time.Second
	ticketBookAge  = 2 * time.Minute
	ticketUsedRing = 32
)

// ticketState is an actor's side of the tickets: its generator (seeded apart, so that its
// other draws stay as they were) and a spare ticket kept for a misuse.
type ticketState struct {
	rng   *rand.Rand
	n     int    // numbers its tickets
	spare string // the hash of an issued ticket it keeps unredeemed, "" when none
}

// ticketBook is what the sim saw of the tickets, to name the coverage of a refusal.
type ticketBook struct {
	tickets map[string]*simTicket
	used    []string // hashes of redeemed tickets, newest last, at most ticketUsedRing
}

type simTicket struct {
	party   string
	issued  time.Time
	used    bool
	rotated bool
}

func (a *actor) ticketRand() *rand.Rand {
	if a.tk.rng == nil {
		a.tk.rng = rand.New(rand.NewPCG(uint64(a.idx)+0x71c, a.s.k.Seed))
	}
	return a.tk.rng
}

// newTicketHash is the hash of a fresh ticket, as the transport would draw it.
func (a *actor) newTicketHash() string {
	a.tk.n++
	return hashKey(fmt.Sprintf("st_sim-%d-%d-%x", a.idx, a.tk.n, a.ticketRand().Uint64()))
}

// ticketConnect opens the socket in with a ticket, one connect in four of a registered
// actor (not the house, whose key the desk holds); it reports whether it took the connect.
func (a *actor) ticketConnect(in machine.SocketOpened) bool {
	if a.role == roleHouse || a.s.liveness || a.ticketRand().IntN(4) != 0 {
		return false
	}
	id, hash := in.Socket, a.newTicketHash()
	a.sendRaw(machine.IssueStreamTicket{Req: machine.Req{KeyHash: a.keyHash}, TicketHash: hash}, func(rep machine.Reply) {
		if a.socket != id {
			return // a crash or a close came first
		}
		if rep.Err != nil {
			a.socket = 0 // connect again later
			return
		}
		in.KeyHash, in.TicketHash = "", hash
		a.notify(in, func() bool { return a.socket == id })
	})
	return true
}

// ticketMisuse sometimes follows a ticket's use (once the desk served it) with a misuse:
// the same ticket again, another party's used one, or a spare kept until it expired.
func (a *actor) ticketMisuse(hash string) {
	s, r := a.s, a.ticketRand()
	switch r.IntN(8) {
	case 0, 1:
		s.after(a.uniform(time.Millisecond, 5*time.Second), func() { a.ticketProbe(hash) })
	case 2:
		if n := len(s.tickets.used); n > 0 {
			other := s.tickets.used[r.IntN(n)]
			s.after(a.uniform(time.Millisecond, 2*time.Second), func() { a.ticketProbe(other) })
		}
	case 3:
		if a.tk.spare == "" {
			spare := a.newTicketHash()
			a.sendRaw(machine.IssueStreamTicket{Req: machine.Req{KeyHash: a.keyHash}, TicketHash: spare}, func(rep machine.Reply) {
				if rep.Err != nil || a.tk.spare != "" {
					return
				}
				a.tk.spare = spare
				s.after(a.uniform(ticketTTL+time.Second, ticketTTL+10*time.Second), func() {
					if a.tk.spare == spare {
						a.tk.spare = ""
						a.ticketProbe(spare)
					}
				})
			})
		}
	}
}

// ticketBeforeRotate draws a spare ticket as a rotation starts; ticketAfterRotate tries it
// once the rotation went through (the rotation voided it).
func (a *actor) ticketBeforeRotate() {
	if a.s.liveness || a.tk.spare != "" {
		return
	}
	spare := a.newTicketHash()
	a.sendRaw(machine.IssueStreamTicket{Req: machine.Req{KeyHash: a.keyHash}, TicketHash: spare}, func(rep machine.Reply) {
		if rep.Err == nil && a.tk.spare == "" {
			a.tk.spare = spare
		}
	})
}

func (a *actor) ticketAfterRotate() {
	if spare := a.tk.spare; spare != "" {
		a.tk.spare = ""
		a.ticketProbe(spare)
	}
}

// ticketProbe opens a socket of nobody's with the ticket: a misuse the desk must refuse.
func (a *actor) ticketProbe(hash string) {
	s := a.s
	e := s.epoch
	s.after(s.netLatency(), func() {
		if e != s.epoch {
			return
		}
		s.nextSocket++
		s.input(machine.SocketOpened{Socket: s.nextSocket, TicketHash: hash})
	})
}

// ticketCoverage records the tickets an input issued, redeemed or voided, and counts what
// a socket opened with a ticket was served.
func (s *Sim) ticketCoverage(seq uint64, in machine.Input, out machine.Outputs) {
	b := &s.tickets
	if b.tickets == nil {
		b.tickets = map[string]*simTicket{}
	}
	answered := func(status int) bool {
		for _, rep := range out.Replies {
			if rep.Seq == seq && rep.Status == status {
				return true
			}
		}
		return false
	}
	switch c := in.(type) {
	case machine.IssueStreamTicket:
		if t := s.desk.StreamTickets[c.TicketHash]; t != nil && answered(200) {
			for _, h := range slices.Sorted(maps.Keys(b.tickets)) {
				if s.now.Sub(b.tickets[h].issued) > ticketBookAge {
					delete(b.tickets, h)
				}
			}
			b.tickets[c.TicketHash] = &simTicket{party: t.PartyID, issued: s.now}
		}
	case machine.RotateKey:
		if answered(200) {
			for _, t := range b.tickets {
				if t.party == c.PartyID && !t.used {
					t.rotated = true
				}
			}
		}
	case machine.SocketOpened:
		if c.TicketHash == "" {
			return
		}
		refused := false
		for _, cl := range out.Closes {
			refused = refused || (cl.Socket == c.Socket && cl.Code == machine.CloseUnauthorized)
		}
		t := b.tickets[c.TicketHash]
		switch {
		case !refused:
			s.cov.hit(covTicketStream)
			if a := s.socketOwner(c.Socket); a != nil {
				defer a.ticketMisuse(c.TicketHash) // after the book records the use
			}
		case t == nil:
		case t.used:
			s.cov.hit(covTicketUsed)
		case !s.now.Before(t.issued.Add(ticketTTL)):
			s.cov.hit(covTicketExpired)
		case t.rotated:
			s.cov.hit(covTicketRotated)
		}
		if t != nil && !t.used {
			t.used = true
			b.used = append(b.used, c.TicketHash)
			if len(b.used) > ticketUsedRing {
				b.used = b.used[1:]
			}
		}
	}
}
