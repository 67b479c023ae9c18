package machine

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// connectCOD opens a stream socket with key, marked for cancel-on-disconnect or not, and
// returns its id.
func (h *harness) connectCOD(key string, cod bool) uint64 {
	h.socket++
	h.apply(SocketOpened{Socket: h.socket, KeyHash: keyHash(key), CancelOnDisconnect: cod})
	return h.socket
}

// socketsOf are the ids of a party's open sockets, ascending.
func (h *harness) socketsOf(party string) []uint64 {
	var ids []uint64
	for _, id := range sortedKeys(h.d.Sockets) {
		if h.d.Sockets[id].PartyID == party {
			ids = append(ids, id)
		}
	}
	return ids
}

// massCancelWould is what DELETE /maker/quotes by p would revoke now, found on a copy of
// the desk so the desk itself is not touched.
func massCancelWould(t tb, h *harness, p actor) []string {
	t.Helper()
	d := roundTrip(t, h.d)
	out := Apply(d, Envelope{Seq: h.seq + 1, At: h.now, Input: CancelAllQuotes{Req: p.req()}})
	for _, rep := range out.Replies {
		if dto, ok := rep.Body.(CancelAllQuotesDTO); ok && rep.Seq == h.seq+1 {
			return dto.Revoked
		}
	}
	t.Fatalf("mass cancel on the copy: %+v", out.Replies)
	return nil
}

// TestCancelOnDisconnectLaw: whatever quotes two makers hold (as in TestCancelAllQuotesLaw)
// and whatever sockets the first opened, marked or not, the input that takes it offline
// (its sockets closed one by one, or a restart) revokes exactly what a mass cancel by it
// would have revoked when one of the sockets that input dropped was marked, and nothing
// otherwise; each revoked quote records the reason disconnect, which the maker's
// quote.status carries and the taker's does not. Before that input nothing changes.
func TestCancelOnDisconnectLaw(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarnessWith(rapidTB{t}, testConfig())
		makers := []actor{h.maker("Alpha"), h.maker("Beta")}
		alpha := makers[0]
		live := drawMakersQuotes(t, h, makers, 5)
		for i, n := 0, rapid.IntRange(0, 3).Draw(t, "extra sockets"); i < n; i++ {
			h.connectCOD(alpha.key, rapid.Bool().Draw(t, "marked"))
		}
		drawSettlingAndWaiting(t, h, live, makers)
		socks := h.socketsOf(alpha.id)
		restart := rapid.Bool().Draw(t, "restart")
		var last []uint64 // the sockets the offline input drops
		if restart {
			last = socks
		} else {
			order := rapid.Permutation(socks).Draw(t, "close order")
			for _, id := range order[:len(order)-1] {
				before := quoteStates(h.d)
				h.apply(SocketClosed{Socket: id})
				if !mapsEqual(before, quoteStates(h.d)) {
					t.Fatalf("closing socket %d, not the last of %s, changed quotes", id, alpha.id)
				}
			}
			last = order[len(order)-1:]
		}
		marked := slices.ContainsFunc(last, func(id uint64) bool { return h.d.Sockets[id].CancelOnDisconnect })
		var want []string
		if marked {
			want = massCancelWould(rapidTB{t}, h, alpha)
		}
		before := quoteStates(h.d)
		waiting := map[string]uint64{} // alpha's submissions still with the ledger
		for id, q := range h.d.Quotes {
			if q.Maker == alpha.id && q.State == QuoteFunding && q.ReqSeq != 0 {
				waiting[id] = q.ReqSeq
			}
		}
		from := len(h.events)
		if restart {
			h.apply(Boot{})
		} else {
			h.apply(SocketClosed{Socket: last[0]})
		}
		if h.d.Parties[alpha.id].Online != 0 {
			t.Fatalf("%s still online", alpha.id)
		}
		// A submission still waiting is withdrawn by a marked disconnect (409) and by a
		// restart (its client is gone); an unmarked close leaves it waiting.
		for id, seq := range waiting {
			q, still := h.d.Quotes[id]
			rep, answered := h.replies[seq]
			switch {
			case restart && (still || answered):
				// A restart ends it without an answer: its client is gone with the process.
				t.Fatalf("quote %s after the restart: still %v, answer %+v; want gone, unanswered", id, still, rep)
			case !restart && marked && (still || !answered || rep.Status != 409):
				t.Fatalf("quote %s, waiting at the marked disconnect: still %v, answer %+v; want withdrawn with 409", id, still, rep)
			case !restart && !marked && (!still || q.State != QuoteFunding || q.ReqSeq != seq || answered):
				t.Fatalf("quote %s, waiting at an unmarked disconnect, changed: %v, answer %+v", id, q, rep)
			}
		}
		for id, was := range before {
			if _, w := waiting[id]; w {
				continue
			}
			q, still := h.d.Quotes[id]
			switch {
			case slices.Contains(want, id):
				if q.State != QuoteRevoked || q.RevokeReason != RevokeDisconnect {
					t.Fatalf("quote %s should be revoked for a disconnect: %s %q", id, q.State, q.RevokeReason)
				}
				for _, a := range q.Actions {
					if _, left := h.d.Actions[a]; left {
						t.Fatalf("quote %s revoked but its action %s is still pending", id, a)
					}
				}
				checkDisconnectFrames(t, h, q, from)
			case restart && still && q.ReqSeq != 0 && was == QuoteFunding:
				// a restart refuses a submission still waiting on the ledger, as ever
			case still && (q.State != was || q.RevokeReason != ""):
				t.Fatalf("quote %s (marked %v) went from %s to %s %q", id, marked, was, q.State, q.RevokeReason)
			}
		}
	})
}

