package journal

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestOnSyncCountsRecords: every fsync'd group commit is reported with the records it carried
// (all of them, once) and a duration; with SyncNone nothing is reported.
func TestOnSyncCountsRecords(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		var mu sync.Mutex
		records, calls := 0, 0
		l, err := OpenDir(t.TempDir(), Options{Sync: mode, OnSync: func(n int, took time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			records += n
			calls++
			if n <= 0 || took < 0 {
				t.Errorf("OnSync(%d, %v)", n, took)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := l.Append(ctx, []byte("a"), []byte("b"), []byte("c")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctx, []byte("d")); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		switch {
		case mode == SyncAlways && (records != 4 || calls < 1 || calls > 2):
			t.Errorf("SyncAlways: %d records in %d calls, want 4 in 1 or 2", records, calls)
		case mode == SyncNone && calls != 0:
			t.Errorf("SyncNone: %d calls, want none", calls)
		}
		mu.Unlock()
	}
}
