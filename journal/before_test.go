package journal

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestBeforeRunsBeforeTheWrite: a batch reaches the file only once Options.Before returned,
// its appends complete only after that, and an error from Before fails the batch and every
// later append, leaving the file as it was.
func TestBeforeRunsBeforeTheWrite(t *testing.T) {
	dir := t.TempDir()
	entered := make(chan struct{}, 1)
	release := make(chan error)
	l := open(t, dir, Options{Before: func() error {
		entered <- struct{}{}
		return <-release
	}})
	seg := l.segs[0].path
	size := func() int64 {
		st, err := os.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}

	p := l.AppendAsync(rec(1))
	<-entered
	time.Sleep(20 * time.Millisecond)
	if got := size(); got != segHeaderSize {
		t.Fatalf("segment is %d bytes while Before runs, want the header's %d", got, segHeaderSize)
	}
	if isDone(p) {
		t.Fatal("the append completed while Before runs")
	}
	release <- nil
	if _, err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRecords(t, l, 1, 1)
	written := size()

	boom := errors.New("the other journal failed")
	p = l.AppendAsync(rec(2))
	<-entered
	release <- boom
	if _, err := p.Wait(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("append after Before failed: %v, want %v", err, boom)
	}
	if _, err := l.Append(context.Background(), rec(3)); !errors.Is(err, boom) {
		t.Fatalf("a later append: %v, want the sticky %v", err, boom)
	}
	if got := size(); got != written {
		t.Fatalf("segment is %d bytes after Before failed, want the %d before it", got, written)
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
