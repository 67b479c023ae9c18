// Package drive is test support: it drives a desk through the loop's request API the way a
// client would (registration with real Ed25519 keys, faucet funding and deposit accepts,
// signing and executing actions) and collects the stream events the desk sends. The
// in-process end-to-end tests, the restart tests and the benchmarks share it.
package drive

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Desk is what a test drives: the loop's request API.
type Desk interface {
	Do(ctx context.Context, cmd machine.Command_) (machine.Reply, error)
	Read(ctx context.Context, keyHash string, q machine.Query) (machine.Reply, error)
}

// Party is a registered external party with its API key and private key.
type Party struct {
	ID, Hint, Key string
	Priv          ed25519.PrivateKey
}

// KeyHash is the hex SHA-256 of the party's API key, as the transport computes it.
func (p Party) KeyHash() string { return HashKey(p.Key) }

// Req is the request header of the party's commands.
func (p Party) Req() machine.Req { return machine.Req{KeyHash: p.KeyHash()} }

// HashKey hashes an API key the way the transport does.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Driver drives one desk for one test.
type Driver struct {
	T    testing.TB
	Desk Desk
}

// Do runs a command and fails the test on a loop error (not on a refusal).
func (d Driver) Do(cmd machine.Command_) machine.Reply {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := d.Desk.Do(ctx, cmd)
	if err != nil {
		d.T.Fatalf("%s: %v", cmd.Kind(), err)
	}
	return rep
}

// Must returns the body of a reply, failing the test unless it has the given status.
func (d Driver) Must(rep machine.Reply, status int) any {
	d.T.Helper()
	if rep.Err != nil || rep.Status != status {
		d.T.Fatalf("got %d %+v, want %d", rep.Status, rep.Err, status)
	}
	return rep.Body
}

// Read runs a query as the party and returns its body, failing the test on a refusal.
func (d Driver) Read(p Party, q machine.Query) any {
	d.T.Helper()
	rep, err := d.Desk.Read(context.Background(), p.KeyHash(), q)
	if err != nil || rep.Err != nil {
		d.T.Fatalf("read %T: %v %+v", q, err, rep.Err)
	}
	return rep.Body
}

// Register runs register/start and register/complete with a fresh key and real signatures.
func (d Driver) Register(name string) Party {
	d.T.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		d.T.Fatal(err)
	}
	start := d.Must(d.Do(machine.RegisterStart{DisplayName: name, PublicKey: pub}), 200).(machine.RegisterStartDTO)
	sigs := make([][]byte, len(start.Topology))
	for i, tx := range start.Topology {
		sigs[i] = ed25519.Sign(priv, tx.Hash)
	}
	key := "mk_test_" + hex.EncodeToString(pub[:8])
	done := d.Must(d.Do(machine.RegisterComplete{RegistrationID: start.RegistrationID, Signatures: sigs, NewKeyHash: HashKey(key)}), 200).(machine.RegisterCompleteDTO)
	return Party{ID: done.PartyID, Hint: done.Hint, Key: key, Priv: priv}
}

// Sign signs actions and executes them in one batch; every entry must execute.
func (d Driver) Sign(p Party, actions []machine.SignActionDTO) {
	d.T.Helper()
	if err := Execute(d.Desk, p, actions); err != nil {
		d.T.Fatal(err)
	}
}

// Execute signs actions and executes them in one batch, reporting the first entry that
// did not execute.
func Execute(desk Desk, p Party, actions []machine.SignActionDTO) error {
	entries := make([]machine.SignedAction, len(actions))
	for i, x := range actions {
		entries[i] = machine.SignedAction{ActionID: x.ID, Signature: ed25519.Sign(p.Priv, x.Hash)}
	}
	rep, err := desk.Do(context.Background(), machine.ExecuteActions{Req: p.Req(), Entries: entries, Batch: true})
	if err != nil {
		return err
	}
	if rep.Err != nil {
		return rep.Err
	}
	for _, r := range rep.Body.(machine.ExecBatchDTO).Results {
		if r.Status != "executed" {
			return fmt.Errorf("action %s: %s %s", r.ActionID, r.Status, r.Error)
		}
	}
	return nil
}

// Fund draws from the faucet and accepts every deposit; want is how many tokens a draw sends.
func (d Driver) Fund(p Party, want int) {
	d.T.Helper()
	ans := d.Must(d.Do(machine.FaucetDraw{Req: p.Req()}), 200).(machine.FaucetAnswer)
	if len(ans.Sent) != want {
		d.T.Fatalf("faucet answer %+v, want %d tokens sent", ans, want)
	}
	in := d.Read(p, machine.QIncoming{}).(machine.IncomingDTO)
	for _, tr := range in.Transfers {
		acts := d.Must(d.Do(machine.AcceptIncoming{Req: p.Req(), CID: tr.CID}), 202).(machine.ActionsDTO)
		d.Sign(p, acts.Actions)
	}
}

// Balances returns the party's free holdings as symbol → amount.
func (d Driver) Balances(p Party) map[string]string {
	out := map[string]string{}
	for _, h := range d.Read(p, machine.QBalances{}).(machine.BalancesDTO).Holdings {
		out[h.Symbol] = h.Amount.String()
	}
	return out
}

// Events is a loop Sink that records every event and lets a test wait for one.
type Events struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []machine.Event
	closes []machine.SocketClose
}

// NewEvents returns an empty recorder.
func NewEvents() *Events {
	e := &Events{}
	e.cond = sync.NewCond(&e.mu)
	return e
}

// Deliver records outputs (the loop's Sink).
func (e *Events) Deliver(out machine.Outputs) {
	e.mu.Lock()
	e.events = append(e.events, out.Events...)
	e.closes = append(e.closes, out.Closes...)
	e.mu.Unlock()
	e.cond.Broadcast()
}

// WaitFor blocks until the party received an event of type typ matching ok (nil: any),
// and returns it; it fails the test after 20 seconds.
func (e *Events) WaitFor(t testing.TB, party, typ string, ok func(machine.Event) bool) machine.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-time.After(20 * time.Second):
			e.cond.Broadcast()
		case <-stop:
		}
	}()
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		for _, ev := range e.events {
			if ev.Party == party && ev.Type == typ && (ok == nil || ok(ev)) {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event for %s within 20s", typ, party)
		}
		e.cond.Wait()
	}
}

// TypesFor lists the event types a party received, in order.
func (e *Events) TypesFor(party string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.events {
		if ev.Party == party {
			out = append(out, ev.Type)
		}
	}
	return out
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns the current time.
func (RealClock) Now() time.Time { return time.Now() }
