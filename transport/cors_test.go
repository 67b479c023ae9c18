package transport

import (
	"net/http"
	"strings"
	"testing"
)

// preflight sends an OPTIONS preflight for method on path from origin.
func preflight(t *testing.T, url, path, method, origin string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("OPTIONS", url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", method)
	req.Header.Set("Access-Control-Request-Headers", "x-api-key, content-type")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	return res
}

// corsHeaders are the CORS headers of an answer, joined, for comparing.
func corsHeaders(h http.Header) string {
	var out []string
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") || k == "Vary" {
			out = append(out, k+"="+strings.Join(v, ","))
		}
	}
	return strings.Join(out, ";")
}

// TestCORSClosedByDefault: with no origins configured a preflight is refused as any
// OPTIONS is (405) and no answer carries a CORS header, whatever the Origin.
func TestCORSClosedByDefault(t *testing.T) {
	_, ts := testServer(t, newFakeDesk(), nil)
	res := preflight(t, ts.URL, "/rfq", "POST", "https://console.example")
	if res.StatusCode != http.StatusMethodNotAllowed || corsHeaders(res.Header) != "" {
		t.Fatalf("preflight with CORS closed: %d %q", res.StatusCode, corsHeaders(res.Header))
	}
	req, _ := http.NewRequest("GET", ts.URL+"/rfq/mine", nil)
	req.Header.Set("Origin", "https://console.example")
	req.Header.Set("X-API-Key", "mk_alice")
	got, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = got.Body.Close()
	if got.StatusCode != 200 || corsHeaders(got.Header) != "" {
		t.Fatalf("a request with an Origin, CORS closed: %d %q", got.StatusCode, corsHeaders(got.Header))
	}
}

// TestCORSOpenToNamedOrigins: a preflight from a named origin for a route of the API is
// 204 with the origin echoed, Vary: Origin, the methods, the request headers and a
// max-age, and the desk hears nothing; an actual request from it gets the origin and the
// exposed headers; another origin, or a path the API does not serve, gets no CORS header
// and the router's answer as before.
func TestCORSOpenToNamedOrigins(t *testing.T) {
	d := newFakeDesk()
	_, ts := testServer(t, d, func(o *Options) { o.CORSOrigins = []string{"https://console.example", "http://localhost:5173"} })
	res := preflight(t, ts.URL, "/maker/stream/ticket", "POST", "https://console.example")
	h := res.Header
	if res.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://console.example" ||
		!strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") || h.Get("Access-Control-Allow-Methods") != corsAllowMethods ||
		h.Get("Access-Control-Allow-Headers") != "X-API-Key, Content-Type, Idempotency-Key" || h.Get("Access-Control-Max-Age") != "600" {
		t.Fatalf("preflight from a named origin: %d %q", res.StatusCode, corsHeaders(h))
	}
	if d.calls() != 0 {
		t.Fatalf("a preflight reached the desk %d times", d.calls())
	}
	if res := preflight(t, ts.URL, "/rfq", "POST", "https://evil.example"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d %q", res.StatusCode, corsHeaders(res.Header))
	}
	if res := preflight(t, ts.URL, "/no/such/path", "GET", "http://localhost:5173"); res.StatusCode == http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight for a path the API does not serve: %d %q", res.StatusCode, corsHeaders(res.Header))
	}
	req, _ := http.NewRequest("GET", ts.URL+"/rfq/mine", nil)
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("X-API-Key", "mk_alice")
	got, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = got.Body.Close()
	if got.StatusCode != 200 || got.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		got.Header.Get("Access-Control-Expose-Headers") != "Idempotent-Replayed, Retry-After, X-Request-Id" {
		t.Fatalf("an actual request from a named origin: %d %q", got.StatusCode, corsHeaders(got.Header))
	}
}

// TestCORSStreamOrigin: with origins configured, a stream upgrade from another origin is
// 403 before the upgrade (the desk hears nothing); one without an Origin (not a browser)
// or from a named origin proceeds. With none configured, any Origin proceeds as before.
func TestCORSStreamOrigin(t *testing.T) {
	d, _, ts, _ := streamDesk(t, func(o *Options) { o.CORSOrigins = []string{"https://console.example"} })
	if res := upgradeRequest(t, ts, "/maker/stream", "mk_alice", "https://evil.example"); res.status != http.StatusForbidden {
		t.Fatalf("an upgrade from another origin: %d %s", res.status, res.body)
	}
	if d.calls() != 0 {
		t.Fatal("a refused upgrade reached the desk")
	}
	for _, origin := range []string{"", "https://console.example"} {
		if res := upgradeRequest(t, ts, "/maker/stream", "mk_alice", origin); res.status != http.StatusSwitchingProtocols {
			t.Fatalf("an upgrade from %q: %d %s", origin, res.status, res.body)
		}
	}
	_, _, open, _ := streamDesk(t, nil)
	if res := upgradeRequest(t, open, "/maker/stream", "mk_alice", "https://evil.example"); res.status != http.StatusSwitchingProtocols {
		t.Fatalf("an upgrade with CORS closed: %d %s", res.status, res.body)
	}
}

// TestValidateCORSOrigin: only scheme://host[:port] as a browser sends it passes.
func TestValidateCORSOrigin(t *testing.T) {
	for _, o := range []string{"https://console.example", "http://localhost:5173", "http://127.0.0.1:8080", "https://[::1]:8443"} {
		if err := ValidateCORSOrigin(o); err != nil {
			t.Errorf("%q: %v", o, err)
		}
	}
	for _, o := range []string{"", "*", "null", "console.example", "ftp://x.example", "https://x.example/", "https://x.example/app",
		"https://X.example", "https://*.example", "https://x.example:443", "http://x.example:80", "https://x.example:0",
		"https://x.example?a=1", "https://u@x.example", "https://x.example#f", "https://x.example:99999", "https://"} {
		if err := ValidateCORSOrigin(o); err == nil {
			t.Errorf("%q passed", o)
		}
	}
}
