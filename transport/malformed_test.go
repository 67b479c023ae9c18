package transport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"pgregory.net/rapid"
)

// The simulator's adversaries (sim/adversary.go) drive machine inputs, so a body the
// transport refuses never reaches them; this is their transport half. Each case is a
// route and a body that is malformed at the wire (JSON shape, types, base64, decimal,
// timestamp, identifier, signature length, batch size): the answer must be exactly 400,
// and the desk must never see the request.

// malformedCase is one malformed request body for a route.
type malformedCase struct {
	path, body string
}

// sigOf is the base64 of n bytes: a signature of the wrong length unless n is 64.
func sigOf(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, n)) }

// malformedCorpus are hand-written malformed bodies, the malformed seeds of
// FuzzDecodeRequest among them.
func malformedCorpus() []malformedCase {
	batch := func(n int) string {
		var es []string
		for i := range n {
			es = append(es, fmt.Sprintf(`{"actionId":"act_%d","signature":"%s"}`, i, sig))
		}
		return `{"signatures":[` + strings.Join(es, ",") + `]}`
	}
	return []malformedCase{
		{"/maker/quotes", ``},
		{"/maker/quotes", `[]`},
		{"/maker/quotes", `null`},
		{"/maker/quotes", `{"a":1}{}`},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":1e400}`},
		{"/maker/quotes", "\xff\xfe"},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":"1.5","extra":true}`},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":"1e5"}`},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":"abc"}`},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":"1.5.5"}`},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":1.5}`},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":"1.5","validUntil":"tomorrow"}`},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":"1.5","validUntil":"2026-13-02T15:04:05Z"}`},
		{"/maker/quotes", `{"rfqId":7,"price":"1.5"}`},
		{"/maker/quotes", `{"rfqId":"rfq_1","price":"1.5"`},
		{"/rfq", `{"direction":"BUY","qty":"0.1","base":"a","quote":"b","invitedMakers":"m","ttlSeconds":60}`},
		{"/rfq", `{"direction":"BUY","qty":"0.1","base":"a","quote":"b","invitedMakers":["m"],"ttlSeconds":"60"}`},
		{"/rfq", `{"direction":"BUY","qty":"-","base":"a","quote":"b","invitedMakers":["m"],"ttlSeconds":60}`},
		{"/rfq", `{"direction":"BUY","qty":"0.1","base":"a","quote":"b","invitedMakers":["m"],"ttlSeconds":60.5}`},
		{"/maker/register/start", `{"displayName":"Bot","publicKey":"not base64!"}`},
		{"/maker/register/start", `{"displayName":"Bot","publicKey":"` + pubKey + `","more":1}`},
		{"/maker/register/complete", `{"registrationId":"reg_1","signatures":"` + sig + `"}`},
		{"/maker/register/complete", `{"registrationId":"reg_1","signatures":["` + sigOf(63) + `"]}`},
		{"/maker/api-key/rotate", `{"partyId":"p::1220ab","challenge":"c","signature":"` + sigOf(65) + `"}`},
		{"/maker/api-key/rotate", `{"partyId":"p::1220ab","challenge":"c","signature":"` + sig[:10] + `"}`},
		{"/maker/challenge", `{"partyId":["p"]}`},
		{"/wallet/withdraw", `{"symbol":"cc","amount":"1,5","receiver":"x::1220"}`},
		{"/wallet/withdraw", `{"symbol":"cc","amount":1,"receiver":"x::1220"}`},
		{"/tx/execute", `{"actionId":"act_1","signature":"` + sigOf(63) + `"}`},
		{"/tx/execute", `{"actionId":"act_1","signature":"` + sigOf(0) + `"}`},
		{"/tx/execute", `{"actionId":"act_1"}`},
		{"/tx/execute", `{"signatures":[]}`},
		{"/tx/execute", batch(machine.MaxBatch + 1)},
		{"/tx/execute", `{"actionId":"act_1","signature":"` + sig + `","signatures":[{"actionId":"act_2","signature":"` + sig + `"}]}`},
		{"/tx/execute", `{"signatures":[{"actionId":"act_1","signature":"` + sigOf(32) + `"}]}`},
		{"/faucet", `{"please":true}`},
		{"/quote/q_1/accept", `{"now":1}`},
	}
}

