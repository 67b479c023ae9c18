package machine

import (
	"testing"
	"time"
)

// benchRounds is how many RFQs the benchmarks' session runs.
const benchRounds = 150

// benchSession drives a desk through a recorded session: three makers register and stream,
// then benchRounds RFQs of the house taker, each quoted live by all three; a third are
// accepted and settle, a third cancelled, a third left open (the first half of those
// expire midway). It returns the desk at the end and every envelope it applied.
func benchSession(b *testing.B) (*Desk, []Envelope) {
	b.Helper()
	var log []Envelope
	h := newHarnessWith(b, testConfig())
	h.log = &log
	makers := []actor{h.maker("Alpha"), h.maker("Beta"), h.maker("Gamma")}
	for i := range benchRounds {
		dir := Sell
		if i%2 == 1 {
			dir = Buy
		}
		rfq := h.newRFQ(houseTaker, dir, "0.01", 60, makers...)
		var quotes []string
		for j, m := range makers {
			quotes = append(quotes, h.live(m, rfq.RfqID, []string{"60000", "59990", "60010"}[j]).QuoteID)
		}
		switch i % 3 {
		case 0:
			h.accept(houseTaker, quotes[0])
		case 1:
			h.ok(h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: rfq.RfqID}), 204)
		}
		h.advance(100 * time.Millisecond)
		if i == benchRounds/2 {
			h.advance(61 * time.Second)
		}
	}
	return h.d, log
}

// BenchmarkApply replays the recorded session of benchSession into a new desk: the cost
// of Apply over registrations, RFQs, quotes, signatures, accepts, settlements, cancels and
// expiries, without the fake ledger's signature checks.
func BenchmarkApply(b *testing.B) {
	_, log := benchSession(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		d, err := NewDesk(testConfig())
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range log {
			Apply(d, e)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(log)), "ns/input")
}

// BenchmarkSnapshot encodes, digests and restores the desk at the end of benchSession.
func BenchmarkSnapshot(b *testing.B) {
	d, _ := benchSession(b)
	snap, err := d.EncodeSnapshot()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"encode", func() error { _, err := d.EncodeSnapshot(); return err }},
		{"digest", func() error { _, err := d.Digest(); return err }},
		{"restore", func() error { _, err := Restore(snap); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(snap)))
			b.ReportAllocs()
			for range b.N {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
