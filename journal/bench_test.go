package journal

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

const (
	benchRecordSize = 200
	benchAppenders  = 64
	benchReplay     = 1_000_000
)

func recordsPerSecond(b *testing.B, records int) float64 {
	r := float64(records) / b.Elapsed().Seconds()
	b.ReportMetric(r, "records/s")
	return r
}

// BenchmarkAppend measures, in one run on the same disk (the test's
// temporary directory), the baselines and the journal:
//
//   - BareWriteFsync: one write of a 200-byte record and one fsync per op.
//   - BareBatch64Fsync: one write of 64 framed records and one fsync per
//     op, the best a batch of 64 can do on this disk.
//   - GroupCommit64: 64 concurrent appenders, one 200-byte record per
//     Append. x-bare and x-batch64 are its records/s as a ratio of the two
//     baselines measured just before.
//   - AsyncPipeline: one goroutine (the desk's loop) issuing AppendAsync
//     with up to 4096 records in flight.
func BenchmarkAppend(b *testing.B) {
	rec := make([]byte, benchRecordSize)
	var bare, batch64 float64

	b.Run("BareWriteFsync", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "bare"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.ReportAllocs()
		b.SetBytes(benchRecordSize)
		for b.Loop() {
			if _, err := f.Write(rec); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		bare = recordsPerSecond(b, b.N)
	})

	b.Run("BareBatch64Fsync", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "bare"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var buf []byte
		for i := range benchAppenders {
			buf = appendFrame(buf, uint64(i+1), rec)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		batch64 = recordsPerSecond(b, b.N*benchAppenders)
	})

	b.Run("GroupCommit64", func(b *testing.B) {
		l, err := OpenDir(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((benchAppenders + procs - 1) / procs)
		b.ReportAllocs()
		b.SetBytes(benchRecordSize)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := l.Append(ctx, rec); err != nil {
					b.Error(err)
					return
				}
			}
		})
		r := recordsPerSecond(b, b.N)
		if bare > 0 {
			b.ReportMetric(r/bare, "x-bare")
		}
		if batch64 > 0 {
			b.ReportMetric(r/batch64, "x-batch64")
		}
	})

	b.Run("AsyncPipeline", func(b *testing.B) {
		l, err := OpenDir(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		const window = 4096
		ring := make([]*Pending, window)
		b.ReportAllocs()
		b.SetBytes(benchRecordSize)
		i := 0
		for b.Loop() {
			if p := ring[i%window]; p != nil {
				<-p.Done()
			}
			ring[i%window] = l.AppendAsync(rec)
			i++
		}
		for _, p := range ring {
			if p != nil {
				if _, err := p.Wait(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		}
		recordsPerSecond(b, b.N)
	})
}

// BenchmarkReplay reads back a log of 1,000,000 200-byte records with
// ReadFrom (checksums verified). The files are in the page cache: this is
// the CPU cost of replay, not a cold disk read.
func BenchmarkReplay(b *testing.B) {
	dir := b.TempDir()
	l, err := OpenDir(dir, Options{Sync: SyncNone})
	if err != nil {
		b.Fatal(err)
	}
	rec := make([]byte, benchRecordSize)
	chunk := make([][]byte, 1000)
	for i := range chunk {
		chunk[i] = rec
	}
	var last *Pending
	for range benchReplay / len(chunk) {
		last = l.AppendAsync(chunk...)
	}
	if _, err := last.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	l, err = OpenDir(dir, Options{Sync: SyncNone})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()

	b.ReportAllocs()
	b.SetBytes(benchReplay * benchRecordSize)
	for b.Loop() {
		n := 0
		if err := l.ReadFrom(1, func(uint64, []byte) error {
			n++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if n != benchReplay {
			b.Fatalf("read %d records", n)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/1M")
	recordsPerSecond(b, b.N*benchReplay)
}

// BenchmarkAppendDuringSnapshot measures what a large snapshot's write does to the
// appends beside it: 8 appenders append 200-byte records (each Append waits for its
// fsync) while each op saves a snapshot of 64 or 256 MiB, and the appends' latency is
// reported (p50, p99, max in ms), beside the same appenders with no snapshot written
// ("quiet", measured first, for as long as the snapshots took).
func BenchmarkAppendDuringSnapshot(b *testing.B) {
	for _, mib := range []int{64, 256} {
		b.Run(strconv.Itoa(mib)+"MiB", func(b *testing.B) { appendDuringSnapshot(b, mib<<20) })
	}
}

func appendDuringSnapshot(b *testing.B, size int) {
	const appenders = 8
	rec := make([]byte, benchRecordSize)
	snap := make([]byte, size)
	for i := range snap {
		snap[i] = byte(i * 7)
	}
	l, err := OpenDir(b.TempDir(), Options{MaxSnapshotSize: int64(size), KeepSnapshots: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	// appendFor runs the appenders until stop closes and returns every Append's latency.
	appendFor := func(stop <-chan struct{}) []time.Duration {
		var mu sync.Mutex
		var all []time.Duration
		var wg sync.WaitGroup
		for range appenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for {
					select {
					case <-stop:
						mu.Lock()
						all = append(all, mine...)
						mu.Unlock()
						return
					default:
					}
					start := time.Now()
					if _, err := l.Append(context.Background(), rec); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(start))
				}
			}()
		}
		<-stop
		wg.Wait()
		slices.Sort(all)
		return all
	}
	report := func(lat []time.Duration, prefix string) {
		if len(lat) == 0 {
			return
		}
		at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
		b.ReportMetric(at(0.5), prefix+"p50-ms")
		b.ReportMetric(at(0.99), prefix+"p99-ms")
		b.ReportMetric(at(1), prefix+"max-ms")
	}
	if _, err := l.Append(context.Background(), rec); err != nil {
		b.Fatal(err)
	}
	// Time the snapshots first with nothing beside them, for the quiet phase's length.
	start := time.Now()
	if err := l.SaveSnapshot(l.LastSeq(), snap); err != nil {
		b.Fatal(err)
	}
	alone := time.Since(start)
	stop := make(chan struct{})
	time.AfterFunc(max(alone, 100*time.Millisecond)*time.Duration(max(b.N, 3)), func() { close(stop) })
	quiet := appendFor(stop)

	b.ResetTimer()
	stop = make(chan struct{})
	done := make(chan []time.Duration)
	go func() { done <- appendFor(stop) }()
	for b.Loop() {
		if err := l.SaveSnapshot(l.LastSeq(), snap); err != nil {
			b.Fatal(err)
		}
	}
	close(stop)
	report(<-done, "")
	report(quiet, "quiet-")
}
