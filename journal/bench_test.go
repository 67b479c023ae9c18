package journal

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
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
