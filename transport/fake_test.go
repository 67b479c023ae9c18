package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// fakeDesk records what the transport sends and answers with scripted replies.
type fakeDesk struct {
	mu      sync.Mutex
	cmds    []machine.Command_
	reads   []readCall
	opened  []openCall
	closed  []uint64
	doFn    func(machine.Command_) (machine.Reply, error)
	readFn  func(string, machine.Query) (machine.Reply, error)
	openFn  func(socket uint64, keyHash string) error
	closeCh chan uint64
	// closeFails is how many CloseSocket calls fail (as a full queue would) before one
	// goes through.
	closeFails int
}

type readCall struct {
	keyHash string
	q       machine.Query
}

type openCall struct {
	socket  uint64
	keyHash string
	cod     bool // cancel-on-disconnect
	resume  bool // ?since= given (ResumeSocket)
	since   uint64
}

func newFakeDesk() *fakeDesk { return &fakeDesk{closeCh: make(chan uint64, 1024)} }

func (d *fakeDesk) Do(_ context.Context, cmd machine.Command_) (machine.Reply, error) {
	d.mu.Lock()
	d.cmds = append(d.cmds, cmd)
	fn := d.doFn
	d.mu.Unlock()
	if fn != nil {
		return fn(cmd)
	}
	return machine.Reply{Status: 200, Body: machine.OKDTO{OK: true}}, nil
}

func (d *fakeDesk) Read(_ context.Context, keyHash string, q machine.Query) (machine.Reply, error) {
	d.mu.Lock()
	d.reads = append(d.reads, readCall{keyHash, q})
	fn := d.readFn
	d.mu.Unlock()
	if fn != nil {
		return fn(keyHash, q)
	}
	return machine.Reply{Status: 200, Body: map[string]string{"query": "ok"}}, nil
}

func (d *fakeDesk) OpenSocket(_ context.Context, socket uint64, keyHash string, cancelOnDisconnect bool) error {
	return d.open(openCall{socket: socket, keyHash: keyHash, cod: cancelOnDisconnect})
}

func (d *fakeDesk) ResumeSocket(_ context.Context, socket uint64, keyHash string, cancelOnDisconnect bool, since uint64) error {
	return d.open(openCall{socket, keyHash, cancelOnDisconnect, true, since})
}

// open records an opening socket and answers it through openFn (nil without one).
func (d *fakeDesk) open(c openCall) error {
	d.mu.Lock()
	d.opened = append(d.opened, c)
	fn := d.openFn
	d.mu.Unlock()
	if fn != nil {
		return fn(c.socket, c.keyHash)
	}
	return nil
}

func (d *fakeDesk) CloseSocket(_ context.Context, socket uint64) error {
	d.mu.Lock()
	if d.closeFails > 0 {
		d.closeFails--
		d.mu.Unlock()
		return context.DeadlineExceeded
	}
	d.closed = append(d.closed, socket)
	d.mu.Unlock()
	d.closeCh <- socket
	return nil
}

func (d *fakeDesk) commands() []machine.Command_ {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]machine.Command_(nil), d.cmds...)
}

func (d *fakeDesk) queries() []readCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]readCall(nil), d.reads...)
}

func (d *fakeDesk) calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.cmds) + len(d.reads) + len(d.opened)
}

// beyondAuth counts the calls that reached the desk other than the authentication a
// refusal on a keyed route asks first (authfirst.go): a refused request must cause nothing
// else.
func (d *fakeDesk) beyondAuth() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.cmds) + len(d.opened)
	for _, r := range d.reads {
		if r.q != authQuery {
			n++
		}
	}
	return n
}

var errDeskDown = errors.New("desk stopped")

// testServer starts a Server for d on 127.0.0.1.
func testServer(t *testing.T, d *fakeDesk, mod func(*Options)) (*Server, *httptest.Server) {
	t.Helper()
	opts := Options{Desk: d}
	if mod != nil {
		mod(&opts)
	}
	srv := New(opts)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	return srv, ts
}

// response is what a test request got back.
type response struct {
	status int
	header http.Header
	body   string
}

// request sends one HTTP request; key "" sends no X-API-Key; contentType "" sends none.
func request(t *testing.T, ts *httptest.Server, method, path, body, key, contentType string) response {
	t.Helper()
	return requestWith(t, method, ts.URL+path, body, http.Header{"X-API-Key": orNone(key), "Content-Type": orNone(contentType)})
}

// orNone is a header's values: v, or none when v is "".
func orNone(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

// requestWith sends one HTTP request with body ("" for none) and every value of the
// headers given, and returns the answer, its body read (a 101's body, the socket, is left
// unread).
func requestWith(t *testing.T, method, url, body string, headers http.Header) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusSwitchingProtocols {
		return response{status: res.StatusCode, header: res.Header}
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}
