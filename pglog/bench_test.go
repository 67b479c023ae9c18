package pglog

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
)

// BenchmarkAppendBackends measures, in one run, appends per second to the file journal
// (fsync on the test's temporary directory) and to PostgreSQL (synchronous commit, the
// test's own cluster on loopback), both group-committed: 64 concurrent appenders, one
// 200-byte record per Append. Sequential is one appender at a time: one fsync, or one
// commit, per record.
//
//	go test ./pglog -run '^$' -bench AppendBackends -benchtime 20000x
func BenchmarkAppendBackends(b *testing.B) {
	dsn := newDB(b)
	var commits atomic.Int64
	store := openStore(b, dsn, Options{OnCommit: func(string, int, time.Duration) { commits.Add(1) }})
	backends := []struct {
		name string
		open func(b *testing.B) journal.Shared
	}{
		{"File", func(b *testing.B) journal.Shared {
			l, err := journal.OpenDir(filepath.Join(b.TempDir(), "j"), journal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return l
		}},
		{"Postgres", func(b *testing.B) journal.Shared {
			l, err := store.Log(context.Background(), b.Name())
			if err != nil {
				b.Fatal(err)
			}
			return l
		}},
	}
	rec := make([]byte, 200)
	for _, be := range backends {
		for _, appenders := range []int{64, 1} {
			name := be.name + "/GroupCommit64"
			if appenders == 1 {
				name = be.name + "/Sequential"
			}
			b.Run(name, func(b *testing.B) {
				l := be.open(b)
				defer l.Close()
				if _, err := l.TakeOver(context.Background()); err != nil {
					b.Fatal(err)
				}
				var next atomic.Int64
				commits.Store(0)
				var wg sync.WaitGroup
				b.ResetTimer()
				for range appenders {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							if _, err := l.Append(context.Background(), rec); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
				if c := commits.Load(); c > 0 {
					b.ReportMetric(float64(b.N)/float64(c), "records/commit")
				}
			})
		}
	}
}
