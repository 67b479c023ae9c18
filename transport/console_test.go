package transport

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// consoleStub stands for the console handler: it answers every request it gets.
var consoleStub = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'")
	_, _ = io.WriteString(w, "console "+r.URL.Path)
})

func answer(h http.Handler, method, path string) (int, string, http.Header) {
	req := httptest.NewRequest(method, path, strings.NewReader(""))
	req.Header.Set("X-API-Key", testKey)
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	hd := rec.Header().Clone()
	hd.Del(RequestIDHeader)
	return rec.Code, rec.Body.String(), hd
}

// TestConsoleChangesNoAPIAnswer: with the console on, every route of the API, every other
// method on the console's paths and an unknown path are answered exactly as without it
// (status, body and headers but the request id); only GET and HEAD of "/" and "/console/…"
// reach the console. The same holds with CORS open.
func TestConsoleChangesNoAPIAnswer(t *testing.T) {
	for _, origins := range [][]string{nil, {"http://127.0.0.1:8080"}} {
		without := New(Options{Desk: newFakeDesk(), PerIPPerMinute: 1 << 30, CORSOrigins: origins}).Handler()
		with := New(Options{Desk: newFakeDesk(), PerIPPerMinute: 1 << 30, CORSOrigins: origins, Console: consoleStub}).Handler()
		type probe struct{ method, path string }
		var probes []probe
		for _, rte := range (&Server{}).routes() {
			if rte.path == "/maker/stream" {
				continue // an upgrade: its answers are the stream tests'
			}
			probes = append(probes, probe{rte.method, strings.NewReplacer(":id", "x1", ":cid", "c1").Replace(rte.path)})
		}
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
			probes = append(probes, probe{m, "/"}, probe{m, "/console/app.js"})
		}
		probes = append(probes, probe{"GET", "/nope"}, probe{"GET", "/consolex"}, probe{"GET", "//"}, probe{"OPTIONS", "/desk"})
		for _, p := range probes {
			s1, b1, h1 := answer(without, p.method, p.path)
			s2, b2, h2 := answer(with, p.method, p.path)
			if s1 != s2 || b1 != b2 || !equalHeaders(h1, h2) {
				t.Errorf("cors %v: %s %s: without the console %d %q %v, with it %d %q %v", origins, p.method, p.path, s1, b1, h1, s2, b2, h2)
			}
		}
		for _, p := range []probe{{"GET", "/"}, {"HEAD", "/"}, {"GET", "/console/app.js"}} {
			if s, _, _ := answer(without, p.method, p.path); s != http.StatusNotFound {
				t.Errorf("without the console %s %s: %d, want 404", p.method, p.path, s)
			}
			if s, b, _ := answer(with, p.method, p.path); s != http.StatusOK || !strings.HasPrefix(b, "console "+p.path) && p.method == "GET" {
				t.Errorf("with the console %s %s: %d %q", p.method, p.path, s, b)
			}
		}
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

// TestConsoleRouteCounted: the console's answers are counted under their own bounded
// route labels, not as NOT_FOUND.
func TestConsoleRouteCounted(t *testing.T) {
	srv := New(Options{Desk: newFakeDesk(), Console: consoleStub})
	answer(srv.Handler(), "GET", "/")
	answer(srv.Handler(), "GET", "/console/a.js")
	answer(srv.Handler(), "GET", "/console/b.js")
	got := map[string]uint64{}
	for _, r := range srv.Metrics().Requests {
		got[r.Route] += r.Count
	}
	if got[ConsoleRoute] != 1 || got[ConsoleFilesRoute] != 2 || got[NotFoundRoute] != 0 {
		t.Fatalf("counted %v", got)
	}
}
