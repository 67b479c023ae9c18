package machine

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"slices"
	"testing"
	"time"
)

// ticketHash is the hash of a test ticket, in HashKey's form.
func ticketHash(ticket string) string { return keyHash(ticket) }

// issueTicket issues a stream ticket to a and returns the answer.
func (h *harness) issueTicket(a actor, ticket string) StreamTicketDTO {
	h.t.Helper()
	return h.ok(h.apply(IssueStreamTicket{Req: a.req(), TicketHash: ticketHash(ticket)}), 200).(StreamTicketDTO)
}

// connectTicket opens a stream socket with a ticket and returns its id.
func (h *harness) connectTicket(ticket string) uint64 {
	h.socket++
	h.apply(SocketOpened{Socket: h.socket, TicketHash: ticketHash(ticket)})
	return h.socket
}

// refusedAsUnknown asserts that socket got the unknown key's 4401 close, and is not bound.
func (h *harness) refusedAsUnknown(t *testing.T, socket uint64, what string) {
	t.Helper()
	want := SocketClose{Socket: socket, Code: CloseUnauthorized, Reason: "unknown or missing API key"}
	if !slices.Contains(h.closes, want) {
		t.Fatalf("%s: closes %+v, want %+v", what, h.closes, want)
	}
	if _, bound := h.d.Sockets[socket]; bound {
		t.Fatalf("%s: socket %d is bound", what, socket)
	}
}

// TestStreamTicketOneShot: a ticket answers expiresAt 30 s after the input's time, opens a
// socket bound to its party (which gets the connect-time snapshot), and is spent: the same
// ticket again, an unknown one, one of another party already used, and one redeemed at its
// expiry are each closed 4401 exactly as an unknown key, binding nothing.
func TestStreamTicketOneShot(t *testing.T) {
	h := newHarness(t)
	m, other := h.maker("Alpha"), h.maker("Beta")
	dto := h.issueTicket(m, "t-1")
	if time.Time(dto.ExpiresAt) != h.now.Add(StreamTicketTTL) || dto.Ticket != "" {
		t.Fatalf("ticket answer %+v, want expiresAt %v and the ticket left to the transport", dto, h.now.Add(StreamTicketTTL))
	}
	if got := h.d.StreamTickets[ticketHash("t-1")]; got == nil || got.PartyID != m.id || got.KeyHash != keyHash(m.key) {
		t.Fatalf("the ticket on the desk: %+v", got)
	}
	before := len(h.events)
	s := h.connectTicket("t-1")
	if sock := h.d.Sockets[s]; sock == nil || sock.PartyID != m.id || sock.KeyHash != keyHash(m.key) {
		t.Fatalf("socket opened with the ticket: %+v", sock)
	}
	if len(h.events) == before || h.events[before].Party != m.id {
		t.Fatalf("no connect-time snapshot for the ticket's party: %+v", h.events[before:])
	}
	if _, kept := h.d.StreamTickets[ticketHash("t-1")]; kept {
		t.Fatal("the redeemed ticket is still on the desk")
	}
	h.refusedAsUnknown(t, h.connectTicket("t-1"), "a used ticket")
	h.refusedAsUnknown(t, h.connectTicket("never-issued"), "an unknown ticket")

	h.issueTicket(other, "t-beta")
	h.connectTicket("t-beta")
	h.refusedAsUnknown(t, h.connectTicket("t-beta"), "another party's used ticket")

	h.issueTicket(m, "t-2")
	h.now = h.now.Add(StreamTicketTTL - time.Nanosecond)
	h.issueTicket(m, "t-3")
	h.connectTicket("t-2") // just before its expiry: good
	h.now = h.now.Add(StreamTicketTTL)
	h.refusedAsUnknown(t, h.connectTicket("t-3"), "a ticket at its expiry")
	if len(h.d.StreamTickets) != 0 {
		t.Fatalf("tickets left: %+v", h.d.StreamTickets)
	}
}

