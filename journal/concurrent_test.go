package journal

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
)

// TestConcurrentAppenders: appenders racing each other (and a reader,
// snapshots and pruning) all get durable, contiguous, unique sequence
// numbers, each appender's in its call order, and ReadFrom reproduces the
// one order they were given.
func TestConcurrentAppenders(t *testing.T) {
	const (
		appenders = 16
		each      = 150
	)
	dir := t.TempDir()
	opts := Options{SegmentSize: 4 << 10, KeepSnapshots: 1}
	l := open(t, dir, opts)

	bySeq := make([][]byte, appenders*each+1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var prev uint64
			for i := range each {
				r := binary.LittleEndian.AppendUint32(nil, uint32(a))
				r = binary.LittleEndian.AppendUint32(r, uint32(i))
				var seq uint64
				var err error
				if i%3 == 0 {
					seq, err = l.AppendAsync(r).Wait(context.Background())
				} else {
					seq, err = l.Append(context.Background(), r)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if seq <= prev {
					t.Errorf("appender %d got %d after %d", a, seq, prev)
				}
				prev = seq
				mu.Lock()
				if bySeq[seq] != nil {
					t.Errorf("sequence %d given twice", seq)
				}
				bySeq[seq] = r
				mu.Unlock()
			}
		}()
	}
	// Readers, snapshots and pruning while the appends run.
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			from := l.FirstSeq()
			next := from
			err := l.ReadFrom(from, func(seq uint64, _ []byte) error {
				if seq != next {
					t.Errorf("reader got %d, want %d", seq, next)
				}
				next++
				return nil
			})
			if err != nil {
				t.Error(err)
				return
			}
			if last := next - 1; last > 0 {
				if err := l.SaveSnapshot(last, nil); err != nil {
					t.Error(err)
					return
				}
				if err := l.Prune(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	side.Wait()
	if t.Failed() {
		return
	}
	for seq := 1; seq < len(bySeq); seq++ {
		if bySeq[seq] == nil {
			t.Fatalf("sequence %d never given", seq)
		}
	}
	check := func(l Log) {
		t.Helper()
		from := l.FirstSeq()
		n := 0
		if err := l.ReadFrom(from, func(seq uint64, r []byte) error {
			if string(r) != string(bySeq[seq]) {
				t.Fatalf("sequence %d reads back %x, was given to %x", seq, r, bySeq[seq])
			}
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := len(bySeq) - int(from); n != want {
			t.Fatalf("read %d records from %d, want %d", n, from, want)
		}
	}
	check(l)
	l.Close()
	l = open(t, dir, opts)
	check(l)
}
