package journal

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func readMem(t *testing.T, l Log, from uint64) []string {
	t.Helper()
	var out []string
	if err := l.ReadFrom(from, func(seq uint64, rec []byte) error {
		out = append(out, fmt.Sprintf("%d:%s", seq, rec))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMemLogCrashForgetsWhatWasNotSynced: a crash keeps the durable records only, fails
// the appends that waited, and the log carries on from the last durable record.
func TestMemLogCrashForgetsWhatWasNotSynced(t *testing.T) {
	m := NewMemLog(false)
	m.AppendAsync([]byte("a"), []byte("b"))
	m.Sync()
	lost := m.AppendAsync([]byte("c"))
	if got := readMem(t, m, 1); fmt.Sprint(got) != "[1:a 2:b]" {
		t.Fatalf("only durable records are read: %v", got)
	}
	m.Crash()
	<-lost.Done()
	if !errors.Is(lost.Err(), ErrClosed) {
		t.Fatalf("a lost append must fail, got %v", lost.Err())
	}
	if m.LastSeq() != 2 {
		t.Fatalf("last seq %d after the crash", m.LastSeq())
	}
	if seq, err := m.Append(context.Background(), []byte("d")); err != nil || seq != 3 {
		t.Fatalf("append after crash: %d %v", seq, err)
	}
	if got := readMem(t, m, 2); fmt.Sprint(got) != "[2:b 3:d]" {
		t.Fatalf("records %v", got)
	}
}

// TestMemLogSnapshotsAndPrune: snapshots must be durable; pruning keeps the newest two and
// drops the records behind the older of them.
func TestMemLogSnapshotsAndPrune(t *testing.T) {
	m := NewMemLog(true)
	for i := range 6 {
		m.AppendAsync([]byte{byte('a' + i)})
	}
	for _, seq := range []uint64{2, 4, 5} {
		if err := m.SaveSnapshot(seq, []byte(fmt.Sprint(seq))); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.SaveSnapshot(9, nil); err == nil {
		t.Fatal("a snapshot ahead of the log must be refused")
	}
	if err := m.Prune(); err != nil {
		t.Fatal(err)
	}
	if m.FirstSeq() != 5 {
		t.Fatalf("first seq %d after prune, want 5", m.FirstSeq())
	}
	seq, data, ok, err := m.LoadSnapshot()
	if err != nil || !ok || seq != 5 || string(data) != "5" {
		t.Fatalf("newest snapshot %d %q %v %v", seq, data, ok, err)
	}
	if err := m.ReadFrom(1, func(uint64, []byte) error { return nil }); !errors.Is(err, ErrPruned) {
		t.Fatalf("reading pruned records: %v", err)
	}
}
