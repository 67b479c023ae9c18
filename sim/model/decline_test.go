package model

import (
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// The decline judged against the real desk in lockstep: its refusals, a decline with no
// quote (204, quote.declined to the taker), a second one replacing the reason, and the
// taker's GET /rfq/mine with its declines. Then the model must call each of a desk's
// plausible mistakes a divergence: a missing or misaddressed quote.declined, a wrong
// payload, a 204 to a maker not invited, and a /rfq/mine row without its declines.
func TestDeclineInLockstep(t *testing.T) {
	w := newDeskWorld(t, []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 10}})
	rfq := w.rfq(takerKey, "1", 60).Body.(machine.RfqDTO)
	maker := machine.Req{KeyHash: makerKey}
	for _, c := range []struct {
		in     machine.DeclineRFQ
		status int
	}{
		{machine.DeclineRFQ{Req: maker, RFQID: rfq.RfqID, Reason: "bored"}, 400},
		{machine.DeclineRFQ{Req: maker, RFQID: "rfq_nope", Reason: "size"}, 404},
		{machine.DeclineRFQ{Req: machine.Req{KeyHash: taker2Key}, RFQID: rfq.RfqID, Reason: "size"}, 403},
		{machine.DeclineRFQ{Req: maker, RFQID: rfq.RfqID, Reason: "size"}, 204},
		{machine.DeclineRFQ{Req: maker, RFQID: rfq.RfqID, Reason: "price"}, 204},
	} {
		if rep := w.apply(c.in); rep == nil || rep.Status != c.status {
			t.Fatalf("%+v: %+v, want %d", c.in, rep, c.status)
		}
	}
	read := func(m *Model) (machine.Reply, error) {
		rep := machine.Read(w.d, w.now, takerKey, machine.QRfqMine{})
		return rep, m.Read(w.now, takerKey, machine.QRfqMine{}, rep)
	}
	rep, err := read(w.m)
	if err != nil {
		t.Fatalf("GET /rfq/mine: %v", err)
	}
	rows := rep.Body.([]machine.RfqDTO)
	if len(rows) != 1 || rows[0].Declines == nil || len(*rows[0].Declines) != 1 || (*rows[0].Declines)[0].Reason != "price" {
		t.Fatalf("GET /rfq/mine: %+v", rows)
	}

	// A decline applied to a copy of the model with the desk's outputs altered.
	decline := machine.DeclineRFQ{Req: maker, RFQID: rfq.RfqID, Reason: "other"}
	w.seq++
	env := machine.Envelope{Seq: w.seq, At: w.now, Input: decline}
	snap, err := w.d.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	copied, err := machine.Restore(snap) // the desk itself stays before the decline
	if err != nil {
		t.Fatal(err)
	}
	good := machine.Apply(copied, env)
	if err := w.m.Clone().Apply(env, good); err != nil {
		t.Fatalf("the desk's own answer: %v", err)
	}
	if len(good.Events) != 1 || good.Events[0].Type != machine.EvQuoteDeclined {
		t.Fatalf("events %+v, want one quote.declined", good.Events)
	}
	alter := func(f func(*machine.Outputs)) machine.Outputs {
		out := machine.Outputs{Replies: append([]machine.Reply(nil), good.Replies...), Events: append([]machine.Event(nil), good.Events...)}
		f(&out)
		return out
	}
	for _, c := range []struct {
		name string
		env  machine.Envelope
		out  machine.Outputs
		want string
	}{
		{"no quote.declined", env, alter(func(o *machine.Outputs) { o.Events = nil }), "without quote.declined"},
		{"quote.declined twice", env, alter(func(o *machine.Outputs) {
			again := o.Events[0]
			again.Seq++ // numbered right: the repeat itself is the fault
			o.Events = append(o.Events, again)
		}), "twice"},
		{"quote.declined to the maker", env, alter(func(o *machine.Outputs) {
			o.Events[0].Party = "maker-one::1220cc"
			o.Events[0].Seq = w.m.stream("maker-one::1220cc").Seq + 1 // numbered right for the maker
		}), "not its taker"},
		{"a wrong reason", env, alter(func(o *machine.Outputs) {
			o.Events[0].Payload = machine.QuoteDeclinedPayload{RfqID: rfq.RfqID, Maker: "maker-one", Reason: "size"}
		}), "payload"},
		{"the party id for the hint", env, alter(func(o *machine.Outputs) {
			o.Events[0].Payload = machine.QuoteDeclinedPayload{RfqID: rfq.RfqID, Maker: "maker-one::1220cc", Reason: "other"}
		}), "payload"},
		{"204 to a maker not invited", machine.Envelope{Seq: w.seq, At: w.now, Input: machine.DeclineRFQ{Req: machine.Req{KeyHash: taker2Key}, RFQID: rfq.RfqID, Reason: "other"}},
			machine.Outputs{Replies: []machine.Reply{{Seq: w.seq, Status: 204}}}, "403"},
	} {
		err := w.m.Clone().Apply(c.env, c.out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a divergence naming %q", c.name, err, c.want)
		}
	}
	row := rows[0]
	row.Declines = nil // the row as a desk that forgot the field would send it
	rep.Body = []machine.RfqDTO{row}
	if err := w.m.Read(w.now, takerKey, machine.QRfqMine{}, rep); err == nil || !strings.Contains(err.Error(), "declines") {
		t.Errorf("a /rfq/mine row without declines: %v", err)
	}
}
