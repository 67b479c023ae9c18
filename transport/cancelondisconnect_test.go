package transport

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lxzan/gws"
)

// TestStreamCancelOnDisconnectMark: ?cancelOnDisconnect=true reaches the desk as the
// socket's mark; false or no parameter opens an unmarked socket.
func TestStreamCancelOnDisconnectMark(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{{"", false}, {"?cancelOnDisconnect=true", true}, {"?cancelOnDisconnect=false", false}, {"?other=1&cancelOnDisconnect=true", true}} {
		d, _, ts, opened := streamDesk(t, nil)
		c := &wsClient{frames: make(chan []byte, 64), closed: make(chan closeInfo, 1)}
		conn, _, err := gws.NewClient(c, &gws.ClientOption{
			Addr:          "ws" + strings.TrimPrefix(ts.URL, "http") + "/maker/stream" + tc.query,
			RequestHeader: http.Header{"X-Api-Key": []string{"mk_alice"}},
		})
		if err != nil {
			t.Fatalf("%q: dial: %v", tc.query, err)
		}
		go conn.ReadLoop()
		select {
		case <-opened:
		case <-time.After(wait):
			t.Fatalf("%q: socket not reported to the desk", tc.query)
		}
		d.mu.Lock()
		got := d.opened[0].cod
		d.mu.Unlock()
		if got != tc.want {
			t.Errorf("%q: the desk got mark %v, want %v", tc.query, got, tc.want)
		}
		_ = conn.NetConn().Close()
	}
}

// TestStreamCancelOnDisconnectBadValue: any other value is 400 at the upgrade, with an
// error body naming the parameter; no socket opens and the desk hears nothing.
func TestStreamCancelOnDisconnectBadValue(t *testing.T) {
	d, _, ts, _ := streamDesk(t, nil)
	for _, q := range []string{"cancelOnDisconnect=TRUE", "cancelOnDisconnect=1", "cancelOnDisconnect=", "cancelOnDisconnect",
		"cancelOnDisconnect=yes", "cancelOnDisconnect=true&cancelOnDisconnect=true"} {
		res := upgradeRequest(t, ts, "/maker/stream?"+q, "mk_alice", "")
		var body struct {
			Error string `json:"error"`
		}
		err := json.Unmarshal([]byte(res.body), &body)
		if res.status != http.StatusBadRequest || err != nil || !strings.Contains(body.Error, "cancelOnDisconnect") {
			t.Errorf("%q: %d %+v (%v), want 400 naming the parameter", q, res.status, body, err)
		}
	}
	if n := d.calls(); n != 0 {
		t.Errorf("the desk was called %d times for refused upgrades", n)
	}
}
