package node_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/internal/pgcluster"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/pglog"
)

// pg is the package's PostgreSQL cluster, started by the first test that needs it and
// stopped by TestMain (pgcluster.Lazy.Run).
var pg pgcluster.Lazy

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// pgDatabase returns the URL of a new database for the test (skipping it without
// PostgreSQL).
func pgDatabase(t *testing.T) string { return pg.Database(t) }

func pgStore(t *testing.T, dsn string, opts pglog.Options) *pglog.Store {
	t.Helper()
	s, err := pglog.Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func openPG(t *testing.T, s *pglog.Store, events *drive.Events) (*node.Node, drive.Driver) {
	t.Helper()
	opts := options("", events)
	opts.Journals = s
	n, err := node.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return n, drive.Driver{T: t, Desk: n.Loop}
}

// TestPostgresRestart: a desk whose journals are in PostgreSQL is closed and opened
// again: keys, balances, trades and a trade waiting for signatures are all there, from
// the snapshots and records in the database.
func TestPostgresRestart(t *testing.T) {
	dsn := pgDatabase(t)
	events := drive.NewEvents()
	n, d := openPG(t, pgStore(t, dsn, pglog.Options{}), events)
	maker, taker := fundedPair(d)
	waiting, before := settleOne(t, n, d, events, maker, taker, true)
	closeNode(t, n)

	events = drive.NewEvents()
	n, d = openPG(t, pgStore(t, dsn, pglog.Options{}), events)
	defer closeNode(t, n)
	if rec := n.Recovered; rec.Fresh || rec.SnapshotSeq == 0 || rec.DigestMismatch != 0 || rec.LedgerSnapshotSeq == 0 {
		t.Fatalf("recovery %+v", rec)
	}
	sameDesk(t, d, before, "the restart", maker, taker)
	signSettles(t, n, d, events, taker, waiting.Actions)
}

// TestPostgresTakeover: a second desk opens the same database while the first still
// runs (a standby taking over from a paused leader). It fences the first: the first
// desk's next write is refused with ErrFenced and reported, nothing it wrote after the
// take over is in the log, and the second desk serves everything the first acknowledged.
func TestPostgresTakeover(t *testing.T) {
	dsn := pgDatabase(t)
	var fenced atomic.Int32
	eventsA := drive.NewEvents()
	a, da := openPG(t, pgStore(t, dsn, pglog.Options{OnFenced: func(string, error) { fenced.Add(1) }}), eventsA)
	maker, taker := fundedPair(da)
	_, before := settleOne(t, a, da, eventsA, maker, taker, false)
	deskEpoch, ledgerEpoch := a.Epochs()

	eventsB := drive.NewEvents()
	b, db := openPG(t, pgStore(t, dsn, pglog.Options{}), eventsB)
	defer closeNode(t, b)
	if de, le := b.Epochs(); de <= deskEpoch || le <= ledgerEpoch {
		t.Fatalf("the new leader's epochs %d/%d are not above %d/%d", de, le, deskEpoch, ledgerEpoch)
	}
	// The zombie tries to write: a registration is an input for its desk journal.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pub := make([]byte, 32)
	pub[0] = 7
	rep, err := a.Loop.Do(ctx, machine.RegisterStart{DisplayName: "Zombie", PublicKey: pub})
	if err == nil {
		t.Fatalf("the fenced desk answered a registration: %+v", rep)
	}
	deadline := time.Now().Add(5 * time.Second)
	for fenced.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if fenced.Load() == 0 {
		t.Fatal("the fenced desk was not told it was fenced")
	}
	cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
	_ = a.Close(cctx) // its held outputs never leave
	ccancel()
	sameDesk(t, db, before, "the take over", maker, taker)
	if err := b.Loop.OpenSocket(context.Background(), 1, maker.KeyHash(), false); err != nil {
		t.Fatal(err)
	}
	tr2 := db.Trade(eventsB, maker, taker)
	db.Sign(taker, tr2.Actions)
	eventsB.WaitFor(t, taker.ID, machine.EvTradeSettled, nil)
	// No record of the zombie's is in the desk journal.
	s := pgStore(t, dsn, pglog.Options{})
	l, err := s.Log(context.Background(), node.DeskJournal)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.ReadFrom(l.FirstSeq(), func(seq uint64, rec []byte) error {
		if strings.Contains(string(rec), "Zombie") {
			return fmt.Errorf("record %d is the fenced desk's registration", seq)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresHotStandby: a standby follows a running leader's journals and applies every
// record as it comes (its lag drops to 0 without a take over); taking it over fences the
// leader and starts from the standby's state, with nothing replayed from a snapshot,
// and the new leader serves everything the old one acknowledged and trades on.
func TestPostgresHotStandby(t *testing.T) {
	dsn := pgDatabase(t)
	eventsA := drive.NewEvents()
	a, da := openPG(t, pgStore(t, dsn, pglog.Options{PollInterval: 50 * time.Millisecond}), eventsA)
	maker, taker := da.Register("Maker"), da.Register("Taker")
	da.Fund(maker, 2)

	opts := options("", drive.NewEvents())
	opts.Journals = pgStore(t, dsn, pglog.Options{PollInterval: 50 * time.Millisecond})
	sb, err := node.OpenStandby(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	built, _ := sb.Checkpoints() // verified by the replay it started from
	// More records after the standby started: it must apply them as they come.
	da.Fund(taker, 2)
	_, before := settleOne(t, a, da, eventsA, maker, taker, false)
	deskSeq, ledgerSeq := a.JournalLastSeqs()
	deadline := time.Now().Add(10 * time.Second)
	for {
		dl, ll := sb.Lag()
		if dl == 0 && ll == 0 && sb.Applied.Load() > 0 {
			break
		}
		if err := sb.Err(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby lags: %d desk and %d ledger records (leader at %d, %d), applied %d", dl, ll, deskSeq, ledgerSeq, sb.Applied.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	applied := sb.Applied.Load()
	// It verified the leader's checkpoints as it followed (one every 5 inputs here).
	if v, m := sb.Checkpoints(); v <= built || m != 0 {
		t.Fatalf("the standby verified %d checkpoints (%d while it built its state) and found %d differing", v, built, m)
	}

	eventsB := drive.NewEvents()
	opts.Sink, opts.Standby, opts.Journals = eventsB, sb, nil
	b, err := node.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer closeNode(t, b)
	db := drive.Driver{T: t, Desk: b.Loop}
	// The take over started from the followed state: what the standby applied was not
	// replayed again, and no checkpoint digest differed.
	if rec := b.Recovered; rec.DigestMismatch != 0 || !rec.FromStandby {
		t.Fatalf("recovery %+v after the standby applied %d records", rec, applied)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
	_, err = a.Loop.Do(cctx, machine.RegisterStart{DisplayName: "Zombie", PublicKey: make([]byte, 32)})
	ccancel()
	if err == nil {
		t.Fatal("the old leader answered after the take over")
	}
	cctx, ccancel = context.WithTimeout(context.Background(), time.Second)
	_ = a.Close(cctx)
	ccancel()
	sameDesk(t, db, before, "the take over", maker, taker)
	if err := b.Loop.OpenSocket(context.Background(), 1, maker.KeyHash(), false); err != nil {
		t.Fatal(err)
	}
	signSettles(t, b, db, eventsB, taker, db.Trade(eventsB, maker, taker).Actions)
}

// TestPostgresStandbyBeforeGenesis: a standby started on an empty database (no leader
// ever wrote) has nothing to follow; taking it over starts a fresh desk, which writes
// the geneses.
func TestPostgresStandbyBeforeGenesis(t *testing.T) {
	dsn := pgDatabase(t)
	opts := options("", drive.NewEvents())
	opts.Journals = pgStore(t, dsn, pglog.Options{})
	sb, err := node.OpenStandby(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Err() == nil {
		t.Fatal("a standby on empty journals claims to follow them")
	}
	opts.Standby, opts.Journals = sb, nil
	n, err := node.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer closeNode(t, n)
	if !n.Recovered.Fresh || n.Recovered.FromStandby {
		t.Fatalf("recovery %+v", n.Recovered)
	}
	d := drive.Driver{T: t, Desk: n.Loop}
	d.Fund(d.Register("Solo"), 2)
	if de, le := n.Epochs(); de != 1 || le != 1 {
		t.Fatalf("epochs %d/%d, want 1/1", de, le)
	}
}
