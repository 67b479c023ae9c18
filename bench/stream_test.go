package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/transport"
	"github.com/lxzan/gws"
)

// Sizes of BenchmarkStream.
const (
	streamSockets = 10000
	fanoutSockets = 1000
	fanoutRounds  = 20
	childEnv      = "RFQDESK_BENCH_STREAM_SERVER"
)

// childDesk is the desk behind the stream server of the child process: it binds each
// socket to a party of its own (the key's hash) and answers nothing else.
type childDesk struct {
	hub     atomic.Pointer[transport.Hub]
	mu      sync.Mutex
	parties []string
}

func (d *childDesk) Do(context.Context, machine.Command_) (machine.Reply, error) {
	return machine.Reply{Status: 200, Body: machine.OKDTO{OK: true}}, nil
}

func (d *childDesk) Read(context.Context, string, machine.Query) (machine.Reply, error) {
	return machine.Reply{Status: 200, Body: machine.OKDTO{OK: true}}, nil
}

func (d *childDesk) OpenSocket(_ context.Context, socket uint64, keyHash string, cancelOnDisconnect bool) error {
	d.mu.Lock()
	d.parties = append(d.parties, keyHash)
	d.mu.Unlock()
	d.hub.Load().Deliver(machine.Outputs{Bindings: []machine.SocketBinding{{Socket: socket, Party: keyHash}}})
	return nil
}

func (d *childDesk) CloseSocket(context.Context, uint64) error { return nil }

// raiseNoFile lifts the open-file limit to its hard limit (10,000 sockets need 10,000
// descriptors on each side).
func raiseNoFile() error {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return err
	}
	r.Cur = r.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return err
	}
	if r.Cur < streamSockets+1000 {
		return fmt.Errorf("open-file limit %d is below %d", r.Cur, streamSockets+1000)
	}
	return nil
}

// rssBytes reads the process's resident set size.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestStreamServerChild is the stream server of BenchmarkStream, run in a process of its
// own so that its memory is the server's alone. It does nothing unless the benchmark
// started it. Protocol on stdin/stdout, one line each: it prints "addr <host:port>", then
// answers "mem" with "mem <go bytes in use> <rss bytes>" and "fanout <n>" (an rfq.created
// to each of the first n parties, its id carrying the send time) with "sent".
func TestStreamServerChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("run by BenchmarkStream")
	}
	if err := raiseNoFile(); err != nil {
		t.Fatal(err)
	}
	desk := &childDesk{}
	srv := transport.New(transport.Options{Desk: desk, MaxSockets: streamSockets + 100})
	desk.hub.Store(srv.Hub())
	_, host := serveLoopback(t, srv)
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "addr %s\n", host)
	out.Flush()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && f[0] == "mem":
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(out, "mem %d %d\n", ms.HeapInuse+ms.StackInuse, rssBytes())
		case len(f) == 2 && f[0] == "fanout":
			n, _ := strconv.Atoi(f[1])
			desk.mu.Lock()
			parties := desk.parties[:min(n, len(desk.parties))]
			desk.mu.Unlock()
			rfq := machine.RfqDTO{RfqID: "t" + strconv.FormatInt(time.Now().UnixNano(), 10), Taker: "taker-0-abc123",
				Direction: machine.Sell, Qty: money.MustParse("0.001"), Base: "cbtc", Quote: "usdcx",
				Deadline: machine.WireTime(time.Now().Add(time.Minute)), InvitedMakers: []string{"maker-1-abc123"}, FeeBps: 30, Open: true}
			evs := make([]machine.Event, len(parties))
			for i, p := range parties { // one event per invited maker, as the desk emits them
				evs[i] = machine.Event{Party: p, Type: machine.EvRfqCreated, Payload: rfq}
			}
			desk.hub.Load().Deliver(machine.Outputs{Events: evs})
			fmt.Fprintln(out, "sent")
		case len(f) == 1 && f[0] == "quit":
			return
		}
		out.Flush()
	}
}

// streamClient is one socket of the benchmark: it answers pings and records when each
// rfq.created arrived, measured against the send time in its id.
type streamClient struct {
	lat chan<- time.Duration
}

func (c *streamClient) OnOpen(*gws.Conn)             {}
func (c *streamClient) OnClose(*gws.Conn, error)     {}
func (c *streamClient) OnPong(*gws.Conn, []byte)     {}
func (c *streamClient) OnPing(s *gws.Conn, p []byte) { _ = s.WritePong(p) }
func (c *streamClient) OnMessage(_ *gws.Conn, m *gws.Message) {
	now := time.Now()
	defer m.Close()
	b := m.Bytes()
	i := bytes.Index(b, []byte(`"rfqId":"t`))
	if i < 0 {
		return
	}
	rest := b[i+len(`"rfqId":"t`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return
	}
	sent, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return
	}
	select {
	case c.lat <- now.Sub(time.Unix(0, sent)):
	default:
	}
}

