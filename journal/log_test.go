package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var noSync = Options{Sync: SyncNone}

func TestAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	if got := l.LastSeq(); got != 0 {
		t.Fatalf("LastSeq of a new log = %d", got)
	}
	appendN(t, l, 1, 50)
	wantRecords(t, l, 1, 50)
	wantRecords(t, l, 17, 50)
	if got := readAll(t, l, 51); len(got) != 0 {
		t.Fatalf("ReadFrom past the end gave %d records", len(got))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, Options{})
	r := l.Recovery()
	if r.FirstSeq != 1 || r.LastSeq != 50 || r.TornTail != nil {
		t.Fatalf("Recovery = %+v", r)
	}
	appendN(t, l, 51, 60)
	wantRecords(t, l, 1, 60)
}

func TestSegmentsRoll(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Sync: SyncNone, SegmentSize: 512}
	l := open(t, dir, opts)
	appendN(t, l, 1, 100)
	// One batch spanning several segments.
	var batch [][]byte
	for i := 101; i <= 200; i++ {
		batch = append(batch, rec(i))
	}
	if seq, err := l.Append(context.Background(), batch...); err != nil || seq != 200 {
		t.Fatalf("Append batch = %d, %v", seq, err)
	}
	// A record larger than a segment gets one of its own.
	big := make([]byte, 2000)
	if seq, err := l.Append(context.Background(), big); err != nil || seq != 201 {
		t.Fatalf("Append big = %d, %v", seq, err)
	}
	if n := len(segFiles(t, dir)); n < 20 {
		t.Fatalf("%d segments, want many", n)
	}
	for _, s := range segFiles(t, dir) {
		if fi, _ := os.Stat(s); fi.Size() > 512 && fi.Size() != segHeaderSize+frameHeaderSize+2000 {
			t.Errorf("%s is %d bytes, over the segment size", s, fi.Size())
		}
	}
	wantRecords(t, l, 1, 200)
	wantRecords(t, l, 150, 200)
	l.Close()
	l = open(t, dir, opts)
	wantRecords(t, l, 1, 200)
	appendN(t, l, 202, 210)
}

func TestAppendAsyncOrder(t *testing.T) {
	l := open(t, t.TempDir(), noSync)
	var ps []*Pending
	for i := 1; i <= 100; i++ {
		p := l.AppendAsync(rec(2*i-1), rec(2*i))
		first, last := p.Seqs()
		if first != uint64(2*i-1) || last != uint64(2*i) {
			t.Fatalf("AppendAsync %d got sequences %d..%d", i, first, last)
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		<-p.Done()
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
	}
	wantRecords(t, l, 1, 200)
	if p := l.AppendAsync(); p.Err() != nil {
		t.Fatalf("empty AppendAsync: %v", p.Err())
	}
}

func TestAppendErrors(t *testing.T) {
	l := open(t, t.TempDir(), noSync)
	ctx := context.Background()
	if _, err := l.Append(ctx, make([]byte, MaxRecordSize+1)); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("too large record: %v", err)
	}
	if seq, err := l.Append(ctx, make([]byte, 0)); err != nil || seq != 1 {
		t.Fatalf("empty record: %d, %v", seq, err)
	}
	if seq, err := l.Append(ctx); err != nil || seq != 1 {
		t.Fatalf("no records: %d, %v", seq, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, rec(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if p := l.AppendAsync(rec(1)); !errors.Is(p.Err(), ErrClosed) {
		t.Fatalf("AppendAsync after Close: %v", p.Err())
	}
	if err := l.ReadFrom(1, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("ReadFrom after Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestReadFromStopsOnCallbackError(t *testing.T) {
	l := open(t, t.TempDir(), noSync)
	appendN(t, l, 1, 10)
	stop := errors.New("stop")
	n := 0
	err := l.ReadFrom(1, func(seq uint64, _ []byte) error {
		n++
		if seq == 4 {
			return stop
		}
		return nil
	})
	if err != stop || n != 4 {
		t.Fatalf("ReadFrom = %v after %d records", err, n)
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, noSync)
	var ps []*Pending
	for i := 1; i <= 1000; i++ {
		ps = append(ps, l.AppendAsync(rec(i)))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if _, err := p.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	l = open(t, dir, noSync)
	wantRecords(t, l, 1, 1000)
}

func TestBackpressure(t *testing.T) {
	// A queue of 100 bytes: appends wait for the writer, and an append
	// bigger than the queue still goes through alone.
	l := open(t, t.TempDir(), Options{Sync: SyncNone, MaxBatchBytes: 100})
	var ps []*Pending
	for i := 1; i <= 300; i++ {
		ps = append(ps, l.AppendAsync(rec(i)))
	}
	ps = append(ps, l.AppendAsync(make([]byte, 1000)))
	for _, p := range ps {
		if _, err := p.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	wantRecords(t, l, 1, 300)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Append(ctx, rec(1)); err == nil {
		// The queue may have been empty: the append was admitted and
		// Wait saw the cancelled context first or the record durable.
		t.Log("admitted")
	}
}

func TestEpoch(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{Sync: SyncNone, Epoch: 3})
	appendN(t, l, 1, 5)
	l.Close()
	if _, err := OpenDir(dir, Options{Sync: SyncNone, Epoch: 2}); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("older epoch: %v", err)
	}
	// A newer epoch starts its own segment.
	l = open(t, dir, Options{Sync: SyncNone, Epoch: 4})
	if n := len(segFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments after a new epoch, want 2", n)
	}
	l.Close()
	// Its segment is still empty: a still newer epoch takes it over.
	l = open(t, dir, Options{Sync: SyncNone, Epoch: 5})
	if n := len(segFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments after an empty epoch, want 2", n)
	}
	appendN(t, l, 6, 8)
	wantRecords(t, l, 1, 8)
	l.Close()
	b, err := os.ReadFile(filepath.Join(dir, segName(6)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := decodeSegHeader(b)
	if err != nil || h.epoch != 5 || h.firstSeq != 6 {
		t.Fatalf("header %+v, %v", h, err)
	}
}

// TestWriteFailureIsSticky: after a failed write nothing more is accepted
// until the log is reopened, and reopening recovers the durable records.
func TestWriteFailureIsSticky(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, noSync)
	appendN(t, l, 1, 5)
	l.active.Close() // the writer's next write fails
	ctx := context.Background()
	if _, err := l.Append(ctx, rec(6)); err == nil {
		t.Fatal("Append after a write failure succeeded")
	}
	if _, err := l.Append(ctx, rec(7)); err == nil || !strings.Contains(err.Error(), "no further appends") {
		t.Fatalf("second Append = %v, want the sticky failure", err)
	}
	if err := l.SaveSnapshot(5, nil); err != nil {
		t.Fatalf("SaveSnapshot of durable records: %v", err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("Close hid the write failure")
	}
	l = open(t, dir, noSync)
	wantRecords(t, l, 1, 5)
	appendN(t, l, 6, 7)
}
