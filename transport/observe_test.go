package transport

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// idRequest sends GET path with an optional X-Request-Id (nil sends none) and returns the
// status and the echoed id.
func idRequest(t *testing.T, url string, id *string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id != nil {
		req.Header.Set(RequestIDHeader, *id)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, res.Header.Get(RequestIDHeader)
}

// TestRequestIDTakenMadeEchoed: a sane id comes back as sent and is logged with the request;
// none, or an insane one (too long, unsafe characters), is replaced by a made one, a
// different one on each request; every answer carries one, errors and 404s included.
func TestRequestIDTakenMadeEchoed(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, ts := testServer(t, newFakeDesk(), func(o *Options) { o.Logger = logger })

	sane := "client-42.a_b:c"
	if status, got := idRequest(t, ts.URL+"/healthz", &sane); status != 200 || got != sane {
		t.Fatalf("sane id: status %d, echoed %q, want 200 %q", status, got, sane)
	}
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	if !strings.Contains(logged, "id="+sane) || !strings.Contains(logged, "route=\"GET /healthz\"") {
		t.Fatalf("the request line does not carry the id and route:\n%s", logged)
	}

	seen := map[string]bool{}
	for _, id := range []*string{nil, ptr(""), ptr(strings.Repeat("a", MaxRequestIDLen+1)), ptr("a b"), ptr("x\"y"), ptr("é")} {
		for _, path := range []string{"/healthz", "/config", "/no/such/path"} {
			_, got := idRequest(t, ts.URL+path, id)
			if !SaneRequestID(got) || len(got) != 16 {
				t.Fatalf("%s with id %v: made id %q is not 16 safe characters", path, id, got)
			}
			if id != nil && got == *id {
				t.Fatalf("%s: insane id %q taken", path, *id)
			}
			if seen[got] {
				t.Fatalf("made id %q twice", got)
			}
			seen[got] = true
		}
	}
	if status, got := idRequest(t, ts.URL+"/config", &sane); status != 401 || got != sane {
		t.Fatalf("401 answer: status %d, id %q, want 401 %q", status, got, sane)
	}
}

func ptr(s string) *string { return &s }

// lockedWriter serialises writes to a buffer shared with the test.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestSaneRequestID: the law of ids taken from clients: taken exactly when 1 to 64 bytes of
// the safe alphabet.
func TestSaneRequestID(t *testing.T) {
	safe := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:"
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.String().Draw(t, "id")
		want := len(id) >= 1 && len(id) <= MaxRequestIDLen
		for i := 0; i < len(id); i++ {
			want = want && strings.IndexByte(safe, id[i]) >= 0
		}
		if got := SaneRequestID(id); got != want {
			t.Fatalf("SaneRequestID(%q) = %v, want %v", id, got, want)
		}
	})
}

// TestHealthzIsNoAuthFailure: the public probe answers 200 without a key and without a desk
// call, and is counted under its own route: never as a 401.
func TestHealthzIsNoAuthFailure(t *testing.T) {
	d := newFakeDesk()
	srv, ts := testServer(t, d, nil)
	for range 3 {
		if res := request(t, ts, "GET", "/healthz", "", "", ""); res.status != 200 || strings.TrimSpace(res.body) != `{"status":"ok"}` {
			t.Fatalf("GET /healthz: %d %s", res.status, res.body)
		}
	}
	for _, c := range srv.Metrics().Requests {
		if c.Status == http.StatusUnauthorized {
			t.Fatalf("a 401 was counted: %+v", c)
		}
		if c.Route == HealthRoute && (c.Status != 200 || c.Count != 3) {
			t.Fatalf("healthz counted as %+v, want 3 × 200", c)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.cmds) != 0 || len(d.reads) != 0 {
		t.Fatalf("the probe reached the desk: %d commands, %d reads", len(d.cmds), len(d.reads))
	}
}

// TestObserveRequest: the observer hears the route pattern (never the raw path, so its label
// set stays bounded), the status and a duration.
func TestObserveRequest(t *testing.T) {
	type seen struct {
		route  string
		status int
	}
	var mu sync.Mutex
	var got []seen
	_, ts := testServer(t, newFakeDesk(), func(o *Options) {
		o.ObserveRequest = func(route string, status int, took time.Duration) {
			if took <= 0 {
				t.Errorf("%s: duration %v", route, took)
			}
			mu.Lock()
			got = append(got, seen{route, status})
			mu.Unlock()
		}
	})
	request(t, ts, "DELETE", "/rfq/rfq_123", "", "k", "")
	request(t, ts, "DELETE", "/rfq/rfq_456", "", "", "")
	request(t, ts, "GET", "/nowhere/rfq_789", "", "", "")
	request(t, ts, "PUT", "/healthz", "", "", "")
	mu.Lock()
	defer mu.Unlock()
	want := []seen{{"DELETE /rfq/:id", 200}, {"DELETE /rfq/:id", 401}, {NotFoundRoute, 404}, {MethodNotAllowedRoute, 405}}
	if len(got) != len(want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("observed %v, want %v", got, want)
		}
	}
}

// TestRefusalsLoggedAtInfo: at the default level a refused request's line, with its id, is
// in the log, and a success's is not.
func TestRefusalsLoggedAtInfo(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	_, ts := testServer(t, newFakeDesk(), func(o *Options) { o.Logger = logger })
	ok, refused := "fine-1", "refused-1"
	if status, _ := idRequest(t, ts.URL+"/healthz", &ok); status != 200 {
		t.Fatalf("healthz: %d", status)
	}
	if status, _ := idRequest(t, ts.URL+"/config", &refused); status != 401 {
		t.Fatalf("keyless /config: %d, want 401", status)
	}
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	if !strings.Contains(logged, "id="+refused) || !strings.Contains(logged, "status=401") {
		t.Fatalf("the refused request is not logged at info with its id:\n%s", logged)
	}
	if strings.Contains(logged, "id="+ok) {
		t.Fatalf("a success is logged at info:\n%s", logged)
	}
}
