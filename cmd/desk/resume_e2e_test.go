package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/lxzan/gws"
)

// rawFrame is one stream frame as the desk wrote it.
type rawFrame struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
	Seq     uint64          `json:"seq"`
	raw     []byte
}

// rawStream is a bare WebSocket on /maker/stream, to see the desk's frames byte for byte.
type rawStream struct {
	frames chan rawFrame
	conn   *gws.Conn
}

func (r *rawStream) OnOpen(*gws.Conn)             {}
func (r *rawStream) OnClose(*gws.Conn, error)     { close(r.frames) }
func (r *rawStream) OnPing(c *gws.Conn, p []byte) { _ = c.WritePong(p) }
func (r *rawStream) OnPong(*gws.Conn, []byte)     {}
func (r *rawStream) OnMessage(_ *gws.Conn, m *gws.Message) {
	defer m.Close()
	b := append([]byte(nil), m.Bytes()...)
	var f rawFrame
	_ = json.Unmarshal(b, &f)
	f.raw = b
	r.frames <- f
}

// openRaw opens a raw stream of the party with key at base, with query (e.g. "since=3").
func openRaw(t *testing.T, base, key, query string) *rawStream {
	t.Helper()
	r := &rawStream{frames: make(chan rawFrame, 1024)}
	r.dial(t, r, base, key, query)
	return r
}

// dial opens r's socket, as openRaw, with its events going to h: r itself, or a stream
// that embeds r to answer otherwise (silentStream).
func (r *rawStream) dial(t *testing.T, h gws.Event, base, key, query string) {
	t.Helper()
	addr := "ws" + strings.TrimPrefix(base, "http") + "/maker/stream"
	if query != "" {
		addr += "?" + query
	}
	conn, _, err := gws.NewClient(h, &gws.ClientOption{Addr: addr, RequestHeader: http.Header{"X-Api-Key": []string{key}}})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	r.conn = conn
	go conn.ReadLoop()
	t.Cleanup(func() { _ = conn.NetConn().Close() })
}

