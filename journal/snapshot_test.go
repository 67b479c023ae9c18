package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func snapData(seq uint64) []byte { return fmt.Appendf(nil, "state after %d", seq) }

// saveSnapshot saves the snapshot at seq (snapData's) on l; an error fails the test.
func saveSnapshot(t testing.TB, l Log, seq uint64) {
	t.Helper()
	if err := l.SaveSnapshot(seq, snapData(seq)); err != nil {
		t.Fatal(err)
	}
}

func wantSnapshot(t *testing.T, l Log, seq uint64) {
	t.Helper()
	got, data, ok, err := l.LoadSnapshot()
	if err != nil || !ok || got != seq || !bytes.Equal(data, snapData(seq)) {
		t.Fatalf("LoadSnapshot = %d, %q, %v, %v; want %d", got, data, ok, err, seq)
	}
}

func TestSnapshotSaveLoad(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	if _, _, ok, err := l.LoadSnapshot(); ok || err != nil {
		t.Fatalf("LoadSnapshot of a new log = %v, %v", ok, err)
	}
	appendN(t, l, 1, 10)
	if err := l.SaveSnapshot(11, nil); err == nil {
		t.Fatal("SaveSnapshot past the last record succeeded")
	}
	saveSnapshot(t, l, 0)
	wantSnapshot(t, l, 0)
	saveSnapshot(t, l, 10)
	wantSnapshot(t, l, 10)
	// SaveSnapshot waits for the records it covers to be durable.
	var last *Pending
	for i := 11; i <= 200; i++ {
		last = l.AppendAsync(rec(i))
	}
	saveSnapshot(t, l, 200)
	select {
	case <-last.Done():
	default:
		t.Fatal("SaveSnapshot returned before its records were durable")
	}
	l.Close()
	l = open(t, dir, Options{})
	wantSnapshot(t, l, 200)
	if err := l.SaveSnapshot(200, nil); err != nil {
		t.Fatalf("empty snapshot: %v", err)
	}
	if seq, data, ok, err := l.LoadSnapshot(); seq != 200 || len(data) != 0 || !ok || err != nil {
		t.Fatalf("empty snapshot loaded as %d, %q, %v, %v", seq, data, ok, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveSnapshot(200, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("SaveSnapshot after Close = %v", err)
	}
}

// TestLargeSnapshotPaced: a snapshot larger than a writeback chunk is written in paced
// chunks (writePaced); sizes around the chunk's multiples, with and without syncs, load
// back whole, also after a reopen.
func TestLargeSnapshotPaced(t *testing.T) {
	for _, sync := range []SyncMode{SyncAlways, SyncNone} {
		for _, size := range []int{writebackChunk, writebackChunk + 1, 3*writebackChunk - 1, 5*writebackChunk + 17} {
			t.Run(fmt.Sprintf("sync%d/%d", sync, size), func(t *testing.T) {
				dir := t.TempDir()
				l := open(t, dir, Options{Sync: sync})
				appendN(t, l, 1, 3)
				data := make([]byte, size)
				for i := range data {
					data[i] = byte(i*31 + i>>8)
				}
				if err := l.SaveSnapshot(3, data); err != nil {
					t.Fatal(err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = open(t, dir, Options{Sync: sync})
				defer l.Close()
				seq, got, ok, err := l.LoadSnapshot()
				if err != nil || !ok || seq != 3 || !bytes.Equal(got, data) {
					t.Fatalf("LoadSnapshot = %d, %d bytes, %v, %v; want 3 and the %d bytes saved", seq, len(got), ok, err, size)
				}
			})
		}
	}
}

// TestSnapshotCrashBeforeRename: a crash after the snapshot was written to
// its temporary file but before the rename leaves the previous snapshot in
// force; the leftover file is removed at the next open.
func TestSnapshotCrashBeforeRename(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, noSync)
	appendN(t, l, 1, 20)
	saveSnapshot(t, l, 10)
	crash := errors.New("crash")
	l.beforeSnapshotRename = func() error { return crash }
	if err := l.SaveSnapshot(20, snapData(20)); !errors.Is(err, crash) {
		t.Fatalf("SaveSnapshot = %v", err)
	}
	tmp := filepath.Join(dir, snapName(20)+tmpSuffix)
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the crash left no temporary file: %v", err)
	}
	wantSnapshot(t, l, 10)
	l.Close()

	// A half-written temporary file is no better.
	os.WriteFile(filepath.Join(dir, snapName(15)+tmpSuffix), []byte("RFQDSN"), 0o644)
	l = open(t, dir, noSync)
	wantSnapshot(t, l, 10)
	if r := l.Recovery(); len(r.RemovedTemp) != 2 {
		t.Fatalf("RemovedTemp = %v", r.RemovedTemp)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("temporary file still there: %v", err)
	}
}

func TestSnapshotDamagedFallsBack(t *testing.T) {
	damages := map[string]func(path string){
		"data":      func(p string) { flipLast(p) },
		"header":    func(p string) { flipAt(p, 20) },
		"truncated": func(p string) { b, _ := os.ReadFile(p); os.WriteFile(p, b[:len(b)-1], 0o644) },
		"empty":     func(p string) { os.WriteFile(p, nil, 0o644) },
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var logs logBuffer
			l := open(t, dir, Options{Sync: SyncNone, Logger: logs.logger()})
			appendN(t, l, 1, 20)
			for _, s := range []uint64{5, 10, 15} {
				saveSnapshot(t, l, s)
			}
			damage(filepath.Join(dir, snapName(15)))
			wantSnapshot(t, l, 10)
			if !strings.Contains(logs.String(), "damaged snapshot") || !strings.Contains(logs.String(), snapName(15)) {
				t.Fatalf("no report of the damaged snapshot: %q", logs.String())
			}
		})
	}
}