// child is the running stream server process.
type child struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	addr string
}

func (c *child) ask(b *testing.B, line string) []string {
	b.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		b.Fatal(err)
	}
	for c.out.Scan() {
		if f := strings.Fields(c.out.Text()); len(f) > 0 && (f[0] == "mem" || f[0] == "sent") {
			return f
		}
	}
	b.Fatalf("stream server ended: %v", c.out.Err())
	return nil
}

func startChild(b *testing.B) *child {
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamServerChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	b.Cleanup(func() {
		_, _ = fmt.Fprintln(in, "quit")
		_ = in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for c.out.Scan() {
		if f := strings.Fields(c.out.Text()); len(f) == 2 && f[0] == "addr" {
			c.addr = f[1]
			return c
		}
	}
	b.Fatalf("stream server did not start: %v", c.out.Err())
	return nil
}

// dialAll opens sockets [from, to) with distinct keys, 64 handshakes at a time.
func dialAll(b *testing.B, addr string, from, to int, lat chan<- time.Duration) []*gws.Conn {
	conns := make([]*gws.Conn, to-from)
	errs := make(chan error, to-from)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := from; i < to; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			hdr := http.Header{}
			hdr.Set("X-API-Key", fmt.Sprintf("mk_bench_%06d", i))
			conn, _, err := gws.NewClient(&streamClient{lat: lat}, &gws.ClientOption{Addr: "ws://" + addr + "/maker/stream", RequestHeader: hdr})
			if err != nil {
				errs <- err
				return
			}
			conns[i-from] = conn
			go conn.ReadLoop()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("dial: %v", err)
	}
	return conns
}

// BenchmarkStream measures the real stream transport (transport.Server, its hub and gws)
// in a server process of its own on loopback, with a desk that only binds sockets:
//
//   - fan-out: one rfq.created to each of 1,000 parties, one socket each, delivered with
//     one hub.Deliver (the desk's machine caps an RFQ at machine.MaxInvited = 100 makers;
//     cmd/loadgen measures that case through the real desk), from the send time to each
//     socket's arrival, over 20 rounds: fanout-p50-ms, fanout-p99-ms;
//   - memory: the server's Go memory in use (heap + stacks, after a GC) and its RSS with
//     10,000 open sockets, less the same with none, per socket: go-B/socket, rss-B/socket,
//     and the total RSS with 10,000 sockets: rss-MiB-10k.
//
// Run it with -benchtime=1x.
func BenchmarkStream(b *testing.B) {
	if err := raiseNoFile(); err != nil {
		b.Skip(err)
	}
	c := startChild(b)
	mem0 := c.ask(b, "mem")
	lat := make(chan time.Duration, fanoutSockets*fanoutRounds)
	conns := dialAll(b, c.addr, 0, fanoutSockets, lat)
	time.Sleep(500 * time.Millisecond) // every OpenSocket bound
	var samples []time.Duration
	for range fanoutRounds {
		c.ask(b, fmt.Sprintf("fanout %d", fanoutSockets))
		deadline := time.After(10 * time.Second)
	round:
		for range fanoutSockets {
			select {
			case d := <-lat:
				samples = append(samples, d)
			case <-deadline:
				break round
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	conns = append(conns, dialAll(b, c.addr, fanoutSockets, streamSockets, nil)...)
	time.Sleep(time.Second)
	mem1 := c.ask(b, "mem")
	for b.Loop() {
	}
	slices.Sort(samples)
	pct := func(q float64) float64 {
		if len(samples) == 0 {
			return 0
		}
		return float64(samples[min(int(q*float64(len(samples))), len(samples)-1)].Microseconds()) / 1000
	}
	num := func(f []string, i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v }
	b.ReportMetric(pct(0.50), "fanout-p50-ms")
	b.ReportMetric(pct(0.99), "fanout-p99-ms")
	b.ReportMetric(float64(len(samples))/fanoutRounds, "fanout-delivered")
	b.ReportMetric((num(mem1, 1)-num(mem0, 1))/streamSockets, "go-B/socket")
	b.ReportMetric((num(mem1, 2)-num(mem0, 2))/streamSockets, "rss-B/socket")
	b.ReportMetric(num(mem1, 2)/(1<<20), "rss-MiB-10k")
	for _, conn := range conns {
		_ = conn.NetConn().Close()
	}
}

// serveLoopback serves srv's API on a fresh port of 127.0.0.1 and returns the server, for
// the caller to close, and its host:port.
func serveLoopback(tb testing.TB, srv *transport.Server) (*http.Server, string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := srv.HTTPServer(ln.Addr().String())
	go func() { _ = hs.Serve(ln) }()
	return hs, ln.Addr().String()
}