// TestStreamTicketKeyRotation: a socket opened with a ticket is bound to the ticket's key,
// so the key's rotation closes it 4401 like a keyed socket; the rotation voids the key's
// unredeemed tickets, and a ticket issued under the new key works.
func TestStreamTicketKeyRotation(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	h.issueTicket(m, "t-1")
	h.issueTicket(m, "t-2")
	s := h.connectTicket("t-1")
	h.ok(h.apply(ChallengeRequest{PartyID: m.id, Challenge: "ch-1"}), 200)
	h.ok(h.apply(RotateKey{PartyID: m.id, Challenge: "ch-1", Signature: ed25519.Sign(h.keys[m.id], []byte("ch-1")), NewKeyHash: keyHash("mk_new")}), 200)
	if !slices.Contains(h.closes, SocketClose{Socket: s, Code: CloseUnauthorized, Reason: "API key rotated"}) {
		t.Fatalf("the rotation did not close the ticket's socket: %+v", h.closes)
	}
	if len(h.d.StreamTickets) != 0 {
		t.Fatalf("the rotation left tickets: %+v", h.d.StreamTickets)
	}
	h.refusedAsUnknown(t, h.connectTicket("t-2"), "a ticket voided by the rotation")
	h.issueTicket(actor{m.id, "mk_new"}, "t-3")
	if sock := h.d.Sockets[h.connectTicket("t-3")]; sock == nil || sock.KeyHash != keyHash("mk_new") {
		t.Fatalf("a ticket of the new key: %+v", sock)
	}
}

// TestStreamTicketRefusals: an unknown key is 401 and issues nothing; a malformed hash is
// 400; an Idempotency-Key is 400 (the answer carries a secret), after the key (401 for an
// unknown one); each changes nothing.
func TestStreamTicketRefusals(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	d0 := h.digest()
	h.refused(h.apply(IssueStreamTicket{Req: Req{KeyHash: keyHash("nobody")}, TicketHash: ticketHash("x")}), 401, "")
	h.refused(h.apply(IssueStreamTicket{Req: m.req(), TicketHash: "ABC"}), 400, "")
	h.refused(h.apply(idem("k-1", "POST", "/maker/stream/ticket", "h", IssueStreamTicket{Req: m.req(), TicketHash: ticketHash("x")})), 400, "")
	h.refused(h.apply(idem("k-2", "POST", "/maker/stream/ticket", "h", IssueStreamTicket{Req: Req{KeyHash: keyHash("nobody")}, TicketHash: ticketHash("x")})), 401, "")
	if h.digest() != d0 || len(h.d.StreamTickets) != 0 {
		t.Fatal("a refused ticket changed the desk")
	}
}

// TestStreamTicketBounds: a party's ticket beyond MaxStreamTicketsPerParty evicts its
// oldest; the expired ones are pruned when a ticket is issued; a full desk refuses 503
// RETRY_LATER and changes nothing.
func TestStreamTicketBounds(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	for i := 0; i < MaxStreamTicketsPerParty; i++ {
		h.issueTicket(m, fmt.Sprint("t-", i))
		h.now = h.now.Add(time.Millisecond)
	}
	h.issueTicket(m, "t-last")
	if len(h.d.StreamTickets) != MaxStreamTicketsPerParty {
		t.Fatalf("%d tickets, want %d", len(h.d.StreamTickets), MaxStreamTicketsPerParty)
	}
	if _, kept := h.d.StreamTickets[ticketHash("t-0")]; kept {
		t.Fatal("the oldest ticket was not evicted")
	}
	h.now = h.now.Add(StreamTicketTTL)
	h.issueTicket(m, "t-fresh")
	if len(h.d.StreamTickets) != 1 {
		t.Fatalf("%d tickets after the others expired, want 1", len(h.d.StreamTickets))
	}
	for i := 0; len(h.d.StreamTickets) < MaxStreamTickets; i++ {
		h.d.StreamTickets[ticketHash(fmt.Sprint("f-", i))] = &StreamTicket{Hash: ticketHash(fmt.Sprint("f-", i)), PartyID: fmt.Sprint("p-", i), KeyHash: "k", ExpiresAt: h.now.Add(time.Second)}
	}
	d0 := h.digest()
	h.refused(h.apply(IssueStreamTicket{Req: houseTaker.req(), TicketHash: ticketHash("one-more")}), 503, CodeRetryLater)
	if h.digest() != d0 {
		t.Fatal("a refused ticket changed the desk")
	}
}

