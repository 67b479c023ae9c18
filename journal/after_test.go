package journal

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestAppendAfterWaitsForItsPrerequisite: records appended after another log's append reach
// the file only once that append is done, and with them every record queued in the same
// batch; records with no prerequisite do not wait for one of an earlier batch; and a
// prerequisite that failed fails the batch and every later append, leaving the file as it
// was.
func TestAppendAfterWaitsForItsPrerequisite(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	seg := l.segs[0].path
	size := func() int64 {
		st, err := os.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}

	other, complete := NewPending(7, 7)
	p := l.AppendAsyncAfter(other, rec(1))
	time.Sleep(20 * time.Millisecond)
	q := l.AppendAsync(rec(2)) // queued behind the waiting batch
	time.Sleep(20 * time.Millisecond)
	if got := size(); got != segHeaderSize {
		t.Fatalf("segment is %d bytes while the prerequisite is pending, want the header's %d", got, segHeaderSize)
	}
	if isDone(p) || isDone(q) {
		t.Fatal("an append completed while the prerequisite of the first is pending")
	}
	complete(nil)
	if _, err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !isDone(p) || p.Err() != nil {
		t.Fatalf("the first append after the prerequisite: done %v, err %v", isDone(p), p.Err())
	}
	wantRecords(t, l, 1, 2)

	// Two appends queued together (behind a batch that waits) with prerequisites of one
	// log, one done and a newer one not: their batch waits for the newer.
	blocker, release := NewPending(8, 8)
	old, completeOld := NewPending(9, 9)
	completeOld(nil)
	newer, completeNewer := NewPending(10, 10)
	l.AppendAsyncAfter(blocker, rec(3))
	time.Sleep(20 * time.Millisecond)
	l.AppendAsyncAfter(newer, rec(4))
	q = l.AppendAsyncAfter(old, rec(5))
	release(nil)
	time.Sleep(20 * time.Millisecond)
	if isDone(q) {
		t.Fatal("a batch was written before the newest of its prerequisites was done")
	}
	completeNewer(nil)
	if _, err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRecords(t, l, 1, 5)
	written := size()

	boom := errors.New("the other journal failed")
	failing, fail := NewPending(11, 11)
	p = l.AppendAsyncAfter(failing, rec(6))
	fail(boom)
	if _, err := p.Wait(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("append after a failed prerequisite: %v, want %v", err, boom)
	}
	if _, err := l.Append(context.Background(), rec(7)); !errors.Is(err, boom) {
		t.Fatalf("a later append: %v, want the sticky %v", err, boom)
	}
	if got := size(); got != written {
		t.Fatalf("segment is %d bytes after the prerequisite failed, want the %d before it", got, written)
	}
}

func isDone(p *Pending) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}
