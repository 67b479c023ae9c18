// Package journaltest is the conformance suite of journal.Shared: every backend of the
// desk's logs (the file log, the PostgreSQL log) runs the same tests, so they keep the
// same contract.
package journaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
)

// Backend is a backend under test.
type Backend struct {
	// Open opens the log called name as a new process would: a new handle on the same
	// storage. epoch is the epoch to open with, for a backend whose opener chooses it
	// (the file log); a backend that reads it from its storage ignores it.
	Open func(t *testing.T, name string, epoch uint64) (journal.Shared, error)
	// Concurrent is set when two handles may be open on one log at once (a leader and a
	// standby). Without it, a second open while the first is open must fail with
	// journal.ErrLocked.
	Concurrent bool
	// Tear, if set, damages the end of the log called name (closed) as a write cut
	// short would: the next open must cut the damaged record and keep those before it.
	Tear func(t *testing.T, name string)
}

// Run runs the whole suite against b. Every test uses logs of its own.
func Run(t *testing.T, b Backend) {
	t.Run("AppendRead", func(t *testing.T) { testAppendRead(t, b) })
	t.Run("ReplayEquality", func(t *testing.T) { testReplayEquality(t, b) })
	t.Run("ConflictingAppend", func(t *testing.T) { testConflictingAppend(t, b) })
	t.Run("StaleEpoch", func(t *testing.T) { testStaleEpoch(t, b) })
	t.Run("Follow", func(t *testing.T) { testFollow(t, b) })
	if b.Tear != nil {
		t.Run("TornTail", func(t *testing.T) { testTornTail(t, b) })
	}
}

// Rec is the suite's record number i: lengths vary, and record 0 is empty.
func Rec(i int) []byte {
	return fmt.Appendf(bytes.Repeat([]byte{byte(i)}, i%53), "r%d", i)
}

type entry struct {
	Seq uint64
	Rec []byte
}

func open(t *testing.T, b Backend, name string, epoch uint64) journal.Shared {
	t.Helper()
	l, err := b.Open(t, name, epoch)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// writer opens name and takes it over.
func writer(t *testing.T, b Backend, name string, epoch uint64) (journal.Shared, uint64) {
	t.Helper()
	l := open(t, b, name, epoch)
	e, err := l.TakeOver(context.Background())
	if err != nil {
		t.Fatalf("take over %s: %v", name, err)
	}
	if e != l.Epoch() {
		t.Fatalf("TakeOver returned epoch %d, Epoch() says %d", e, l.Epoch())
	}
	return l, e
}

func readAll(t *testing.T, l journal.Log, from uint64) []entry {
	t.Helper()
	var out []entry
	if err := l.ReadFrom(from, func(seq uint64, rec []byte) error {
		out = append(out, entry{seq, bytes.Clone(rec)})
		return nil
	}); err != nil {
		t.Fatalf("ReadFrom(%d): %v", from, err)
	}
	return out
}

func want(from, to int) []entry {
	var out []entry
	for i := from; i <= to; i++ {
		out = append(out, entry{uint64(i), Rec(i)})
	}
	return out
}

func equal(t *testing.T, what string, got, want []entry) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b entry) bool { return a.Seq == b.Seq && bytes.Equal(a.Rec, b.Rec) }) {
		t.Fatalf("%s: got %d records %v, want %d %v", what, len(got), brief(got), len(want), brief(want))
	}
}

func brief(es []entry) string {
	if len(es) > 6 {
		return fmt.Sprintf("%v … %v", es[:3], es[len(es)-3:])
	}
	return fmt.Sprint(es)
}

func appendRange(t *testing.T, l journal.Log, from, to int) {
	t.Helper()
	var recs [][]byte
	for i := from; i <= to; i++ {
		recs = append(recs, Rec(i))
	}
	last, err := l.Append(context.Background(), recs...)
	if err != nil {
		t.Fatalf("Append(%d..%d): %v", from, to, err)
	}
	if last != uint64(to) {
		t.Fatalf("Append(%d..%d) returned last sequence %d", from, to, last)
	}
}

