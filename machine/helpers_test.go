package machine

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// actor is a party as a test drives it: its party id and API key.
type actor struct{ id, key string }

// req is the command header of the actor's requests.
func (a actor) req() Req { return Req{KeyHash: keyHash(a.key)} }

// houseTaker is the desk-signed taker of testConfig.
var houseTaker = actor{id: "house-taker::1220dd", key: "house-key"}

// maker registers a party and opens its stream, so it can be invited.
func (h *harness) maker(name string) actor {
	h.t.Helper()
	id, key := h.register(name)
	h.connect(key)
	return actor{id, key}
}

// hint is the hint of a party.
func (h *harness) hint(a actor) string { return h.d.Parties[a.id].Hint }

// newRFQ creates an RFQ of qty cbtc against usdcx and returns its DTO.
func (h *harness) newRFQ(taker actor, dir Direction, qty string, ttl int64, makers ...actor) RfqDTO {
	h.t.Helper()
	hints := make([]string, len(makers))
	for i, m := range makers {
		hints[i] = h.hint(m)
	}
	return h.ok(h.apply(CreateRFQ{Req: taker.req(), Direction: dir, Qty: money.MustParse(qty),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: hints, TTLSeconds: ttl}), 200).(RfqDTO)
}

// submit posts a quote without validUntil and returns the 200 answer.
func (h *harness) submit(m actor, rfq, price string) QuoteWithActionsDTO {
	h.t.Helper()
	return h.ok(h.apply(SubmitQuote{Req: m.req(), RFQID: rfq, Price: money.MustParse(price)}), 200).(QuoteWithActionsDTO)
}

// submitUntil posts a quote with an explicit validUntil.
func (h *harness) submitUntil(m actor, rfq, price string, until time.Time) QuoteWithActionsDTO {
	h.t.Helper()
	return h.ok(h.apply(SubmitQuote{Req: m.req(), RFQID: rfq, Price: money.MustParse(price), ValidUntil: &until}), 200).(QuoteWithActionsDTO)
}

// live posts a quote and signs its actions, so it is anchored.
func (h *harness) live(m actor, rfq, price string) QuoteWithActionsDTO {
	h.t.Helper()
	q := h.submit(m, rfq, price)
	h.ok(h.sign(m.id, m.key, q.Actions), 200)
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteLive {
		h.t.Fatalf("quote %s is %s after signing, want live", q.QuoteID, st)
	}
	return q
}

// accept accepts a quote as taker and returns the 202 answer.
func (h *harness) accept(taker actor, quoteID string) TradeWithActionsDTO {
	h.t.Helper()
	return h.ok(h.apply(AcceptQuote{Req: taker.req(), QuoteID: quoteID}), 202).(TradeWithActionsDTO)
}

// signOne executes one action in the singular form.
func (h *harness) signOne(a actor, x SignActionDTO) uint64 {
	return h.apply(ExecuteActions{Req: a.req(), Entries: []SignedAction{{ActionID: x.ID, Signature: ed25519.Sign(h.keys[a.id], x.Hash)}}})
}

// pending lists the actor's pending actions through GET /tx/pending.
func (h *harness) pending(a actor) []SignActionDTO {
	h.t.Helper()
	return h.read(a.key, QTxPending{}).Body.(ActionsDTO).Actions
}

