package transport

import (
	"net/http"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
)

// knownKeyDesk is a fake desk whose reads know only testKey: every other key is 401, as
// the machine answers. No command with another key may reach it.
func knownKeyDesk() *fakeDesk {
	d := newFakeDesk()
	unknown := machine.Reply{Status: 401, Err: &machine.APIError{Status: 401, Message: "unknown or missing API key"}}
	d.readFn = func(keyHash string, _ machine.Query) (machine.Reply, error) {
		if keyHash != testHash {
			return unknown, nil
		}
		return machine.Reply{Status: 200, Body: map[string]string{"query": "ok"}}, nil
	}
	return d
}

// TestUnknownKeyIsAlways401 sends every keyed route of the router a request with an
// unknown key and everything else wrong (a truncated JSON body, invalid path parameters,
// a bad limit and an unknown query parameter): the answer is 401, never the refusal of
// the contents, and no command reaches the desk. The same request with a known key is
// refused for its contents, so each case exercises a refusal the key must precede.
func TestUnknownKeyIsAlways401(t *testing.T) {
	d := knownKeyDesk()
	srv, ts := testServer(t, d, nil)
	badParam := strings.NewReplacer(":id", "a%20b", ":cid", strings.Repeat("x", maxIDLen+1))
	for _, rte := range srv.routes() {
		if !rte.auth {
			continue
		}
		name := rte.method + " " + rte.path
		path := badParam.Replace(rte.path) + "?limit=abc&base=&bogus=1"
		body := "{"
		t.Run(name, func(t *testing.T) {
			before := len(d.commands())
			res := request(t, ts, rte.method, path, body, "mk_unknown", "application/json")
			if res.status != http.StatusUnauthorized {
				t.Fatalf("unknown key: status %d, want 401; body %s", res.status, res.body)
			}
			assertErrorBody(t, res, "")
			if n := len(d.commands()) - before; n != 0 {
				t.Errorf("%d commands reached the desk", n)
			}
			known := request(t, ts, rte.method, path, body, testKey, "application/json")
			if known.status == http.StatusUnauthorized || known.status >= 500 {
				t.Errorf("known key: status %d; body %s", known.status, known.body)
			}
		})
	}
}

// TestUnknownKeyBeforeEachRefusal covers the refusals the issue named one by one, and an
// oversized body.
func TestUnknownKeyBeforeEachRefusal(t *testing.T) {
	cases := []struct{ name, method, path, body string }{
		{"invalid JSON", "POST", "/rfq", "{"},
		{"bad limit", "GET", "/trades?limit=0", ""},
		{"bad path parameter", "DELETE", "/rfq/a%20b", ""},
		{"body too large", "POST", "/maker/quotes", `{"pad":"` + strings.Repeat("x", 64<<10) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := knownKeyDesk()
			_, ts := testServer(t, d, nil)
			res := request(t, ts, tc.method, tc.path, tc.body, "mk_unknown", "application/json")
			if res.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401; body %s", res.status, res.body)
			}
			if q := d.queries(); len(q) != 1 || q[0].keyHash != HashKey("mk_unknown") {
				t.Errorf("desk reads %+v, want one authentication of the unknown key", q)
			}
			if res := request(t, ts, tc.method, tc.path, tc.body, testKey, "application/json"); res.status/100 != 4 || res.status == 401 {
				t.Errorf("known key: status %d, want the refusal of the contents", res.status)
			}
		})
	}
}

// TestAuthenticationUnavailableIs503 answers 503 when the desk cannot say who the key is,
// rather than the refusal of the contents.
func TestAuthenticationUnavailableIs503(t *testing.T) {
	d := newFakeDesk()
	d.readFn = func(string, machine.Query) (machine.Reply, error) { return machine.Reply{}, errDeskDown }
	_, ts := testServer(t, d, nil)
	res := request(t, ts, "POST", "/rfq", "{", "mk_unknown", "application/json")
	if res.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", res.status)
	}
	assertErrorBody(t, res, machine.CodeRetryLater)
}
