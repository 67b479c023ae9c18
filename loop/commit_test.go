package loop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
)

// startJournaled starts a desk whose journal makes appends durable only when the test
// calls Sync, with the loop's queue bound set to queue.
func startJournaled(t *testing.T, queue int) (*testDesk, *journal.MemLog) {
	t.Helper()
	log := journal.NewMemLog(false)
	d := startDeskWith(t, drive.Catalog("0.1", "10000"), 25, drive.NewEvents(), func(c *loop.Config) {
		c.Journal, c.QueueSize = log, queue
	})
	return d, log
}

// answered reports whether ch delivered within wait.
func answered(ch <-chan error, wait time.Duration) (error, bool) {
	select {
	case err := <-ch:
		return err, true
	case <-time.After(wait):
		return nil, false
	}
}

// TestOutputsWaitForTheirAppend: a reply leaves only once the journal made the inputs
// before it durable, and every append a group commit completed releases its outputs at
// once, however many the loop holds.
func TestOutputsWaitForTheirAppend(t *testing.T) {
	d, log := startJournaled(t, 64)
	read := make(chan error, 1)
	go func() { _, err := d.loop.ReadOps(context.Background(), 0); read <- err }()
	if _, ok := answered(read, 50*time.Millisecond); ok {
		t.Fatal("a read was answered before the boot input was durable")
	}
	log.Sync()
	if err, ok := answered(read, 5*time.Second); !ok || err != nil {
		t.Fatalf("the read after the boot became durable: answered %v, err %v", ok, err)
	}

	acks := make(chan error, 8)
	for i := range 8 {
		go func() { acks <- d.loop.OpenSocket(context.Background(), uint64(i+1), "k", false) }()
	}
	for deadline := time.Now().Add(5 * time.Second); d.loop.Stats().Inputs.Load() < 9; {
		if time.Now().After(deadline) {
			t.Fatalf("%d inputs applied, want 9", d.loop.Stats().Inputs.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := answered(acks, 50*time.Millisecond); ok {
		t.Fatal("a socket was acknowledged before its input was durable")
	}
	log.Sync() // one commit for the eight
	for i := range 8 {
		if err, ok := answered(acks, 5*time.Second); !ok || err != nil {
			t.Fatalf("acknowledgement %d after the commit: answered %v, err %v", i, ok, err)
		}
	}
}

// TestUnsyncedAppendsAreBounded: the loop holds at most QueueSize appends that are not yet
// durable; past that it takes no further input until the oldest is.
func TestUnsyncedAppendsAreBounded(t *testing.T) {
	d, log := startJournaled(t, 2)
	acks := make(chan error, 3)
	for i := range 3 {
		go func() { acks <- d.loop.OpenSocket(context.Background(), uint64(i+1), "k", false) }()
	}
	time.Sleep(100 * time.Millisecond)
	if n := d.loop.Stats().Inputs.Load(); n != 2 {
		t.Fatalf("%d inputs applied with the boot's append not durable and a bound of 2, want 2", n)
	}
	for got := 0; got < 3; {
		log.Sync()
		if err, ok := answered(acks, 5*time.Millisecond); ok {
			if err != nil {
				t.Fatal(err)
			}
			got++
		}
	}
	if n := d.loop.Stats().Inputs.Load(); n != 4 {
		t.Fatalf("%d inputs applied, want 4", n)
	}
}

// TestFailedAppendHoldsItsOutputs: an input whose append failed never answers, and the loop
// still stops without waiting for it.
func TestFailedAppendHoldsItsOutputs(t *testing.T) {
	log := journal.NewMemLog(false)
	cat := drive.Catalog("0.1", "10000")
	adapter, parties, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{
		Network: machine.Testnet, Seed: 7, Clock: drive.RealClock{}, Catalog: cat,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := drive.Config(7, cat, 25)
	parties.Apply(&cfg)
	desk, err := machine.NewDesk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := loop.New(loop.Config{Desk: desk, Ledger: adapter, Clock: drive.RealClock{}, Sink: drive.NewEvents(), Journal: log})
	if err != nil {
		t.Fatal(err)
	}
	l.Start()
	log.Sync()
	ack := make(chan error, 1)
	go func() { ack <- l.OpenSocket(context.Background(), 1, "k", false) }()
	for deadline := time.Now().Add(5 * time.Second); l.Stats().Inputs.Load() < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the socket's input was not applied")
		}
		time.Sleep(time.Millisecond)
	}
	log.Crash() // the append fails
	if _, ok := answered(ack, 50*time.Millisecond); ok {
		t.Fatal("an input whose append failed was acknowledged")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Stop(ctx); err != nil {
		t.Fatalf("stop with an append failed: %v", err)
	}
	if err, ok := answered(ack, time.Second); !ok || !errors.Is(err, loop.ErrStopped) {
		t.Fatalf("the held acknowledgement after the stop: answered %v, err %v (want ErrStopped)", ok, err)
	}
}

// orderedLedger is the embedded ledger answering ordered: every call's result comes with
// gate, the append (of a ledger journal, here the test's) its record must follow.
type orderedLedger struct {
	*ledgeradapter.Adapter
	gate  *journal.Pending
	calls atomic.Int64
}

func (o *orderedLedger) DoOrdered(ctx context.Context, call machine.LedgerCall) (machine.LedgerResult, *journal.Pending) {
	o.calls.Add(1)
	return o.Do(ctx, call), o.gate
}

// TestLedgerResultFollowsTheLedgersAppend: with an ordered ledger and a journal that can
// hold a record back, a ledger call's result is journaled behind the ledger's append, so
// an answer that waits for the result leaves only once that append is done; with a journal
// that cannot, the loop calls the ledger's Do, which waits itself.
func TestLedgerResultFollowsTheLedgersAppend(t *testing.T) {
	for _, onDisk := range []bool{true, false} {
		var log journal.Log = journal.NewMemLog(true)
		if onDisk {
			fl, err := journal.OpenDir(t.TempDir(), journal.Options{Sync: journal.SyncNone})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fl.Close() })
			log = fl
		}
		gate, open := journal.NewPending(1, 1)
		var ol *orderedLedger
		d := startDeskWith(t, drive.Catalog("0.1", "10000"), 25, drive.NewEvents(), func(c *loop.Config) {
			ol = &orderedLedger{Adapter: c.Ledger.(*ledgeradapter.Adapter), gate: gate}
			c.Ledger, c.Journal = ol, log
		})
		registered := make(chan error, 1)
		go func() {
			d.Register("Waits For The Ledger")
			registered <- nil
		}()
		_, early := answered(registered, 100*time.Millisecond)
		switch {
		case onDisk && early:
			t.Fatal("a registration that waits for a ledger call finished before the ledger's append was done")
		case onDisk && ol.calls.Load() == 0:
			t.Fatal("the loop did not call the ledger ordered with a journal that can order")
		case !onDisk && (ol.calls.Load() != 0 || !early):
			t.Fatalf("with a journal that cannot order: %d ordered calls, registered %v; want none, and registered",
				ol.calls.Load(), early)
		}
		open(nil)
		if !early {
			if _, ok := answered(registered, 5*time.Second); !ok {
				t.Fatal("the registration did not finish once the ledger's append was done")
			}
		}
	}
}