// mutateBody breaks a valid body: cut it short, or splice in a byte that makes it invalid.
func mutateBody(t *rapid.T, valid string) string {
	switch rapid.IntRange(0, 2).Draw(t, "how") {
	case 0: // a proper, non-empty prefix of a JSON object is never a JSON value
		return valid[:rapid.IntRange(1, len(valid)-1).Draw(t, "cut")]
	case 1: // an unknown field
		return valid[:len(valid)-1] + `,"` + rapid.StringMatching(`[a-z]{1,8}`).Draw(t, "field") + `x":1}`
	default: // a structural byte where a value must be
		i := strings.IndexByte(valid, ':')
		return valid[:i+1] + rapid.SampledFrom([]string{"}", "]", ",", ":"}).Draw(t, "junk") + valid[i+1:]
	}
}

// validBodies are well-formed bodies per route (each decodes: see FuzzDecodeRequest's seeds).
var validBodies = map[string]string{
	"/maker/register/start":    `{"displayName":"Bot","publicKey":"` + pubKey + `"}`,
	"/maker/register/complete": `{"registrationId":"reg_1","signatures":["` + sig + `"]}`,
	"/maker/challenge":         `{"partyId":"p::1220ab"}`,
	"/maker/api-key/rotate":    `{"partyId":"p::1220ab","challenge":"c","signature":"` + sig + `"}`,
	"/maker/quotes":            `{"rfqId":"rfq_1","price":"1.5","validUntil":"2026-01-02T15:04:05+01:00"}`,
	"/rfq":                     `{"direction":"BUY","qty":"0.1","base":"a","quote":"b","invitedMakers":["m"],"ttlSeconds":60}`,
	"/wallet/withdraw":         `{"symbol":"cc","amount":"1","receiver":"x::1220"}`,
	"/tx/execute":              `{"signatures":[{"actionId":"act_1","signature":"` + sig + `"}]}`,
}

// TestMalformedBodiesNeverReachTheDesk: every malformed body, from the corpus or a valid
// body broken at random, is answered exactly 400 and never becomes a desk input.
func TestMalformedBodiesNeverReachTheDesk(t *testing.T) {
	d := newFakeDesk()
	h := New(Options{Desk: d, PerIPPerMinute: 1 << 30}).Handler()
	post := func(t interface{ Fatalf(string, ...any) }, c malformedCase) {
		before := d.beyondAuth()
		req := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body))
		req.Header.Set("X-API-Key", testKey)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("POST %s %q: status %d %s, want 400", c.path, c.body, rec.Code, rec.Body)
		}
		if d.beyondAuth() != before {
			t.Fatalf("POST %s %q: answered 400 but the desk got the command", c.path, c.body)
		}
	}
	for _, c := range malformedCorpus() {
		post(t, c)
	}
	paths := slices.Sorted(maps.Keys(validBodies)) // rapid's draws must not depend on map order
	rapid.Check(t, func(rt *rapid.T) {
		path := rapid.SampledFrom(paths).Draw(rt, "path")
		post(rt, malformedCase{path: path, body: mutateBody(rt, validBodies[path])})
	})
}

// TestBadLimitsNeverReachTheDesk: a `limit` outside 1..500, not an integer, or given twice
// is 400 on every list read, and the desk is never asked for the list.
func TestBadLimitsNeverReachTheDesk(t *testing.T) {
	d := newFakeDesk()
	h := New(Options{Desk: d, PerIPPerMinute: 1 << 30}).Handler()
	for _, path := range []string{"/trades", "/maker/trades", "/rfq-history"} {
		for _, q := range []string{"limit=0", "limit=501", "limit=-1", "limit=abc", "limit=", "limit=1&limit=2", "limit=1e2", "limit=99999999"} {
			d.mu.Lock()
			d.reads = nil
			d.mu.Unlock()
			req := httptest.NewRequest(http.MethodGet, path+"?"+q, nil)
			req.Header.Set("X-API-Key", testKey)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("GET %s?%s: status %d %s, want 400", path, q, rec.Code, rec.Body)
			}
			d.mu.Lock()
			for _, r := range d.reads {
				switch r.q.(type) {
				case machine.QTrades, machine.QMakerTrades, machine.QRfqHistory:
					t.Errorf("GET %s?%s: answered %d but the desk was asked %T", path, q, rec.Code, r.q)
				}
			}
			d.mu.Unlock()
		}
	}
}
