package transport

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
)

// keyedRequest sends one request with the given Idempotency-Key headers.
func keyedRequest(t *testing.T, url, method, path, body, apiKey string, idemKeys ...string) response {
	t.Helper()
	return requestWith(t, method, url+path, body, http.Header{"X-API-Key": orNone(apiKey), HeaderIdempotencyKey: idemKeys})
}

// TestIdempotencyKeyReachesTheDesk: a write with an Idempotency-Key reaches the desk
// wrapped with the key, method, path and the SHA-256 of the body as sent (and, on an
// unauthenticated registration call, the client's address group); without the header the
// command is sent as ever; a replayed answer carries Idempotent-Replayed: true and the
// same bytes.
func TestIdempotencyKeyReachesTheDesk(t *testing.T) {
	d := newFakeDesk()
	_, ts := testServer(t, d, nil)
	body := `{"direction":"buy","qty":"1","base":"cbtc","quote":"usdcx","invitedMakers":[],"ttlSeconds":60}`
	first := keyedRequest(t, ts.URL, "POST", "/rfq", body, testKey, "abc-1")
	if first.status != 200 || first.header.Get(HeaderIdempotentReplayed) != "" {
		t.Fatalf("first: %d %v", first.status, first.header)
	}
	cmds := d.commands()
	in, ok := cmds[len(cmds)-1].(machine.Idempotent)
	sum := sha256.Sum256([]byte(body))
	if !ok || in.Key != "abc-1" || in.Method != "POST" || in.Path != "/rfq" || in.Address != "" || in.BodyHash != hex.EncodeToString(sum[:]) {
		t.Fatalf("the desk got %#v", cmds[len(cmds)-1])
	}
	if c, ok := in.Cmd.(machine.CreateRFQ); !ok || c.KeyHash != testHash || c.TTLSeconds != 60 {
		t.Fatalf("wrapped command %#v", in.Cmd)
	}
	keyedRequest(t, ts.URL, "POST", "/rfq", body, testKey)
	cmds = d.commands()
	if _, wrapped := cmds[len(cmds)-1].(machine.Idempotent); wrapped {
		t.Fatal("a write without the header was wrapped")
	}

	keyedRequest(t, ts.URL, "POST", "/maker/register/start", `{"displayName":"A","publicKey":"`+strings.Repeat("A", 43)+`="}`, "", "r1")
	cmds = d.commands()
	if in, ok := cmds[len(cmds)-1].(machine.Idempotent); !ok || in.Address != "127.0.0.1" {
		t.Fatalf("registration: %#v", cmds[len(cmds)-1])
	}

	raw, _ := json.Marshal(machine.OKDTO{OK: true})
	d.doFn = func(machine.Command_) (machine.Reply, error) {
		return machine.Reply{Status: 200, Body: json.RawMessage(raw), Replayed: true}, nil
	}
	again := keyedRequest(t, ts.URL, "POST", "/faucet", "", testKey, "abc-1")
	if again.header.Get(HeaderIdempotentReplayed) != "true" || again.body != string(raw)+"\n" {
		t.Fatalf("replay: %v %q", again.header, again.body)
	}
}

// TestIdempotencyKeyRefusals: a malformed key, two headers or a key on a route whose answer
// carries a new API key are 400 before anything reaches the desk; an unknown API key is
// 401 whatever the Idempotency-Key.
func TestIdempotencyKeyRefusals(t *testing.T) {
	d := knownKeyDesk()
	_, ts := testServer(t, d, nil)
	for _, tc := range []struct {
		method, path, apiKey string
		keys                 []string
		status               int
	}{
		{"POST", "/faucet", testKey, []string{"a b"}, 400},
		{"POST", "/faucet", testKey, []string{strings.Repeat("a", 65)}, 400},
		{"POST", "/faucet", testKey, []string{""}, 400},
		{"DELETE", "/rfq/x", testKey, []string{"é"}, 400},
		{"POST", "/faucet", testKey, []string{"a", "b"}, 400},
		{"POST", "/faucet", "mk_unknown", []string{"a b"}, 401},
		{"POST", "/maker/register/complete", "", []string{"a"}, 400},
		{"POST", "/maker/api-key/rotate", "", []string{"a"}, 400},
	} {
		before := len(d.commands())
		res := keyedRequest(t, ts.URL, tc.method, tc.path, "", tc.apiKey, tc.keys...)
		if res.status != tc.status {
			t.Errorf("%s %s %q: %d %s, want %d", tc.method, tc.path, tc.keys, res.status, res.body, tc.status)
		}
		if n := len(d.commands()) - before; n != 0 {
			t.Errorf("%s %s %q: %d commands reached the desk", tc.method, tc.path, tc.keys, n)
		}
	}
	// The longest key and every allowed character pass.
	if res := keyedRequest(t, ts.URL, "POST", "/faucet", "", testKey, strings.Repeat("a", 64)); res.status != 200 {
		t.Errorf("64 characters: %d", res.status)
	}
	if res := keyedRequest(t, ts.URL, "POST", "/faucet", "", testKey, "AZaz09_.:-"); res.status != 200 {
		t.Errorf("every allowed character: %d", res.status)
	}
}
