package machine

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/wire"
	"github.com/deskco/rfqdesk/money"
)

// BenchmarkStreamWindow reports the live heap (bytes and objects) per retained event of a
// party's window of 5,000 rfq.created events, after 15,000 emitted (the window sliding, as
// in a long run), as the live desk holds it (Apply), as its follower holds it
// (ApplyQuiet), and as a restarted desk reads it from its snapshot (with a decoder that
// allocates each string: the bulk one Restore uses keeps the whole snapshot's text while
// the party's id, a map key, lives, which would hide the window's own cost); and
// the allocations of one more event retained (and the oldest dropped) in the steady
// state, quietly. It uses only what the window's code had before it was compact, so that
// it runs against both.
func BenchmarkStreamWindow(b *testing.B) {
	const n = 5000
	cfg := testConfig()
	cfg.StreamRetentionEvents = n
	cfg.StreamRetention = time.Hour
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	rfq := func(i int) RfqDTO {
		return RfqDTO{RfqID: fmt.Sprintf("rfq-%032x", i), Taker: "taker::1220" + fmt.Sprintf("%064x", 7), Direction: Sell,
			Qty: money.MustParse(fmt.Sprintf("0.%04d", 1+i%9000)), Base: "cbtc", Quote: "usdcx",
			Deadline: WireTime(start.Add(time.Hour)), InvitedMakers: []string{"maker::1220" + fmt.Sprintf("%064x", 9)}, FeeBps: 30, Open: true}
	}
	const emitted = 3 * n
	payloads := make([]RfqDTO, emitted+1)
	for i := range payloads {
		payloads[i] = rfq(i)
	}
	fill := func(quiet bool) *Desk {
		d := &Desk{Cfg: cfg, Now: start}
		a := &applier{d: d, out: &Outputs{}, quiet: quiet}
		for i := range emitted {
			d.Now = d.Now.Add(time.Millisecond)
			a.sequence("p", EvRfqCreated, payloads[i])
		}
		return d
	}
	// measure is the heap that build's result holds, per event: bytes and objects.
	measure := func(build func() any) (float64, float64) {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		v := build()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		runtime.KeepAlive(v)
		return (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / n, (float64(m1.HeapObjects) - float64(m0.HeapObjects)) / n
	}
	e := &encoder{}
	if err := writeStreamsSection(e, fill(false).Streams); err != nil {
		b.Fatal(err)
	}
	snap := e.B
	var sums [7]float64
	for b.Loop() {
		lb, lo := measure(func() any { return fill(false) })
		qb, qo := measure(func() any { return fill(true) })
		rb, ro := measure(func() any { return readStreamsSection(wire.NewDecoder(snap)) })
		d := fill(true)
		a := &applier{d: d, out: &Outputs{}, quiet: true}
		allocs := testing.AllocsPerRun(100, func() {
			d.Now = d.Now.Add(time.Millisecond)
			a.sequence("p", EvRfqCreated, payloads[emitted])
		})
		for i, v := range []float64{lb, lo, qb, qo, rb, ro, allocs} {
			sums[i] += v
		}
	}
	for i, unit := range []string{"live-B/event", "live-objects/event", "quiet-B/event", "quiet-objects/event",
		"restored-B/event", "restored-objects/event", "allocs/quiet-event"} {
		b.ReportMetric(sums[i]/float64(b.N), unit)
	}
}
