package ledgersim

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkLedgerHeap measures what a large ledger costs the garbage collector: a ledger
// of 50,000 free holdings whose 100,000 retained updates fill the default bound (the
// desk's ledger after a long run, and its follower's copy), restored from its snapshot as
// a restarting desk and the ledger follower build it. It reports the ledger's live heap,
// its heap objects, and the time of a full collection with it live (less that of one
// without it), the mark work the ledger adds to every cycle.
func BenchmarkLedgerHeap(b *testing.B) {
	l, cfg, _ := bigLedger(b, 50_000)
	snap := snapshotOf(b, l)
	l = nil
	gcTime := func() time.Duration {
		best := time.Duration(1 << 62)
		for range 5 {
			start := time.Now()
			runtime.GC()
			best = min(best, time.Since(start))
		}
		return best
	}
	var heap, objects float64
	var gcWith, gcWithout time.Duration
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		without := gcTime()
		r, err := Restore(cfg, snap)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		with := gcTime()
		heap += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		objects += float64(after.HeapObjects) - float64(before.HeapObjects)
		gcWith += with
		gcWithout += without
		if n := r.RetainedUpdates(); n != 100_000 {
			b.Fatalf("%d retained updates, want the default bound of 100,000", n)
		}
		runtime.KeepAlive(r)
	}
	n := float64(b.N)
	b.ReportMetric(heap/n/1e6, "heap-MB")
	b.ReportMetric(objects/n, "objects")
	b.ReportMetric(float64((gcWith-gcWithout).Microseconds())/n/1e3, "gc-ms")
}
