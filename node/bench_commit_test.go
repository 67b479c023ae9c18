package node_test

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/cputime"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
)

// syncCounter is a node.Observer counting each journal's fsyncs.
type syncCounter struct{ desk, ledger atomic.Int64 }

func (c *syncCounter) LedgerCall(machine.LedgerOp, time.Duration, string) {}

func (c *syncCounter) JournalSync(name string, _ int, _ time.Duration) {
	if name == "desk" {
		c.desk.Add(1)
	} else {
		c.ledger.Add(1)
	}
}

// BenchmarkLifecycleAlone runs one lifecycle at a time on a node whose journals fsync (the
// lowest load there is: every input and every ledger call commits alone) and reports the
// fsyncs of each journal, the time and the CPU a lifecycle costs: what a trade pays for its
// commits and the hand-offs around them, without the transport.
func BenchmarkLifecycleAlone(b *testing.B) {
	opts := options(b.TempDir(), nil)
	opts.Sync, opts.CheckpointEvery = journal.SyncAlways, 0
	var c syncCounter
	opts.Observer = &c
	n, s, d := openSettling(b, opts)
	defer closeWithin(b, n, 10*time.Second)
	pair := d.Pairs(1, n.Loop)[0]
	if err := lifecycle(n, s, pair[0], pair[1], machine.Sell); err != nil {
		b.Fatal(err)
	}
	desk0, ledger0 := c.desk.Load(), c.ledger.Load()
	cpu, switches := cputime.Self(), contextSwitches(b)
	b.ResetTimer()
	for i := range b.N {
		dir := machine.Sell
		if i%2 == 1 {
			dir = machine.Buy
		}
		if err := lifecycle(n, s, pair[0], pair[1], dir); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cputime.Self()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(contextSwitches(b)-switches)/float64(b.N), "ctxsw/op")
	b.ReportMetric(float64(c.desk.Load()-desk0)/float64(b.N), "desk-fsyncs/op")
	b.ReportMetric(float64(c.ledger.Load()-ledger0)/float64(b.N), "ledger-fsyncs/op")
}

// contextSwitches is how many times the process's threads gave up the CPU or were made to,
// so far: each is a thread that slept (a goroutine handed work to one whose thread sleeps,
// or waited for one) or was preempted.
func contextSwitches(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Nvcsw + ru.Nivcsw
}
