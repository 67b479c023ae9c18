package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func newHandler(t *testing.T) *Handler {
	t.Helper()
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, h http.Handler, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestHeadersOnEveryAnswer: the page, its files and a miss all carry the strict CSP, nosniff
// and no framing.
func TestHeadersOnEveryAnswer(t *testing.T) {
	h := newHandler(t)
	for _, p := range append(h.Paths(), "/console/nope.js") {
		res := get(t, h, p, nil)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "connect-src 'self';"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q allows inline or eval", p, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", p)
		}
	}
	if res := get(t, h, "/console/nope.js", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown file: %d", res.StatusCode)
	}
}

// TestNoInlineScriptOrRemoteFetch: the page has no inline script or handler (the CSP would
// block them) and names no other origin: nothing is fetched from elsewhere at run time.
func TestNoInlineScriptOrRemoteFetch(t *testing.T) {
	h := newHandler(t)
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|\son[a-z]+\s*=|javascript:`)
	remote := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, p := range h.Paths() {
		body, _ := io.ReadAll(get(t, h, p, nil).Body)
		if strings.HasSuffix(p, ".html") || p == "/" {
			if m := inline.Find(body); m != nil {
				t.Errorf("%s: inline script or handler %q", p, m)
			}
		}
		if m := remote.Find(body); m != nil {
			t.Errorf("%s: names another origin %q", p, m)
		}
	}
}

// TestGzipAndETag: a browser that accepts gzip gets the compressed body, which inflates to
// the file; a matching If-None-Match is 304.
func TestGzipAndETag(t *testing.T) {
	h := newHandler(t)
	plain, _ := io.ReadAll(get(t, h, "/console/app.js", nil).Body)
	res := get(t, h, "/console/app.js", map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	if res.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("headers %v", res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	inflated, _ := io.ReadAll(zr)
	if !bytes.Equal(inflated, plain) {
		t.Fatal("gzip body does not inflate to the file")
	}
	if res := get(t, h, "/console/app.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); res.Header.Get("Content-Encoding") != "" {
		t.Fatal("gzip;q=0 still compressed")
	}
	etag := res.Header.Get("ETag")
	if res := get(t, h, "/console/app.js", map[string]string{"If-None-Match": etag}); res.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", res.StatusCode)
	}
}

// pageBudget is the most a first load of the console may transfer (the 300 KB).
const pageBudget = 300 << 10

// TestPageWeight: everything a first load fetches (the page at "/" and every file under
// /console/, as a browser that accepts gzip receives them) stays under the budget.
func TestPageWeight(t *testing.T) {
	h := newHandler(t)
	total := 0
	for _, p := range h.Paths() {
		if strings.HasSuffix(p, "/index.html") {
			continue // served at "/"
		}
		n, _ := io.Copy(io.Discard, get(t, h, p, map[string]string{"Accept-Encoding": "gzip"}).Body)
		total += int(n)
	}
	t.Logf("a page load transfers %d bytes of bodies (budget %d)", total, pageBudget)
	if total >= pageBudget {
		t.Fatalf("a page load transfers %d bytes, budget %d", total, pageBudget)
	}
}