// TestStreamTicketSnapshot: the tickets survive a snapshot (version 4) and redeem after
// it; a version 3 snapshot (version 4 without the tickets section) still restores, with
// none.
func TestStreamTicketSnapshot(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	h.issueTicket(m, "t-1")
	h.d = roundTrip(t, h.d)
	if got := h.d.StreamTickets[ticketHash("t-1")]; got == nil || got.PartyID != m.id {
		t.Fatalf("the ticket after a restore: %+v", got)
	}
	if sock := h.d.Sockets[h.connectTicket("t-1")]; sock == nil || sock.PartyID != m.id {
		t.Fatal("the restored ticket did not open a socket")
	}
	// The empty tickets section, then (since version 5) the empty prepared section (four
	// empty maps, a zero ledger end, two empty maps) and the empty coin selection section
	// (coinsel.go: four zero counts).
	h.d.LedgerEnd = 0
	b, err := h.d.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[len(b)-12:], make([]byte, 12)) || b[len(snapshotMagic)] != snapshotVersion {
		t.Fatalf("a desk without tickets or reservations ends its version %d snapshot with %v", b[len(snapshotMagic)], b[len(b)-12:])
	}
	v3 := slices.Clone(b[:len(b)-12])
	v3[len(snapshotMagic)] = snapshotVersion3
	d, err := Restore(v3)
	if err != nil || len(d.StreamTickets) != 0 {
		t.Fatalf("version 3 snapshot: %v, %d tickets", err, len(d.StreamTickets))
	}
	again, err := d.EncodeSnapshot()
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("version 3 re-encoded: %v; want the current version's bytes", err)
	}
}

// TestStreamTicketRecordVersions: socket.opened carries the ticket hash since record
// version 6; a version 5 record (version 6 without it) decodes with none.
func TestStreamTicketRecordVersions(t *testing.T) {
	in := SocketOpened{Socket: 7, TicketHash: ticketHash("t"), CancelOnDisconnect: true, Resume: true, Since: 4}
	b, err := EncodeEnvelope(Envelope{Seq: 3, At: t0, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	if env, err := DecodeEnvelope(b); err != nil || env.Input != Input(in) {
		t.Fatalf("version 6 socket.opened: %+v, %v", env.Input, err)
	}
	keyed := SocketOpened{Socket: 8, KeyHash: "ab", Resume: true, Since: 2}
	b, err = EncodeEnvelope(Envelope{Seq: 4, At: t0, Input: keyed})
	if err != nil {
		t.Fatal(err)
	}
	v5 := slices.Clone(b[:len(b)-1]) // without the empty ticket hash
	v5[0] = recordVersion5
	if env, err := DecodeEnvelope(v5); err != nil || env.Input != Input(keyed) {
		t.Fatalf("version 5 socket.opened: %+v, %v", env.Input, err)
	}
	ticket := IssueStreamTicket{Req: Req{KeyHash: "k"}, TicketHash: ticketHash("t")}
	b, err = EncodeEnvelope(Envelope{Seq: 5, At: t0, Input: ticket})
	if err != nil {
		t.Fatal(err)
	}
	if env, err := DecodeEnvelope(b); err != nil || env.Input != Input(ticket) {
		t.Fatalf("stream.ticket record: %+v, %v", env.Input, err)
	}
}
