package model

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// TestIdempotencyInLockstep: the desk's answers to keyed writes satisfy the model (first
// answers, replays, 422, 409 while a submission waits on the ledger, 400 and 401), and
// the model calls each plausible mistake a divergence: a replay not marked, another body
// replayed, a replay that changes something, a fresh answer marked replayed, and a repeat
// that runs again instead of replaying.
func TestIdempotencyInLockstep(t *testing.T) {
	w := newDeskWorld(t, []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 10}})
	create := machine.CreateRFQ{Req: machine.Req{KeyHash: takerKey}, Direction: machine.Sell, Qty: money.MustParse("1"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{"maker-one"}, TTLSeconds: 60}
	keyed := func(key, path, body string, c machine.Command_) machine.Idempotent {
		return machine.Idempotent{Key: key, Method: "POST", Path: path, BodyHash: body, Cmd: c}
	}
	first := w.apply(keyed("k1", "/rfq", "b1", create))
	if first == nil || first.Status != 200 || first.Replayed {
		t.Fatalf("first: %+v", first)
	}
	for _, c := range []struct {
		in     machine.Idempotent
		status int
	}{
		{keyed("k1", "/rfq", "b1", create), 200},
		{keyed("k1", "/rfq", "b2", create), 422},
		{keyed("k1", "/faucet", "b1", machine.FaucetDraw{Req: machine.Req{KeyHash: takerKey}}), 422},
		{keyed("bad key", "/rfq", "b1", create), 400},
		{keyed("bad key", "/rfq", "b1", machine.CreateRFQ{Req: machine.Req{KeyHash: strings.Repeat("ee", 32)}}), 401},
		{keyed("k2", "/maker/api-key/rotate", "b1", machine.RotateKey{PartyID: "x"}), 400},
	} {
		if rep := w.apply(c.in); rep == nil || rep.Status != c.status {
			t.Fatalf("%+v: %+v, want %d", c.in, rep, c.status)
		}
	}

	// Mistakes the model must catch, each applied to a copy of the desk and the model.
	repeat := keyed("k1", "/rfq", "b1", create)
	try := func(name string, in machine.Input, alter func(*machine.Outputs), want string) {
		t.Helper()
		snap, err := w.d.EncodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		d, err := machine.Restore(snap)
		if err != nil {
			t.Fatal(err)
		}
		env := machine.Envelope{Seq: w.seq + 1, At: w.now, Input: in}
		out := machine.Apply(d, env)
		alter(&out)
		err = w.m.Clone().Apply(env, out)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a divergence containing %q", name, err, want)
		}
	}
	try("a replay not marked", repeat, func(o *machine.Outputs) { o.Replies[0].Replayed = false }, "Idempotent-Replayed false")
	try("another body replayed", repeat, func(o *machine.Outputs) {
		o.Replies[0].Body = json.RawMessage(`{"rfqId":"rfq_other"}`)
	}, "is not the first answer's")
	try("a replay with an event", repeat, func(o *machine.Outputs) {
		o.Events = append(o.Events, machine.Event{Party: "maker-one::1220cc", Type: machine.EvRfqCreated})
	}, "changed something")
	try("a fresh answer marked replayed", keyed("k9", "/rfq", "b1", create), func(o *machine.Outputs) {
		o.Replies[0].Replayed = true
	}, "marked replayed")
	// A desk that forgot its record runs the repeat again: a new RFQ, not a replay.
	try("a repeat run again", repeat, func(o *machine.Outputs) {
		fresh := machine.Apply(func() *machine.Desk {
			snap, _ := w.d.EncodeSnapshot()
			d, _ := machine.Restore(snap)
			return d
		}(), machine.Envelope{Seq: w.seq + 1, At: w.now, Input: create})
		*o = fresh
	}, "is not the first answer's")

	// A 204 replays as a 204 without a body.
	cancel := machine.Idempotent{Key: "c1", Method: "DELETE", Path: "/rfq/x", BodyHash: "", Cmd: machine.CancelRFQ{Req: machine.Req{KeyHash: takerKey}, RFQID: "x"}}
	w.apply(cancel)
	if rep := w.apply(cancel); rep == nil || !rep.Replayed || rep.Status != 404 {
		t.Fatalf("a replayed 404: %+v", rep)
	}
	rfq0 := w.rfq(takerKey, "1", 60).Body.(machine.RfqDTO)
	del := machine.Idempotent{Key: "c2", Method: "DELETE", Path: "/rfq/" + rfq0.RfqID, Cmd: machine.CancelRFQ{Req: machine.Req{KeyHash: takerKey}, RFQID: rfq0.RfqID}}
	if rep := w.apply(del); rep == nil || rep.Status != 204 {
		t.Fatalf("cancel: %+v", rep)
	}
	if rep := w.apply(del); rep == nil || !rep.Replayed || rep.Status != 204 || rep.Body != nil {
		t.Fatalf("a replayed 204: %+v", rep)
	}

	// A submission waiting on the ledger: its repeat is 409 RETRY_LATER.
	rfq := first.Body.(machine.RfqDTO)
	sub := keyed("q1", "/maker/quotes", "b", machine.SubmitQuote{Req: machine.Req{KeyHash: makerKey}, RFQID: rfq.RfqID, Price: money.MustParse("60000")})
	if rep := w.apply(sub); rep != nil {
		t.Fatalf("the submission was answered before the ledger: %+v", rep)
	}
	if rep := w.apply(sub); rep == nil || rep.Status != 409 || rep.Err.Code != machine.CodeRetryLater {
		t.Fatalf("repeat in flight: %+v", rep)
	}
	try("a repeat in flight run again", sub, func(o *machine.Outputs) { o.Replies = nil }, "")

	// A restart forgets nothing answered: the repeat still replays; the unanswered
	// submission's key runs anew.
	w.apply(machine.Boot{})
	if rep := w.apply(repeat); rep == nil || !rep.Replayed || rep.Status != 200 {
		t.Fatalf("after a restart: %+v", rep)
	}
	if rep := w.apply(sub); rep != nil {
		t.Fatalf("the submission's retry after a restart: %+v, want it to run anew (held on the ledger)", rep)
	}
}
