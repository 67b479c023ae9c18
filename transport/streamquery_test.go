package transport

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lxzan/gws"
)

// openedWithQuery dials alice's stream with query ("?..." or "") on a fresh stream desk
// and returns how the upgrade reached the desk (its first open call), closing the socket
// again.
func openedWithQuery(t *testing.T, query string) openCall {
	t.Helper()
	d, _, ts, opened := streamDesk(t, nil)
	c := &wsClient{frames: make(chan []byte, 64), closed: make(chan closeInfo, 1)}
	conn, _, err := gws.NewClient(c, &gws.ClientOption{
		Addr:          "ws" + strings.TrimPrefix(ts.URL, "http") + "/maker/stream" + query,
		RequestHeader: http.Header{"X-Api-Key": []string{"mk_alice"}},
	})
	if err != nil {
		t.Fatalf("%q: dial: %v", query, err)
	}
	defer func() { _ = conn.NetConn().Close() }()
	go conn.ReadLoop()
	select {
	case <-opened:
	case <-time.After(wait):
		t.Fatalf("%q: socket not reported to the desk", query)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.opened[0]
}

// refusesStreamQueries checks that each query is 400 at the upgrade with an error body
// naming param, and that the desk hears nothing of any of them.
func refusesStreamQueries(t *testing.T, param string, queries []string) {
	t.Helper()
	d, _, ts, _ := streamDesk(t, nil)
	for _, q := range queries {
		res := upgradeRequest(t, ts, "/maker/stream?"+q, "mk_alice", "")
		var body struct {
			Error string `json:"error"`
		}
		err := json.Unmarshal([]byte(res.body), &body)
		if res.status != http.StatusBadRequest || err != nil || !strings.Contains(body.Error, param) {
			t.Errorf("%q: %d %+v (%v), want 400 naming the parameter", q, res.status, body, err)
		}
	}
	if n := d.calls(); n != 0 {
		t.Errorf("the desk was called %d times for refused upgrades", n)
	}
}
