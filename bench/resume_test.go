package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/transport"
	"github.com/lxzan/gws"
)

// Sizes of BenchmarkStreamResume.
const (
	resumeEvents   = machine.DefaultStreamRetentionEvents // the whole default window
	resumeRounds   = 100
	resumeMakerKey = "bench-resume-maker-key"
	resumeTakerKey = "bench-resume-taker-key"
)

// hubSink hands the loop's outputs to the server's hub, set once the server exists.
type hubSink struct{ hub atomic.Pointer[transport.Hub] }

func (s *hubSink) Deliver(out machine.Outputs) {
	if h := s.hub.Load(); h != nil {
		h.Deliver(out)
	}
}

// BenchmarkStreamResume: a maker whose window holds the default 5,000 retained events
// (rfq.created frames of a house taker's RFQs) reconnects with ?since=0 over a real
// WebSocket to an in-process desk (loop, machine, embedded ledger, transport, no journal);
// each round times the upgrade to the arrival of stream.resumed, with every replayed frame
// read and counted. It reports the rounds' p50, p99 and max (ms), and the memory of the
// window per retained event (the encoded payload, the type and the entry itself) next to
// its bound: stream_retention_events × parties.
func BenchmarkStreamResume(b *testing.B) {
	cat := []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("1"), RegistryID: "cbtc-registry"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("1000"), RegistryID: "usdcx-registry"},
	}
	adapter, parties, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: machine.Testnet, Seed: 9, Clock: drive.RealClock{}, Catalog: cat,
		House: []ledgeradapter.House{
			{Hint: "bench-maker", Role: machine.HouseMaker, KeyHash: transport.HashKey(resumeMakerKey)},
			{Hint: "bench-taker", Role: machine.HouseTaker, KeyHash: transport.HashKey(resumeTakerKey)},
		}})
	if err != nil {
		b.Fatal(err)
	}
	cfg := machine.DefaultConfig()
	cfg.Seed, cfg.Instruments = 9, cat
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 30}}
	cfg.MinNotionalUSD = money.MustParse("1")
	parties.Apply(&cfg)
	desk, err := machine.NewDesk(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var maker, taker string
	for _, h := range cfg.House {
		if h.Role == machine.HouseMaker {
			maker = h.PartyID
		} else {
			taker = h.PartyID
		}
	}
	// Fill the maker's window before the loop starts: it opens a socket (to be invitable),
	// the taker asks it for resumeEvents RFQs, the socket closes.
	now := time.Now().UTC()
	seq := uint64(0)
	apply := func(in machine.Input) machine.Outputs {
		seq++
		return machine.Apply(desk, machine.Envelope{Seq: seq, At: now, Input: in})
	}
	apply(machine.SocketOpened{Socket: 1 << 40, KeyHash: transport.HashKey(resumeMakerKey)})
	hint := desk.Parties[maker].Hint
	for i := range resumeEvents {
		out := apply(machine.CreateRFQ{Req: machine.Req{KeyHash: transport.HashKey(resumeTakerKey)}, Direction: machine.Sell,
			Qty: money.MustParse(fmt.Sprintf("0.%04d", 1+i%9000)), Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{hint}, TTLSeconds: 3600})
		if len(out.Replies) != 1 || out.Replies[0].Status != 200 {
			b.Fatalf("RFQ %d: %+v", i, out.Replies)
		}
	}
	apply(machine.SocketClosed{Socket: 1 << 40})
	window := desk.Streams[maker]
	if window == nil || window.Len() != resumeEvents {
		b.Fatalf("the maker's window holds %v events, want %d", window, resumeEvents)
	}
	// The window's memory as a restored desk holds it (each payload its JSON).
	snap, err := desk.EncodeSnapshot()
	if err != nil {
		b.Fatal(err)
	}
	restored, err := machine.Restore(snap)
	if err != nil {
		b.Fatal(err)
	}
	snap = nil
	fromSnapshot := heapOf(func() { delete(restored.Streams, maker) })
	runtime.KeepAlive(restored)
	_ = taker

	sink := &hubSink{}
	l, err := loop.New(loop.Config{Desk: desk, Ledger: adapter, Clock: drive.RealClock{}, Sink: sink, Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	l.Start()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Stop(ctx)
	}
	defer stop()
	srv := transport.New(transport.Options{Desk: l}) // the default send queue: a replay is one entry
	sink.hub.Store(srv.Hub())
	hs, host := serveLoopback(b, srv)
	defer func() { _ = hs.Close() }()
	addr := "ws://" + host + "/maker/stream?since=0"

	var lat []time.Duration
	for b.Loop() {
		lat = lat[:0]
		for range resumeRounds {
			d, err := resumeOnce(addr)
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, d)
		}
	}
	b.StopTimer()
	_ = hs.Close()
	stop()
	// The window's memory as the live desk holds it (the values emitted).
	live := heapOf(func() { delete(desk.Streams, maker) })
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "resume-p50-ms")
	b.ReportMetric(ms(lat[(len(lat)*99+99)/100-1]), "resume-p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "resume-max-ms")
	b.ReportMetric(live, "B/retained-event")
	b.ReportMetric(fromSnapshot, "B/retained-event-restored")
	b.ReportMetric(float64(resumeEvents), "retained-events")
}