// checkDisconnectFrames: the quote.status revoked frame of a quote revoked for a disconnect
// carries reason disconnect to the maker, and no reason to the taker (when it sees it).
func checkDisconnectFrames(t *rapid.T, h *harness, q *Quote, from int) {
	toMaker, toTaker := 0, 0
	for _, e := range h.events[from:] {
		p, ok := e.Payload.(QuoteStatusPayload)
		if !ok || e.Type != EvQuoteStatus || p.QuoteID != q.ID {
			continue
		}
		switch {
		case e.Party == q.Maker && p.Status == "revoked" && p.Reason == RevokeDisconnect:
			toMaker++
		case e.Party == h.d.RFQs[q.RFQ].Taker && p.Status == "revoked" && p.Reason == "":
			toTaker++
		default:
			t.Fatalf("quote %s: unexpected frame to %s: %+v", q.ID, e.Party, p)
		}
	}
	if toMaker != 1 || (q.Anchored && toTaker != 1) || (!q.Anchored && toTaker != 0) {
		t.Fatalf("quote %s (anchored %v): %d maker and %d taker frames", q.ID, q.Anchored, toMaker, toTaker)
	}
}

func mapsEqual(a, b map[string]State) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCancelOnDisconnectKeyRotation: a key rotation that closes a party's only marked
// socket takes it offline, and its live quote is revoked for the disconnect.
func TestCancelOnDisconnectKeyRotation(t *testing.T) {
	h := newHarness(t)
	id, key := h.register("Alpha")
	mk := actor{id, key}
	h.connectCOD(key, true)
	q := h.live(mk, h.newRFQ(houseTaker, Sell, "1", 120, mk).RfqID, "60000")
	h.ok(h.apply(ChallengeRequest{PartyID: id, Challenge: "ch-1"}), 200)
	h.ok(h.apply(RotateKey{PartyID: id, Challenge: "ch-1", Signature: ed25519.Sign(h.keys[id], []byte("ch-1")), NewKeyHash: keyHash("mk_new")}), 200)
	if got := h.d.Quotes[q.QuoteID]; got.State != QuoteRevoked || got.RevokeReason != RevokeDisconnect {
		t.Fatalf("after the rotation closed the marked socket: %s %q, want revoked for a disconnect", got.State, got.RevokeReason)
	}
}

