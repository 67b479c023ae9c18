package transport

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/deskco/rfqdesk/machine"
)

// failingRand is a random source that has nothing to give.
type failingRand struct{}

func (failingRand) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

// TestCallWithSecretBodies: an answer that carries a drawn secret takes it into the desk's
// body whether the desk answers the DTO or a pointer to it; any other body is a bug,
// answered 500 without the secret; a draw that fails is 500 before the desk hears anything.
func TestCallWithSecretBodies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   any
		status int
	}{
		{"value", machine.StreamTicketDTO{}, 200},
		{"pointer", &machine.StreamTicketDTO{}, 200},
		{"another body", machine.OKDTO{OK: true}, 500},
	} {
		d := newFakeDesk()
		d.doFn = func(machine.Command_) (machine.Reply, error) { return machine.Reply{Status: 200, Body: tc.body}, nil }
		_, ts := testServer(t, d, nil)
		res := request(t, ts, "POST", "/maker/stream/ticket", "", "mk_alice", "")
		if res.status != tc.status {
			t.Fatalf("%s: %d %s, want %d", tc.name, res.status, res.body, tc.status)
		}
		if tc.status != 200 {
			assertErrorBody(t, res, "")
			continue
		}
		var got machine.StreamTicketDTO
		if err := json.Unmarshal([]byte(res.body), &got); err != nil {
			t.Fatal(err)
		}
		if c, ok := d.commands()[0].(machine.IssueStreamTicket); !ok || got.Ticket == "" || c.TicketHash != HashKey(got.Ticket) {
			t.Fatalf("%s: answered ticket %q, the desk got %+v", tc.name, got.Ticket, d.commands()[0])
		}
	}
	d := newFakeDesk()
	_, ts := testServer(t, d, func(o *Options) { o.Rand = failingRand{} })
	if res := request(t, ts, "POST", "/maker/stream/ticket", "", "mk_alice", ""); res.status != 500 || d.calls() != 0 {
		t.Fatalf("a failed draw: %d %s, %d desk calls", res.status, res.body, d.calls())
	}
}