// heapOf is the live heap that drop releases, per retained event (after a GC each side).
func heapOf(drop func()) float64 {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	drop()
	runtime.GC()
	runtime.ReadMemStats(&b)
	return (float64(a.HeapAlloc) - float64(b.HeapAlloc)) / resumeEvents
}

// resumeClient reads one resume: it counts the numbered frames and signals stream.resumed.
type resumeClient struct {
	frames int
	done   chan error
}

func (c *resumeClient) OnOpen(*gws.Conn) {}
func (c *resumeClient) OnClose(_ *gws.Conn, err error) {
	c.finish(fmt.Errorf("closed before stream.resumed: %v", err))
}
func (c *resumeClient) OnPing(conn *gws.Conn, p []byte) { _ = conn.WritePong(p) }
func (c *resumeClient) OnPong(*gws.Conn, []byte)        {}
func (c *resumeClient) OnMessage(_ *gws.Conn, m *gws.Message) {
	defer m.Close()
	b := m.Bytes()
	// Only the last frame is parsed: the benchmark times the desk, not a client's decoding.
	if !bytes.HasPrefix(b, []byte(`{"type":"stream.resumed"`)) {
		c.frames++
		return
	}
	var f struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		c.finish(err)
		return
	}
	if want := fmt.Sprintf(`{"from":1,"to":%d}`, resumeEvents); c.frames != resumeEvents || string(f.Payload) != want {
		c.finish(fmt.Errorf("stream.resumed %s after %d frames, want %s after %d", f.Payload, c.frames, want, resumeEvents))
		return
	}
	c.finish(nil)
}

func (c *resumeClient) finish(err error) {
	select {
	case c.done <- err:
	default:
	}
}

// resumeOnce opens a socket with since=0, waits for stream.resumed and closes it.
func resumeOnce(addr string) (time.Duration, error) {
	c := &resumeClient{done: make(chan error, 1)}
	start := time.Now()
	conn, _, err := gws.NewClient(c, &gws.ClientOption{Addr: addr, RequestHeader: http.Header{"X-Api-Key": []string{resumeMakerKey}},
		ReadMaxPayloadSize: 1 << 20})
	if err != nil {
		return 0, fmt.Errorf("dial: %w", err)
	}
	go conn.ReadLoop()
	defer func() { _ = conn.NetConn().Close() }()
	select {
	case err := <-c.done:
		if err != nil && !strings.Contains(err.Error(), "closed before") {
			return 0, err
		}
		if err != nil {
			return 0, err
		}
	case <-time.After(30 * time.Second):
		return 0, fmt.Errorf("no stream.resumed within 30s (%d frames)", c.frames)
	}
	return time.Since(start), nil
}
