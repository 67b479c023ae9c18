package transport

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/deskco/rfqdesk/machine"
)

// fuzzRoutes are the POST routes with a body the fuzzer feeds.
var fuzzRoutes = []string{
	"/maker/register/start",
	"/maker/register/complete",
	"/maker/challenge",
	"/maker/api-key/rotate",
	"/maker/quotes",
	"/rfq",
	"/wallet/withdraw",
	"/tx/execute",
	"/faucet",
	"/quote/q_1/accept",
}

// FuzzDecodeRequest feeds arbitrary bodies to every JSON decoder through the real handler:
// a malformed body never produces a 5xx or a panic, and the desk is reached only by a body
// that decoded.
func FuzzDecodeRequest(f *testing.F) {
	seeds := []string{
		`{"displayName":"Bot","publicKey":"` + pubKey + `"}`,
		`{"registrationId":"reg_1","signatures":["` + sig + `"]}`,
		`{"partyId":"p::1220ab"}`,
		`{"partyId":"p::1220ab","challenge":"c","signature":"` + sig + `"}`,
		`{"rfqId":"rfq_1","price":"1.5","validUntil":"2026-01-02T15:04:05+01:00"}`,
		`{"direction":"BUY","qty":"0.1","base":"a","quote":"b","invitedMakers":["m"],"ttlSeconds":60}`,
		`{"symbol":"cc","amount":"1","receiver":"x::1220"}`,
		`{"signatures":[{"actionId":"act_1","signature":"` + sig + `"}]}`,
		``, `{}`, `[]`, `null`, `{"a":1}{}`, `{"price":1e400}`, "\xff\xfe",
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	d := newFakeDesk()
	d.doFn = func(cmd machine.Command_) (machine.Reply, error) {
		switch cmd.(type) {
		case machine.RegisterComplete:
			return machine.Reply{Status: 200, Body: machine.RegisterCompleteDTO{}}, nil
		case machine.RotateKey:
			return machine.Reply{Status: 200, Body: machine.APIKeyDTO{}}, nil
		}
		return machine.Reply{Status: 200, Body: machine.OKDTO{OK: true}}, nil
	}
	srv := New(Options{Desk: d, PerIPPerMinute: 1 << 30})
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		before := d.beyondAuth()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("X-API-Key", testKey)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body)
		}
		reached := d.beyondAuth() > before
		if reached != (rec.Code == 200) {
			t.Fatalf("%s %q: status %d but desk reached %v", path, body, rec.Code, reached)
		}
	})
}