// refusedUpgrade sends a stream upgrade for path (with its query) over plain HTTP with key
// and returns the desk's status and the error its body names (refusals come before the
// handshake).
func refusedUpgrade(t *testing.T, base, path, key string) (int, string) {
	t.Helper()
	res, b := httpCall(t, "GET", base+path, "", map[string]string{"X-API-Key": key, "Connection": "Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
	var body struct{ Error string }
	_ = json.Unmarshal(b, &body)
	return res.StatusCode, body.Error
}

// until reads frames up to and including the first of type typ.
func (r *rawStream) until(t *testing.T, typ string) []rawFrame {
	t.Helper()
	var out []rawFrame
	timeout := time.After(15 * time.Second)
	for {
		select {
		case f, ok := <-r.frames:
			if !ok {
				t.Fatalf("stream closed waiting for %s (got %d frames)", typ, len(out))
			}
			out = append(out, f)
			if f.Type == typ {
				return out
			}
		case <-timeout:
			t.Fatalf("no %s within 15s (got %d frames)", typ, len(out))
		}
	}
}

// TestStreamResumeAcrossSIGKILL: a maker's stream sees numbered events; a second socket
// of the maker stops reading after seq 3 while the first keeps the maker invitable and
// sees seq 4 to 6; the desk process is killed (SIGKILL) and started again on the same data.
// A socket opened with ?since=3 then receives exactly the frames 4, 5, 6 it missed (byte
// for byte what the live socket received), then stream.resumed {4, 6}, and no snapshot; one
// with a since older than the retained window (stream_retention_events = 4) and one ahead
// of the latest get stream.gap, the snapshot and snapshot.end {6}; a malformed since is 400
// before the upgrade.
func TestStreamResumeAcrossSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the desk process")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir, ".", "desk")
	cfg := filepath.Join(dir, "desk.toml")
	if err := os.WriteFile(cfg, []byte("stream_retention_events = 4\n"+baseConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	p := killedAtEnd(t, bin, data, cfg)
	m := registered(t, p.base, "Resumer")
	taker := houseAt(t, p.base)
	live := openRaw(t, p.base, m.APIKey(), "")
	if f := live.until(t, "snapshot.end"); string(f[len(f)-1].Payload) != `{"seq":0}` {
		t.Fatalf("first snapshot.end %s", f[len(f)-1].raw)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st, err := m.Status(ctx(t)); err == nil && st.Invitable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("maker never became invitable")
		}
	}
	rfq := func() *client.RFQ {
		r, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "cbtc", Quote: "usdcx",
			InvitedMakers: []string{m.Hint()}, TTLSeconds: 600})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	early := openRaw(t, p.base, m.APIKey(), "")
	early.until(t, "snapshot.end")
	for range 3 {
		rfq()
	}
	var seen []rawFrame
	for range 3 {
		seen = append(seen, early.until(t, "rfq.created")...)
	}
	_ = early.conn.NetConn().Close()
	last := rfq()
	rfq()
	if err := taker.CancelRFQ(ctx(t), last.RFQID); err != nil {
		t.Fatal(err)
	}
	var all []rawFrame
	for len(all) < 6 {
		select {
		case f := <-live.frames:
			all = append(all, f)
		case <-time.After(15 * time.Second):
			t.Fatalf("the live socket got %d frames, want 6", len(all))
		}
	}
	for i, f := range all {
		if f.Seq != uint64(i+1) {
			t.Fatalf("live frame %d: %s", i, f.raw)
		}
	}
	for i, f := range seen {
		if !bytes.Equal(f.raw, all[i].raw) {
			t.Fatalf("the two sockets differ at %d: %s / %s", i, f.raw, all[i].raw)
		}
	}

	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = killedAtEnd(t, bin, data, cfg)

	got := openRaw(t, p.base, m.APIKey(), "since=3").until(t, "stream.resumed")
	if len(got) != 4 {
		t.Fatalf("resume from 3 after the restart: %d frames, want 3 and stream.resumed", len(got))
	}
	for i, f := range got[:3] {
		if !bytes.Equal(f.raw, all[3+i].raw) {
			t.Fatalf("replayed %d: %s, want %s", i, f.raw, all[3+i].raw)
		}
	}
	if string(got[3].raw) != `{"type":"stream.resumed","payload":{"from":4,"to":6}}` {
		t.Fatalf("resume ends with %s", got[3].raw)
	}

	for _, c := range []struct{ since, gap string }{{"1", `{"since":1,"oldest":3}`}, {"7", `{"since":7,"oldest":3}`}} {
		f := openRaw(t, p.base, m.APIKey(), "since="+c.since).until(t, "snapshot.end")
		if f[0].Type != "stream.gap" || string(f[0].Payload) != c.gap {
			t.Fatalf("since %s: first frame %s, want stream.gap %s", c.since, f[0].raw, c.gap)
		}
		for _, s := range f[1 : len(f)-1] {
			if s.Type != "rfq.created" || s.Seq != 0 {
				t.Fatalf("since %s: snapshot frame %s", c.since, s.raw)
			}
		}
		if len(f) != 2+4 || string(f[len(f)-1].Payload) != `{"seq":6}` { // the four open RFQs
			t.Fatalf("since %s: %d frames ending %s", c.since, len(f), f[len(f)-1].raw)
		}
	}

	if status, msg := refusedUpgrade(t, p.base, "/maker/stream?since=-1", m.APIKey()); status != http.StatusBadRequest || !strings.Contains(msg, "since") {
		t.Fatalf("since=-1: %d %q, want 400 naming since", status, msg)
	}
	_, config := httpCall(t, "GET", p.base+"/config", "", map[string]string{"X-API-Key": m.APIKey()})
	var conf struct {
		Events  int `json:"streamRetentionEvents"`
		Seconds int `json:"streamRetentionSeconds"`
	}
	_ = json.Unmarshal(config, &conf)
	if fmt.Sprint(conf) != "{4 600}" {
		t.Fatalf("GET /config retention %+v", conf)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}
