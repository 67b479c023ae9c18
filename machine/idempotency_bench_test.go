package machine

import (
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// BenchmarkIdempotency measures what an Idempotency-Key costs a write, against the same
// write without one in the same run: POST /rfq by the house taker (an answered write whose
// body the record keeps). "write" applies it unkeyed and then with a new key (the lookup,
// the record and the answer's JSON; past 10,000 keys the eviction too), alternately on one
// desk, and reports both and the difference (added-ns/write); "replay" sends one key again
// and again (the lookup and the recorded answer); "record-bytes" reports the heap a record
// takes, body included (B/record: the heap of N keyed writes minus that of N unkeyed ones,
// over N).
func BenchmarkIdempotency(b *testing.B) {
	newDesk := func(b *testing.B) (*harness, CreateRFQ) {
		h := newHarnessWith(b, testConfig())
		m := h.maker("Alpha")
		return h, CreateRFQ{Req: houseTaker.req(), Direction: Sell, Qty: money.MustParse("0.01"), Base: "cbtc", Quote: "usdcx",
			InvitedMakers: []string{h.hint(m)}, TTLSeconds: 3600}
	}
	// The same write with and without a key, alternately on one desk, timed one by one:
	// both see the same state and the same collector.
	b.Run("write", func(b *testing.B) {
		h, c := newDesk(b)
		plain := make([]time.Duration, b.N)
		keyed := make([]time.Duration, b.N)
		added := make([]time.Duration, b.N)
		keys := make([]string, b.N)
		for i := range keys {
			keys[i] = "k" + strconv.Itoa(i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			in := Idempotent{Key: keys[i], Method: "POST", Path: "/rfq", BodyHash: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Cmd: c}
			t0 := time.Now()
			h.seq++
			Apply(h.d, Envelope{Seq: h.seq, At: h.now, Input: c})
			t1 := time.Now()
			h.seq++
			Apply(h.d, Envelope{Seq: h.seq, At: h.now, Input: in})
			t2 := time.Now()
			plain[i], keyed[i] = t1.Sub(t0), t2.Sub(t1)
			added[i] = keyed[i] - plain[i]
		}
		b.StopTimer()
		// Medians: a collection or a preemption by another process lands on one write of a
		// pair and would swing a mean.
		median := func(ds []time.Duration) float64 {
			slices.Sort(ds)
			return float64(ds[len(ds)/2].Nanoseconds())
		}
		b.ReportMetric(median(plain), "baseline-ns/write")
		b.ReportMetric(median(keyed), "keyed-ns/write")
		b.ReportMetric(median(added), "added-ns/write")
	})
	b.Run("replay", func(b *testing.B) {
		h, c := newDesk(b)
		in := Idempotent{Key: "k", Method: "POST", Path: "/rfq", BodyHash: "h", Cmd: c}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			h.seq++
			Apply(h.d, Envelope{Seq: h.seq, At: h.now, Input: in})
		}
	})
	b.Run("record-bytes", func(b *testing.B) {
		const n = 5000
		heap := func(keyed bool) float64 {
			h, c := newDesk(b)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range n {
				h.seq++
				var in Input = c
				if keyed {
					in = Idempotent{Key: "key-" + strconv.Itoa(i), Method: "POST", Path: "/rfq", BodyHash: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Cmd: c}
				}
				Apply(h.d, Envelope{Seq: h.seq, At: h.now, Input: in})
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(h.d)
			return float64(after.HeapAlloc) - float64(before.HeapAlloc)
		}
		// Measured once whatever b.N: the numbers are heap sizes, not a rate.
		b.ReportMetric((heap(true)-heap(false))/n, "B/record")
	})
}
