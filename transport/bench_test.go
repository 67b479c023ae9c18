package transport

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// benchEvent is a typical party-wide event: a quote as maker or taker sees it.
var benchEvent = machine.Event{Party: "alice", Type: machine.EvQuoteCreated, Payload: machine.QuoteDTO{
	QuoteID: "q_0123456789abcdef", RfqID: "rfq_0123456789abcdef", Maker: "maker-1-abc123",
	Price: money.MustParse("101234.5"), ValidUntil: machine.WireTime(time.Unix(1767225600, 0)),
	Status: "pending", AnchorCids: []string{"00aa", "00bb"},
}}

// benchHub is a hub with n sockets bound to "alice" whose queues the benchmark drains
// itself (no network), so Deliver's own cost is measured.
func benchHub(n int) (*Hub, []*socket) {
	h := &Hub{
		cfg:     hubConfig{log: slog.New(slog.DiscardHandler), metrics: newMetrics(), maxPerParty: n, sendQueue: 16},
		sockets: map[uint64]*socket{}, byParty: map[string]map[uint64]*socket{}, stop: make(chan struct{}),
	}
	var socks []*socket
	for i := 1; i <= n; i++ {
		s := &socket{id: uint64(i), queue: make(chan frame, 16), kill: make(chan struct{})}
		h.sockets[s.id] = s
		h.bindLocked(machine.SocketBinding{Socket: s.id, Party: "alice"})
		socks = append(socks, s)
	}
	return h, socks
}

// BenchmarkDeliver measures one party-wide event delivered to n sockets, against the
// baseline of encoding that event once (b.ReportMetric "x-encode" is the ratio of the two,
// measured in the same run): encoding once per event keeps fan-out near the cost of one
// encode.
func BenchmarkDeliver(b *testing.B) {
	encode := func() {
		if _, err := json.Marshal(struct {
			Type    string `json:"type"`
			Payload any    `json:"payload"`
		}{benchEvent.Type, benchEvent.Payload}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 1000; i++ { // warm up
		encode()
	}
	const rounds = 20000
	start := time.Now()
	for i := 0; i < rounds; i++ {
		encode()
	}
	encodeNs := float64(time.Since(start).Nanoseconds()) / rounds
	out := machine.Outputs{Events: []machine.Event{benchEvent}}
	for _, n := range []int{1, 16} {
		b.Run("sockets="+strconv.Itoa(n), func(b *testing.B) {
			h, socks := benchHub(n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Deliver(out)
				for _, s := range socks {
					<-s.queue
				}
			}
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(perOp/encodeNs, "x-encode")
		})
	}
}