// digest is the desk's digest, failing the test on error.
func (h *harness) digest() [32]byte {
	h.t.Helper()
	d, err := h.d.Digest()
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// semanticDigest is the digest of the state without the id generator's counter and the
// deadline queue: a refusal decided by the ledger legitimately draws an id and may leave
// an inert deadline behind (deadlines are never removed early), but nothing else.
func (h *harness) semanticDigest() string {
	h.t.Helper()
	b, err := json.Marshal(h.d)
	if err != nil {
		h.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		h.t.Fatal(err)
	}
	delete(m, "ids")
	delete(m, "deadlines")
	delete(m, "ledgerEnd") // what the ledger's answers told, refusal or not
	out, _ := json.Marshal(m)
	return string(out)
}

// evs returns the events sent to party since index from.
func (h *harness) evs(party string, from int) []Event {
	var out []Event
	for _, e := range h.events[from:] {
		if e.Party == party {
			out = append(out, e)
		}
	}
	return out
}

// lastOf returns the last event of a type sent to party.
func (h *harness) lastOf(party, typ string) (Event, bool) {
	for i := len(h.events) - 1; i >= 0; i-- {
		if e := h.events[i]; e.Party == party && e.Type == typ {
			return e, true
		}
	}
	return Event{}, false
}

// expectEvents asserts the types of the events sent to party since from.
func (h *harness) expectEvents(party string, from int, want string) {
	h.t.Helper()
	if got := joined(h.eventsFor(party, from)); got != want {
		h.t.Fatalf("events of %s: got %q, want %q", party, got, want)
	}
}

// answerWhere answers (in manual mode) the first queued call that matches, and returns it.
func (h *harness) answerWhere(match func(LedgerCall) bool) LedgerCall {
	h.t.Helper()
	for i, c := range h.queued {
		if match(c) {
			h.queued = append(h.queued[:i:i], h.queued[i+1:]...)
			h.answer(c)
			return c
		}
	}
	h.t.Fatal("no queued ledger call matches")
	return LedgerCall{}
}

// failWhere answers the first queued matching call with a failure of category.
func (h *harness) failWhere(category string, match func(LedgerCall) bool) {
	h.t.Helper()
	for i, c := range h.queued {
		if match(c) {
			h.queued = append(h.queued[:i:i], h.queued[i+1:]...)
			h.seq++
			h.collect(Apply(h.d, Envelope{Seq: h.seq, At: h.now, Input: LedgerResult{CommandID: c.CommandID,
				Failure: &LedgerFailure{Category: category, Message: "scripted " + category}}}))
			return
		}
	}
	h.t.Fatal("no queued ledger call matches")
}

// Call matchers.
func isPrepare(c LedgerCall) bool { return c.Op == OpPrepare }
func isExecute(c LedgerCall) bool { return c.Op == OpExecute }
func isSettle(c LedgerCall) bool  { return c.Command != nil && c.Command.Settle != nil }
func isCancel(c LedgerCall) bool  { return c.Command != nil && c.Command.CancelAllocation != nil }
func legIs(leg string) func(LedgerCall) bool {
	return func(c LedgerCall) bool {
		return c.Command != nil && c.Command.Allocate != nil && c.Command.Allocate.LegID == leg
	}
}
func anyCall(LedgerCall) bool { return true }

// setNow moves the clock without a tick: the next input carries the new time, but no
// deadline fires before it.
func (h *harness) setNow(t time.Time) { h.now = t }

// at returns the wire form of t.
func at(t time.Time) WireTime { return WireTime(t) }

// eq fails the test when got and want differ (as JSON).
func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// roundTrip is the desk restored from d's binary snapshot; it fails the test unless the
// restored desk's digest (its snapshot written in pieces and hashed) is the snapshot's
// hash, so that it encodes to the same bytes.
func roundTrip(t tb, d *Desk) *Desk {
	t.Helper()
	b, back := encodeRestore(t, d)
	if sum, err := back.Digest(); err != nil || sum != sha256.Sum256(b) {
		t.Fatalf("the restored desk encodes differently (%v)", err)
	}
	return back
}

// reencodes requires d, restored from an older snapshot version, to restore the same from
// its encoding at the current version, and returns that encoding.
func reencodes(t *testing.T, d *Desk, older int) []byte {
	t.Helper()
	snap, again := encodeRestore(t, d)
	j1, _ := json.Marshal(d)
	j2, _ := json.Marshal(again)
	if !bytes.Equal(j1, j2) {
		t.Fatalf("version %d and its version %d re-encoding restore differently:\n%s\n%s", older, snapshotVersion, j1, j2)
	}
	return snap
}

// refusesNextVersion requires snap, relabelled one version past the current one, to be
// refused with an error naming the versions this desk reads.
func refusesNextVersion(t *testing.T, snap []byte) {
	t.Helper()
	next := slices.Clone(snap)
	next[len(snapshotMagic)] = snapshotVersion + 1
	want := fmt.Sprintf("binary snapshot version %d; this desk reads only versions 1 to %d", snapshotVersion+1, snapshotVersion)
	if _, err := Restore(next); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("version %d snapshot: %v", snapshotVersion+1, err)
	}
}