// TestCancelOnDisconnectWithdrawsWaitingSubmission: a quote whose POST still waits on the
// ledger when the marked party goes offline is withdrawn (as the mass cancel withdraws
// it): its POST is answered 409 at the disconnect, and the quote never goes live; what its
// prepares make later is released.
func TestCancelOnDisconnectWithdrawsWaitingSubmission(t *testing.T) {
	h := newHarness(t)
	id, key := h.register("Alpha")
	mk := actor{id, key}
	sock := h.connectCOD(key, true)
	_, sub := h.waitingSubmission(mk, 120)
	seq := h.apply(sub)
	h.apply(SocketClosed{Socket: sock})
	if rep, answered := h.replies[seq]; !answered || rep.Status != 409 {
		t.Fatalf("the waiting submission at the disconnect: %+v, want 409", rep)
	}
	h.flush()
	for _, q := range h.d.Quotes {
		if q.Maker == id {
			t.Fatalf("a quote of the withdrawn submission is still on the desk: %s %s", q.ID, q.State)
		}
	}
}

// TestCancelOnDisconnectRecordVersions: a socket.opened record of version 3 (written by a
// desk before cancel-on-disconnect; the golden bytes were written by that desk) still
// decodes, unmarked, and re-encodes as version 4 with the mark; a marked socket survives
// its record; other versions are refused naming both read.
func TestCancelOnDisconnectRecordVersions(t *testing.T) {
	v3, err := os.ReadFile("testdata/formats/record-v3-socket-opened.bin")
	if err != nil {
		t.Fatal(err)
	}
	env, err := DecodeEnvelope(v3)
	want := SocketOpened{Socket: 3, KeyHash: "ab12"}
	if err != nil || env.Input != Input(want) || env.Seq != 9 || !env.At.Equal(t0) {
		t.Fatalf("version 3 record: %+v, %v; want %+v", env, err, want)
	}
	again, err := EncodeEnvelope(env)
	if err != nil || again[0] != recordVersion || !bytes.Equal(again[1:], append(slices.Clone(v3[1:]), 0, 0, 0, 0)) {
		t.Fatalf("re-encoded as %x (%v); want version %d and the mark (false), no resume (false, 0) and no ticket (\"\") appended", again, err, recordVersion)
	}
	marked := SocketOpened{Socket: 4, KeyHash: "cd34", CancelOnDisconnect: true}
	b, err := EncodeEnvelope(Envelope{Seq: 10, At: t0, Input: marked})
	if err != nil {
		t.Fatal(err)
	}
	if env, err := DecodeEnvelope(b); err != nil || env.Input != Input(marked) {
		t.Fatalf("marked socket: %+v, %v", env.Input, err)
	}
	// A version 3 record carrying the mark's byte has a byte after it: refused.
	bad := append(slices.Clone(v3), 1)
	if _, err := DecodeEnvelope(bad); err == nil || !strings.Contains(err.Error(), "bytes after it") {
		t.Fatalf("version 3 record with a trailing byte: %v", err)
	}
}

// TestCancelOnDisconnectSnapshotVersion1: a snapshot of version 1 (written by a desk before
// cancel-on-disconnect; golden bytes of that desk holding an open socket, a live quote and
// a revoked one) restores with no socket marked and no revoke reason, and restores the
// same from its current encoding; a version after the current one is refused naming the
// versions read.
func TestCancelOnDisconnectSnapshotVersion1(t *testing.T) {
	_, d := restoreGolden(t, "snapshot-v1.bin")
	if len(d.Sockets) == 0 || len(d.Quotes) < 2 {
		t.Fatalf("the golden snapshot holds %d sockets and %d quotes", len(d.Sockets), len(d.Quotes))
	}
	for _, s := range d.Sockets {
		if s.CancelOnDisconnect {
			t.Fatalf("socket %d of a version 1 snapshot is marked", s.ID)
		}
	}
	refusesNextVersion(t, reencodes(t, d, 1))
}