func flipAt(path string, off int) {
	b, _ := os.ReadFile(path)
	b[off] ^= 1
	os.WriteFile(path, b, 0o644)
}

func flipLast(path string) {
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 1
	os.WriteFile(path, b, 0o644)
}

func TestPrune(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Sync: SyncNone, SegmentSize: 400}
	l := open(t, dir, opts)
	appendN(t, l, 1, 200)
	segsBefore := len(segFiles(t, dir))
	saveSnapshot(t, l, 50)
	// One snapshot is not enough to prune behind: no fallback would remain.
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	if n := len(segFiles(t, dir)); n != segsBefore || l.FirstSeq() != 1 {
		t.Fatalf("Prune with one snapshot removed segments: %d -> %d", segsBefore, n)
	}
	saveSnapshot(t, l, 150)
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	first := l.FirstSeq()
	if first <= 1 || first > 51 {
		t.Fatalf("after pruning behind 50 the log starts at %d", first)
	}
	if err := l.ReadFrom(1, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrPruned) {
		t.Fatalf("ReadFrom(1) after Prune = %v", err)
	}
	wantRecords(t, l, 51, 200)
	wantSnapshot(t, l, 150)

	appendN(t, l, 201, 220)
	saveSnapshot(t, l, 210)
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, snapName(50))); !os.IsNotExist(err) {
		t.Fatalf("snapshot 50 not pruned: %v", err)
	}
	first = l.FirstSeq()
	if first <= 51 || first > 151 {
		t.Fatalf("after pruning behind 150 the log starts at %d", first)
	}
	l.Close()

	// After a restart: the newest snapshot, or the older one if the newest
	// is damaged; with both damaged the state cannot be rebuilt.
	l = open(t, dir, opts)
	if r := l.Recovery(); r.FirstSeq != first || r.LastSeq != 220 {
		t.Fatalf("Recovery = %+v", r)
	}
	wantSnapshot(t, l, 210)
	wantRecords(t, l, 211, 220)
	flipLast(filepath.Join(dir, snapName(210)))
	wantSnapshot(t, l, 150)
	wantRecords(t, l, 151, 220)
	flipLast(filepath.Join(dir, snapName(150)))
	if _, _, _, err := l.LoadSnapshot(); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("LoadSnapshot with every snapshot damaged = %v", err)
	}
}

// TestSnapshotAheadOfLog: a snapshot beyond the log's end means
// acknowledged records were lost (e.g. SyncNone and a machine crash); the
// start must not paper over it.
func TestSnapshotAheadOfLog(t *testing.T) {
	a := t.TempDir()
	la := open(t, a, noSync)
	appendN(t, la, 1, 30)
	saveSnapshot(t, la, 30)
	la.Close()
	b := buildLog(t, 10, noSync)
	data, _ := os.ReadFile(filepath.Join(a, snapName(30)))
	os.WriteFile(filepath.Join(b, snapName(30)), data, 0o644)
	lb := open(t, b, noSync)
	if _, _, _, err := lb.LoadSnapshot(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "ahead of the log") {
		t.Fatalf("LoadSnapshot = %v", err)
	}
	if _, err := lb.Append(context.Background(), rec(11)); err != nil {
		t.Fatal(err)
	}
}
