package node_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// retentionPhases are the settled-trade counts at which BenchmarkHeapRetention measures
// the heap (RFQDESK_RETENTION_TRADES, comma-separated, overrides them).
func retentionPhases(b *testing.B) []int {
	spec := "10000,100000"
	if v := os.Getenv("RFQDESK_RETENTION_TRADES"); v != "" {
		spec = v
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || (len(out) > 0 && n <= out[len(out)-1]) {
			b.Fatalf("RFQDESK_RETENTION_TRADES=%q: want increasing positive counts", spec)
		}
		out = append(out, n)
	}
	return out
}

// liveHeap is the heap the desk retains at rest: the least of the heaps still reachable
// after a full collection, sampled over two seconds with nothing in flight, so that a
// snapshot being encoded or saved and the followers catching up (which come and go with
// the checkpoint schedule) do not count as retention.
func liveHeap() uint64 {
	least := uint64(math.MaxUint64)
	for i := range 5 {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		least = min(least, ms.HeapAlloc)
	}
	return least
}

// BenchmarkHeapRetention settles trades through a whole durable desk in process (the
// node: both journals without fsync, checkpoints and snapshots on their default schedule,
// the desk and ledger followers, the embedded ledger with real signatures; eight
// maker/taker pairs signing automatically) at a sustained pace of virtual time
// (retentionPace) and reports the live heap after 10,000 and after 100,000 settled
// trades, and their ratio (issue 18, F4: within 1.5×). What the desk and the ledger
// retain must be bounded by count and age, not grow with history.
// Run it once: go test ./node -run '^$' -bench HeapRetention -benchtime 1x.
func BenchmarkHeapRetention(b *testing.B) {
	phases := retentionPhases(b)
	for range b.N {
		heaps := settleAndMeasure(b, phases)
		for i, n := range phases {
			b.ReportMetric(float64(heaps[i])/(1<<20), fmt.Sprintf("heap-MB@%d", n))
		}
		if len(heaps) > 1 {
			b.ReportMetric(float64(heaps[len(heaps)-1])/float64(heaps[0]), "heap-ratio")
		}
	}
}

// writeHeapProfile saves the heap's profile (RFQDESK_RETENTION_HEAPPROFILE names the file
// prefix; each phase's count is appended), to see what a phase retains.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// retentionPace is the virtual time one settled trade takes in BenchmarkHeapRetention: a
// sustained 4 trades a second, so that 10,000 trades span 42 minutes, past every window
// the desk and the ledger retain by age (the desk's 10 minutes of closed RFQs and
// finished actions, the ledger's 30-minute deduplication window), and 100,000 trades
// seven hours. On the wall clock, 100,000 trades in process take about a minute: all of
// them would fall within those windows, which SPEC requires (closed RFQs stay readable
// for 10 minutes), and the heap would grow with them however retention is bounded.
const retentionPace = 250 * time.Millisecond

// retentionBatch is how many trades run while the virtual clock stands still; between
// batches, with nothing in flight, it moves on by the batch's pace. Within a batch no
// deadline of a trade in flight (a quote's 30 s, an execute's 5 s wait) can pass, however
// the goroutines are scheduled; between them, the desk and the ledger see the time pass
// at the next input, as they would at a Tick.
const retentionBatch = 400

// pacedClock is a virtual clock that moves only when told.
type pacedClock struct {
	base    time.Time
	elapsed atomic.Int64 // nanoseconds since base
}

func (c *pacedClock) Now() time.Time { return c.base.Add(time.Duration(c.elapsed.Load())) }

func (c *pacedClock) advance(d time.Duration) { c.elapsed.Add(int64(d)) }

func settleAndMeasure(b *testing.B, phases []int) []uint64 {
	clock := &pacedClock{base: time.Now()}
	opts := options(b.TempDir(), nil)
	opts.CheckpointEvery, opts.Clock = 0, clock
	n, s, d := openSettling(b, opts)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			b.Error(err)
		}
	}()
	ps := d.Pairs(8, n.Loop)
	var heaps []uint64
	turns := make([]int, len(ps))
	done := 0
	start := time.Now()
	for _, target := range phases {
		for done < target {
			batch := min(retentionBatch, target-done)
			if err := settleBatch(n, s, ps, turns, done, batch); err != nil {
				b.Fatal(err)
			}
			done += batch
			clock.advance(time.Duration(batch) * retentionPace)
		}
		heaps = append(heaps, liveHeap())
		if path := os.Getenv("RFQDESK_RETENTION_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, fmt.Sprintf("%s.%d", path, done))
		}
		holdings := 0
		for _, p := range ps {
			holdings += len(n.Ledger.Holdings(p[0].ID)) + len(n.Ledger.Holdings(p[1].ID))
		}
		b.Logf("%d trades settled in %s (%s virtual): live heap %.1f MB; the ledger retains %d updates (%d forgotten early), the parties hold %d holdings, the fee party %d",
			done, time.Since(start).Round(time.Second), clock.Now().Sub(clock.base).Round(time.Minute),
			float64(heaps[len(heaps)-1])/(1<<20), n.Ledger.L.RetainedUpdates(), n.Ledger.L.DedupShortened(), holdings,
			len(n.Ledger.Holdings(n.Config.FeeParty)))
	}
	return heaps
}

// settleBatch settles trades first to first+count-1, the pairs working in parallel. Each
// pair alternates its directions (turns counts its trades), so that no party's balance
// drifts however the trades fall to the pairs.
func settleBatch(n *node.Node, s *drive.Settled, ps [][2]drive.Party, turns []int, first, count int) error {
	var next atomic.Int64
	next.Store(int64(first))
	end := int64(first + count)
	var wg sync.WaitGroup
	var failed atomic.Value
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if k := next.Add(1) - 1; k >= end || failed.Load() != nil {
					return
				}
				dir := machine.Sell
				if turns[i]%2 == 1 {
					dir = machine.Buy
				}
				turns[i]++
				if err := lifecycle(n, s, p[0], p[1], dir); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}
