package model

import (
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// executingWorld is a model with one party and one pending allocate action of it.
func executingWorld(t *testing.T, at time.Time) (*Model, machine.Req, string) {
	t.Helper()
	m, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	const party, key, act = "taker-x::1220cd", "taker-key", "act_1"
	m.st.Parties[party] = &Party{ID: party, Hint: "taker-x", Keys: map[string]bool{key: true}}
	m.st.Hints["taker-x"] = party
	m.st.Keys[key] = party
	m.st.Actions[act] = &Action{ID: act, Party: party, Purpose: "allocate", Hash: []byte{1}, ExpiresAt: at.Add(10 * time.Minute)}
	m.watch(at.Add(10*time.Minute), dueAction, act)
	return m, machine.Req{KeyHash: key}, act
}

func retryLater(seq uint64, status int) machine.Reply {
	return machine.Reply{Seq: seq, Status: status, Err: &machine.APIError{Status: status, Code: machine.CodeRetryLater}}
}

// An execute answered in flight (a lost ledger answer: only a restart re-issues it) leaves
// the action executing past its expiry: the desk waits for the ledger's answer
// (machine.expireAction) and the model must not call that a divergence. A definite answer
// afterwards puts the expiry under judgement again.
func TestExecutingActionWaitsPastItsExpiry(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sig := make([]byte, 64)
	for _, batch := range []bool{false, true} {
		m, req, act := executingWorld(t, at)
		ex := machine.ExecuteActions{Req: req, Entries: []machine.SignedAction{{ActionID: act, Signature: sig}}, Batch: batch}
		if err := m.Apply(machine.Envelope{Seq: 1, At: at, Input: ex}, machine.Outputs{}); err != nil {
			t.Fatalf("batch %v: execute: %v", batch, err)
		}
		inFlight := retryLater(1, 503)
		if batch {
			inFlight = machine.Reply{Seq: 1, Status: 200, Body: machine.ExecBatchDTO{Results: []machine.ExecResultDTO{{ActionID: act, Status: "in-flight"}}}}
		}
		if err := m.Apply(machine.Envelope{Seq: 2, At: at.Add(5 * time.Second), Input: machine.Tick{}}, machine.Outputs{Replies: []machine.Reply{inFlight}}); err != nil {
			t.Fatalf("batch %v: in-flight answer: %v", batch, err)
		}
		expiry := at.Add(10 * time.Minute)
		if err := m.Apply(machine.Envelope{Seq: 3, At: expiry, Input: machine.Tick{}}, machine.Outputs{}); err != nil {
			t.Fatalf("batch %v: an action executing at its expiry was called a divergence: %v", batch, err)
		}
		// The execute's answer came (a restart re-issued it): executed, it leaves the queue.
		party := m.st.Actions[act].Party
		done := machine.Outputs{Events: []machine.Event{{Party: party, Type: machine.EvSignCompleted, Payload: machine.ActionIDPayload{ActionID: act}, Seq: m.stream(party).Seq + 1}}}
		if err := m.Apply(machine.Envelope{Seq: 4, At: expiry.Add(time.Minute), Input: machine.Tick{}}, done); err != nil {
			t.Fatalf("batch %v: sign.completed of the executing action: %v", batch, err)
		}
	}
}

// Not every execute makes an action executing: one never executed, or one whose execute
// was refused for good, must leave the queue at the Tick of its expiry.
func TestExpiryStillJudgedWithoutAnExecuteOut(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expiry := at.Add(10 * time.Minute)
	m, _, _ := executingWorld(t, at)
	if err := m.Apply(machine.Envelope{Seq: 1, At: expiry, Input: machine.Tick{}}, machine.Outputs{}); err == nil || !strings.Contains(err.Error(), "did not leave the queue") {
		t.Fatalf("an unsigned action kept past its expiry: %v", err)
	}
	// A signature of the wrong length is refused at once in a batch: never executing.
	m, req, act := executingWorld(t, at)
	ex := machine.ExecuteActions{Req: req, Entries: []machine.SignedAction{{ActionID: act, Signature: []byte{1}}}, Batch: true}
	no := false
	bad := machine.Reply{Seq: 1, Status: 200, Body: machine.ExecBatchDTO{Results: []machine.ExecResultDTO{{ActionID: act, Status: "error", Error: "bad", Retryable: &no}}}}
	if err := m.Apply(machine.Envelope{Seq: 1, At: at, Input: ex}, machine.Outputs{Replies: []machine.Reply{bad}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(machine.Envelope{Seq: 2, At: expiry, Input: machine.Tick{}}, machine.Outputs{}); err == nil || !strings.Contains(err.Error(), "did not leave the queue") {
		t.Fatalf("an action whose execute was refused at once kept past its expiry: %v", err)
	}
	// Still with the ledger at its expiry (the request waits), then a definite refusal (a
	// bad signature on the ledger): the desk expires it at once, so the next Tick judges it.
	m, req, act = executingWorld(t, at)
	ex = machine.ExecuteActions{Req: req, Entries: []machine.SignedAction{{ActionID: act, Signature: make([]byte, 64)}}}
	if err := m.Apply(machine.Envelope{Seq: 1, At: expiry.Add(-time.Second), Input: ex}, machine.Outputs{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(machine.Envelope{Seq: 2, At: expiry, Input: machine.Tick{}}, machine.Outputs{}); err != nil {
		t.Fatalf("an action whose execute is with the ledger at its expiry: %v", err)
	}
	// A second execute meanwhile: 409 RETRY_LATER, the action is executing.
	if err := m.Apply(machine.Envelope{Seq: 3, At: expiry.Add(time.Second), Input: ex}, machine.Outputs{Replies: []machine.Reply{retryLater(3, 409)}}); err != nil {
		t.Fatalf("409 RETRY_LATER for an executing action past its expiry: %v", err)
	}
	refused := machine.Reply{Seq: 1, Status: 400, Err: &machine.APIError{Status: 400, Message: "bad signature"}}
	if err := m.Apply(machine.Envelope{Seq: 4, At: expiry.Add(2 * time.Second), Input: machine.LedgerResult{CommandID: act + ":exec:1"}}, machine.Outputs{Replies: []machine.Reply{refused}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(machine.Envelope{Seq: 5, At: expiry.Add(3 * time.Second), Input: machine.Tick{}}, machine.Outputs{}); err == nil || !strings.Contains(err.Error(), "did not leave the queue") {
		t.Fatalf("an action no longer executing kept past its expiry: %v", err)
	}
}