func testAppendRead(t *testing.T, b Backend) {
	l, _ := writer(t, b, "append-read", 1)
	if got := l.LastSeq(); got != 0 {
		t.Fatalf("empty log: LastSeq %d", got)
	}
	if got := l.FirstSeq(); got != 1 {
		t.Fatalf("empty log: FirstSeq %d", got)
	}
	if n, err := l.Append(context.Background()); err != nil || n != 0 {
		t.Fatalf("empty Append: %d, %v", n, err)
	}
	appendRange(t, l, 1, 1)
	appendRange(t, l, 2, 4)
	// Many appenders at once: sequence numbers are given in call order and every append
	// becomes durable (group commit).
	var ps []*journal.Pending
	for i := 5; i <= 200; i++ {
		ps = append(ps, l.AppendAsync(Rec(i)))
	}
	for i, p := range ps {
		first, last := p.Seqs()
		if first != uint64(i+5) || last != first {
			t.Fatalf("AppendAsync %d got sequences %d..%d", i+5, first, last)
		}
		if _, err := p.Wait(context.Background()); err != nil {
			t.Fatalf("AppendAsync %d: %v", i+5, err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := l.Append(context.Background(), []byte("concurrent")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Append: %v", err)
	}
	if got := l.LastSeq(); got != 400 {
		t.Fatalf("LastSeq %d, want 400", got)
	}
	got := readAll(t, l, 0)
	equal(t, "ReadFrom(0)", got[:200], want(1, 200))
	for _, e := range got[200:] {
		if string(e.Rec) != "concurrent" {
			t.Fatalf("record %d: %q", e.Seq, e.Rec)
		}
	}
	equal(t, "ReadFrom(150)", readAll(t, l, 150)[:51], want(150, 200))
	if got := readAll(t, l, 401); len(got) != 0 {
		t.Fatalf("ReadFrom past the end: %v", got)
	}
	stop := errors.New("stop")
	n := 0
	if err := l.ReadFrom(1, func(uint64, []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("ReadFrom stopped by fn: %v after %d records", err, n)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := l.Append(context.Background(), Rec(1)); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
}

func testReplayEquality(t *testing.T, b Backend) {
	const name = "replay"
	l, e := writer(t, b, name, 1)
	appendRange(t, l, 1, 50)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
	if _, err := l.Append(context.Background(), big); err != nil {
		t.Fatalf("Append a large record: %v", err)
	}
	if err := l.SaveSnapshot(20, []byte("state@20")); err != nil {
		t.Fatalf("SaveSnapshot(20): %v", err)
	}
	if err := l.SaveSnapshot(40, []byte("state@40")); err != nil {
		t.Fatalf("SaveSnapshot(40): %v", err)
	}
	before := readAll(t, l, 1)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r, _ := writer(t, b, name, e)
	equal(t, "records after reopening", readAll(t, r, 1), before)
	if r.LastSeq() != 51 {
		t.Fatalf("LastSeq after reopening: %d", r.LastSeq())
	}
	seq, data, ok, err := r.LoadSnapshot()
	if err != nil || !ok || seq != 40 || string(data) != "state@40" {
		t.Fatalf("LoadSnapshot: %d %q %v %v, want 40 state@40", seq, data, ok, err)
	}
	appendRange(t, r, 52, 60)
	if err := r.SaveSnapshot(55, []byte("state@55")); err != nil {
		t.Fatalf("SaveSnapshot(55): %v", err)
	}
	if err := r.Prune(); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	// Two snapshots are kept (40 and 55): the records the older one covers may go.
	first := r.FirstSeq()
	if first < 2 || first > 41 {
		t.Fatalf("FirstSeq after Prune: %d, want 2..41", first)
	}
	if err := r.ReadFrom(1, func(uint64, []byte) error { return nil }); !errors.Is(err, journal.ErrPruned) {
		t.Fatalf("ReadFrom(1) after Prune: %v, want ErrPruned", err)
	}
	equal(t, "records after Prune", readAll(t, r, 52), want(52, 60))
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r2, _ := writer(t, b, name, e+1)
	if r2.FirstSeq() != first || r2.LastSeq() != 60 {
		t.Fatalf("after reopening a pruned log: first %d last %d, want %d 60", r2.FirstSeq(), r2.LastSeq(), first)
	}
	seq, data, ok, err = r2.LoadSnapshot()
	if err != nil || !ok || seq != 55 || string(data) != "state@55" {
		t.Fatalf("LoadSnapshot after Prune: %d %q %v %v", seq, data, ok, err)
	}
}

func testConflictingAppend(t *testing.T, b Backend) {
	const name = "conflict"
	a, ea := writer(t, b, name, 1)
	appendRange(t, a, 1, 10)
	if !b.Concurrent {
		if l, err := b.Open(t, name, ea); !errors.Is(err, journal.ErrLocked) {
			if err == nil {
				_ = l.Close()
			}
			t.Fatalf("second open of a held log: %v, want ErrLocked", err)
		}
		return
	}
	// b takes over while a still believes it leads: a's next append (at the same head,
	// under the older epoch) must be refused, and so must every later one.
	c, ec := writer(t, b, name, 0)
	if ec <= ea {
		t.Fatalf("take over gave epoch %d, not above %d", ec, ea)
	}
	if c.LastSeq() != 10 {
		t.Fatalf("new writer's LastSeq %d, want 10", c.LastSeq())
	}
	if _, err := a.Append(context.Background(), []byte("zombie")); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("fenced writer's Append: %v, want ErrFenced", err)
	}
	if _, err := a.Append(context.Background(), []byte("zombie again")); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("fenced writer's second Append: %v, want ErrFenced", err)
	}
	appendRange(t, c, 11, 20)
	equal(t, "the log after the conflict", readAll(t, c, 1), want(1, 20))
	// Both racing at once: exactly one writer's records are in the log after 20.
	d, _ := writer(t, b, name, 0)
	var wg sync.WaitGroup
	var cErr, dErr error
	wg.Add(2)
	go func() { defer wg.Done(); _, cErr = c.Append(context.Background(), []byte("c")) }()
	go func() { defer wg.Done(); _, dErr = d.Append(context.Background(), []byte("d")) }()
	wg.Wait()
	if !errors.Is(cErr, journal.ErrFenced) || dErr != nil {
		t.Fatalf("race after a take over: old writer %v (want ErrFenced), new writer %v", cErr, dErr)
	}
	got := readAll(t, d, 21)
	if len(got) != 1 || string(got[0].Rec) != "d" {
		t.Fatalf("records after 20: %v, want only the new writer's", got)
	}
}

func testStaleEpoch(t *testing.T, b Backend) {
	const name = "stale"
	a, ea := writer(t, b, name, 1)
	appendRange(t, a, 1, 5)
	if err := a.SaveSnapshot(5, []byte("a")); err != nil {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	if !b.Concurrent {
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		c, ec := writer(t, b, name, ea)
		if ec <= ea {
			t.Fatalf("take over gave epoch %d, not above %d", ec, ea)
		}
		appendRange(t, c, 6, 6)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if l, err := b.Open(t, name, ea); !errors.Is(err, journal.ErrStaleEpoch) {
			if err == nil {
				_ = l.Close()
			}
			t.Fatalf("open under epoch %d after epoch %d wrote: %v, want ErrStaleEpoch", ea, ec, err)
		}
		return
	}
	c, _ := writer(t, b, name, 0)
	// A fenced writer writes nothing: no record, no snapshot, no pruning.
	if err := a.SaveSnapshot(5, []byte("zombie")); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("fenced SaveSnapshot: %v, want ErrFenced", err)
	}
	if err := a.Prune(); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("fenced Prune: %v, want ErrFenced", err)
	}
	p := a.AppendAsync([]byte("zombie"))
	if _, err := p.Wait(context.Background()); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("fenced AppendAsync: %v, want ErrFenced", err)
	}
	seq, data, ok, err := c.LoadSnapshot()
	if err != nil || !ok || seq != 5 || string(data) != "a" {
		t.Fatalf("LoadSnapshot: %d %q %v %v", seq, data, ok, err)
	}
	equal(t, "the log", readAll(t, c, 1), want(1, 5))
}

func testFollow(t *testing.T, b Backend) {
	const name = "follow"
	w, e := writer(t, b, name, 1)
	appendRange(t, w, 1, 5)
	f := w
	if b.Concurrent {
		f = open(t, b, name, e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var got []entry
	done := make(chan error, 1)
	go func() {
		done <- f.Follow(ctx, 3, func(seq uint64, rec []byte) error {
			mu.Lock()
			got = append(got, entry{seq, bytes.Clone(rec)})
			mu.Unlock()
			return nil
		})
	}()
	for i := 6; i <= 61; i += 5 {
		appendRange(t, w, i, i+4)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 63 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow after its context ended: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	equal(t, "followed records", got, want(3, 65))
	// An error from fn ends the follow.
	stop := errors.New("stop")
	if err := f.Follow(context.Background(), 1, func(uint64, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("Follow stopped by fn: %v", err)
	}
}

func testTornTail(t *testing.T, b Backend) {
	const name = "torn"
	l, e := writer(t, b, name, 1)
	appendRange(t, l, 1, 8)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b.Tear(t, name)
	r, _ := writer(t, b, name, e)
	equal(t, "records after the cut", readAll(t, r, 1), want(1, 7))
	appendRange(t, r, 8, 9)
	equal(t, "records after appending again", readAll(t, r, 1), want(1, 9))
}
