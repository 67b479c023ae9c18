package machine

import (
	"fmt"
	"runtime"
	"testing"
)

// pendingQuotes is how many quotes BenchmarkPendingActions leaves waiting on their
// makers' signatures.
const pendingQuotes = 1000

// pendingSession makes pendingQuotes quotes (10 makers on 100 RFQs) whose allocations are
// prepared and whose actions wait unsigned, against a fake ledger that answers prepares
// with a blob of an allocation's size (6 KiB; ledgersim's is 6,143 bytes) or, with noBlob,
// with a prepared id only. It returns the desk, the envelopes applied and the heap the
// session left live.
func pendingSession(b *testing.B, noBlob bool) (*Desk, []Envelope, uint64) {
	b.Helper()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var log []Envelope
	h := newHarnessWith(b, testConfig())
	h.ledger.noBlob = noBlob
	h.log = &log
	makers := make([]actor, 10)
	for i := range makers {
		makers[i] = h.maker(fmt.Sprintf("Maker %d", i))
	}
	for i := range pendingQuotes / len(makers) {
		dir := Sell
		if i%2 == 1 {
			dir = Buy
		}
		rfq := h.newRFQ(houseTaker, dir, "0.01", 600, makers...)
		for j, m := range makers {
			h.submit(m, rfq.RfqID, fmt.Sprint(60000+j))
		}
	}
	h.replies, h.events = nil, nil // the harness's own records are not the desk's
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(h)
	return h.d, log, after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
}

// BenchmarkPendingActions reports what a pending action costs the desk with the prepared
// transaction kept as an opaque blob (after) and with a prepared id only (before): live
// heap, journal bytes (the encoded records of the whole session) and snapshot bytes, each
// per pending action, and after/before ratios, in one run:
//
//	go test ./machine -run '^$' -bench PendingActions -benchmem -benchtime 1x
func BenchmarkPendingActions(b *testing.B) {
	type cost struct{ heap, journal, snapshot float64 }
	measure := func(noBlob bool) cost {
		d, log, heap := pendingSession(b, noBlob)
		n := float64(len(d.Actions))
		if n < pendingQuotes {
			b.Fatalf("%d pending actions, want at least %d", len(d.Actions), pendingQuotes)
		}
		journal := 0
		for _, e := range log {
			rec, err := EncodeEnvelope(e)
			if err != nil {
				b.Fatal(err)
			}
			journal += len(rec)
		}
		snap, err := d.EncodeSnapshot()
		if err != nil {
			b.Fatal(err)
		}
		return cost{heap: float64(heap) / n, journal: float64(journal) / n, snapshot: float64(len(snap)) / n}
	}
	b.ReportAllocs()
	var before, after cost
	for range b.N {
		before, after = measure(true), measure(false)
	}
	b.ReportMetric(before.heap, "heap-B/action-before")
	b.ReportMetric(after.heap, "heap-B/action")
	b.ReportMetric(after.heap/before.heap, "heap-ratio")
	b.ReportMetric(before.journal, "journal-B/action-before")
	b.ReportMetric(after.journal, "journal-B/action")
	b.ReportMetric(after.journal/before.journal, "journal-ratio")
	b.ReportMetric(before.snapshot, "snapshot-B/action-before")
	b.ReportMetric(after.snapshot, "snapshot-B/action")
	b.ReportMetric(after.snapshot/before.snapshot, "snapshot-ratio")
}
