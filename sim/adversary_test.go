package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// TestWorldAttacks: hostile calls mixed into a World's trading are each judged (their
// attack classes are reached) and the run stays clean, since the desk answers each as the
// contract says and changes nothing on a refusal.
func TestWorldAttacks(t *testing.T) {
	w := quietWorld(t, 9, 2, 2)
	w.AutoSign(true)
	onboard(w)
	takers := []int{w.Actors() - 3, w.Actors() - 2}
	for round := range 8 {
		for _, tk := range takers {
			w.Do(CallCreateRFQ, tk, 0)
		}
		w.Advance(time.Second)
		for m := range 2 {
			w.Do(CallQuote, m, round)
			w.Do(CallQuote, m, round+1)
		}
		w.Advance(3 * time.Second)
		for _, tk := range takers {
			w.Do(CallAccept, tk, round)
		}
		w.Advance(2 * time.Second)
		for i := range w.Actors() {
			for pick := range 12 {
				w.Do(CallAttack, i, pick+round)
			}
		}
		w.Advance(10 * time.Second)
		if err := w.Check(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	cov := w.Coverage()
	reached := 0
	for _, c := range advCoverage {
		if cov[c] > 0 {
			reached++
		}
	}
	for _, c := range []string{covAdvForeignQuoteDelete, covAdvForeignRFQCancel, covAdvUninvitedQuote, covAdvForeignExecute,
		covAdvBadInput, covAdvUnknownID, covAdvRotateBad, covAdvRotateBadSig} {
		if cov[c] == 0 {
			t.Errorf("never reached %q", c)
		}
	}
	t.Logf("%d of %d attack classes reached", reached, len(advCoverage))
}

// TestExpectationSpeaksTheContract: a wrong answer fails the run with a message naming the call,
// the answer and the contract's answer.
func TestExpectationSpeaksTheContract(t *testing.T) {
	s, err := New(DefaultKnobs())
	if err != nil {
		t.Fatal(err)
	}
	e := &expectation{class: covAdvForeignQuoteDelete, what: "DELETE /maker/quotes/q_1 by p of maker m's quote", want: one(403, "")}
	s.expect(e, replyOf(403, ""))
	if s.failure != nil {
		t.Fatalf("403 judged wrong: %v", s.failure)
	}
	s.expect(e, replyOf(204, ""))
	if s.failure == nil || s.failure.Class != Safety {
		t.Fatalf("204 where 403 is due was not a safety failure: %v", s.failure)
	}
	const want = "DELETE /maker/quotes/q_1 by p of maker m's quote was answered 204; the contract's answer is 403"
	if s.failure.Message != want {
		t.Fatalf("message %q, want %q", s.failure.Message, want)
	}
}

// replyOf is a reply with a status (and a code, for an error).
func replyOf(status int, code string) machine.Reply {
	if status < 400 {
		return machine.Reply{Status: status}
	}
	return machine.Reply{Status: status, Err: &machine.APIError{Status: status, Code: code, Message: "refused"}}
}

// TestRefusalMustChangeNothing: the probe fails an input that was to be refused at once but
// changed the desk (by the full digest and by the fingerprint), and passes a refusal that
// spends its challenge and nothing else.
func TestRefusalMustChangeNothing(t *testing.T) {
	// The full digest; the fingerprint; the fingerprint of a large desk, where a refusal
	// spending its challenge is compared by the fingerprint taken as if it were spent.
	for _, c := range []struct {
		probes int
		bytes  int64
	}{{0, 0}, {1000, 0}, {1000, 64 * fullDigestBytes}} {
		probes := c.probes
		w := quietWorld(t, 3, 1, 0)
		onboard(w)
		s := w.s
		s.deskBytes, s.spendProbes = c.bytes, 1
		a := s.actors[0]
		if a.reg != regDone {
			t.Fatal("the maker did not register")
		}
		s.probes = probes
		// A challenge is issued (state changes) where a refusal was expected.
		s.nextProbe = &expectation{class: covAdvRotateBad, what: "POST /maker/challenge", want: one(200, ""), immediate: true}
		s.input(machine.ChallengeRequest{PartyID: a.party, Challenge: "c1"})
		if s.failure == nil || !strings.Contains(s.failure.Message, "changed the desk's state") {
			t.Fatalf("probes=%d: a state change on an expected refusal passed: %v", probes, s.failure)
		}
		s.failure = nil
		// A rotate refused for its signature spends its challenge, and only that.
		s.nextProbe = &expectation{class: covAdvRotateBadSig, what: "POST /maker/api-key/rotate signed wrong", want: one(401, ""), immediate: true, consumes: "c1"}
		s.input(machine.RotateKey{PartyID: a.party, Challenge: "c1", Signature: make([]byte, 64), NewKeyHash: hashKey("k")})
		if s.failure != nil {
			t.Fatalf("probes=%d: a refusal that spent its challenge failed: %v", probes, s.failure)
		}
		if _, ok := s.desk.Challenges["c1"]; ok {
			t.Fatal("the challenge was not spent")
		}
		// A refusal that was to spend its challenge but kept it fails.
		s.input(machine.ChallengeRequest{PartyID: a.party, Challenge: "c2"})
		s.nextProbe = &expectation{class: covAdvRotateBadSig, what: "DELETE /rfq/nope", want: one(404, ""), immediate: true, consumes: "c2"}
		s.input(machine.CancelRFQ{Req: machine.Req{KeyHash: a.keyHash}, RFQID: "nope"})
		if s.failure == nil || !strings.Contains(s.failure.Message, "changed the desk's state") {
			t.Fatalf("probes=%d bytes=%d: a refusal that kept the challenge it was to spend passed: %v", probes, c.bytes, s.failure)
		}
	}
}
