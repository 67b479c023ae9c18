package transport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/google/go-cmp/cmp"
)

const testKey = "mk_test-key"

var (
	testHash = HashKey(testKey)
	req      = machine.Req{KeyHash: testHash}
	pubKey   = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	sig      = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 64))
	sigBytes = bytes.Repeat([]byte{9}, 64)
)

var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b money.Decimal) bool { return a.String() == b.String() }),
}

func ptrTime(s string) *time.Time {
	t, err := machine.ParseTime(s)
	if err != nil {
		panic(err)
	}
	return &t
}

// TestRoutesDecodeToCommands sends a valid request to every command route and checks the
// machine command the desk received.
func TestRoutesDecodeToCommands(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		want                     machine.Command_
	}{
		{"register start", "POST", "/maker/register/start", `{"displayName":"Bot 1","publicKey":"` + pubKey + `"}`,
			machine.RegisterStart{DisplayName: "Bot 1", PublicKey: bytes.Repeat([]byte{7}, 32)}},
		{"challenge is drawn here", "POST", "/maker/challenge", `{"partyId":"bot-1-abcdef::1220ab"}`,
			machine.ChallengeRequest{PartyID: "bot-1-abcdef::1220ab"}},
		{"preapproval", "POST", "/maker/preapproval", ``, machine.Preapproval{Req: req}},
		{"submit quote", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1.50"}`,
			machine.SubmitQuote{Req: req, RFQID: "rfq_1", Price: money.MustParse("1.5")}},
		{"submit quote validUntil offset", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"2","validUntil":"2026-01-02T16:04:05.5+01:00"}`,
			machine.SubmitQuote{Req: req, RFQID: "rfq_1", Price: money.MustParse("2"), ValidUntil: ptrTime("2026-01-02T15:04:05.500Z")}},
		{"submit quote validUntil null", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"2","validUntil":null}`,
			machine.SubmitQuote{Req: req, RFQID: "rfq_1", Price: money.MustParse("2")}},
		{"delete quote", "DELETE", "/maker/quotes/q_9", ``, machine.DeleteQuote{Req: req, QuoteID: "q_9"}},
		{"mass cancel", "DELETE", "/maker/quotes", ``, machine.CancelAllQuotes{Req: req}},
		{"decline rfq", "POST", "/maker/rfq/rfq_1/decline", `{"reason":"size"}`, machine.DeclineRFQ{Req: req, RFQID: "rfq_1", Reason: "size"}},
		{"decline rfq unknown reason is the desk's", "POST", "/maker/rfq/rfq_1/decline", `{"reason":"bored"}`, machine.DeclineRFQ{Req: req, RFQID: "rfq_1", Reason: "bored"}},
		{"create rfq", "POST", "/rfq", `{"direction":"SELL","qty":"0.001","base":"CBTC","quote":"usdcx","invitedMakers":["m-1"],"ttlSeconds":60}`,
			machine.CreateRFQ{Req: req, Direction: machine.Sell, Qty: money.MustParse("0.001"), Base: "CBTC", Quote: "usdcx", InvitedMakers: []string{"m-1"}, TTLSeconds: 60}},
		{"cancel rfq", "DELETE", "/rfq/rfq_1", ``, machine.CancelRFQ{Req: req, RFQID: "rfq_1"}},
		{"accept quote", "POST", "/quote/q_1/accept", ``, machine.AcceptQuote{Req: req, QuoteID: "q_1"}},
		{"accept incoming", "POST", "/wallet/incoming/00ab/accept", ``, machine.AcceptIncoming{Req: req, CID: "00ab"}},
		{"withdraw", "POST", "/wallet/withdraw", `{"symbol":"CC","amount":"10","receiver":"x::1220ab"}`,
			machine.Withdraw{Req: req, Symbol: "CC", Amount: money.MustParse("10"), Receiver: "x::1220ab"}},
		{"faucet", "POST", "/faucet", ``, machine.FaucetDraw{Req: req}},
		{"execute singular", "POST", "/tx/execute", `{"actionId":"act_1","signature":"` + sig + `"}`,
			machine.ExecuteActions{Req: req, Entries: []machine.SignedAction{{ActionID: "act_1", Signature: sigBytes}}}},
		{"execute batch", "POST", "/tx/execute", `{"signatures":[{"actionId":"act_1","signature":"` + sig + `"},{"actionId":"act_2","signature":"` + sig + `"}]}`,
			machine.ExecuteActions{Req: req, Batch: true, Entries: []machine.SignedAction{{ActionID: "act_1", Signature: sigBytes}, {ActionID: "act_2", Signature: sigBytes}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, res := freshRequest(t, tc.method, tc.path, tc.body, testKey, "application/json")
			if res.status != 200 {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			got := d.commands()
			if len(got) != 1 {
				t.Fatalf("desk got %d commands, want 1", len(got))
			}
			cmd := got[0]
			if c, ok := cmd.(machine.ChallengeRequest); ok {
				if !strings.HasPrefix(c.Challenge, challengePrefix) || len(c.Challenge) != len(challengePrefix)+32 {
					t.Errorf("challenge %q is not desk-challenge: + base64url(24 bytes)", c.Challenge)
				}
				c.Challenge = ""
				cmd = c
			}
			if diff := cmp.Diff(tc.want, cmd, cmpOpts); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoutesDecodeToQueries checks the query every GET route sends.
func TestRoutesDecodeToQueries(t *testing.T) {
	cases := []struct {
		path string
		want machine.Query
	}{
		{"/maker/status", machine.QMakerStatus{}},
		{"/maker/trades", machine.QMakerTrades{Limit: 100}},
		{"/maker/trades?limit=7", machine.QMakerTrades{Limit: 7}},
		{"/rfq/incoming", machine.QRfqIncoming{}},
		{"/maker/reference-price?base=CBTC&quote=usdcx", machine.QReferencePrice{Base: "CBTC", Quote: "usdcx"}},
		{"/rfq/mine", machine.QRfqMine{}},
		{"/rfq-history", machine.QRfqHistory{Limit: 100}},
		{"/rfq-history?limit=500", machine.QRfqHistory{Limit: 500}},
		{"/trades?limit=1", machine.QTrades{Limit: 1}},
		{"/desk", machine.QDesk{}},
		{"/config", machine.QConfig{}},
		{"/instruments", machine.QInstruments{}},
		{"/balances", machine.QBalances{}},
		{"/wallet/holdings", machine.QBalances{}},
		{"/wallet/incoming", machine.QIncoming{}},
		{"/faucet", machine.QFaucetInfo{}},
		{"/tx/pending", machine.QTxPending{}},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			d, res := freshRequest(t, "GET", tc.path, "", testKey, "")
			if res.status != 200 || res.body != "{\"query\":\"ok\"}\n" {
				t.Fatalf("status %d, body %q", res.status, res.body)
			}
			got := d.queries()
			if len(got) != 1 {
				t.Fatalf("desk got %d queries, want 1", len(got))
			}
			if got[0].keyHash != testHash {
				t.Errorf("key hash %q, want %q", got[0].keyHash, testHash)
			}
			if diff := cmp.Diff(tc.want, got[0].q); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBadRequests covers the wire syntax the transport refuses with 400 before the desk.
func TestBadRequests(t *testing.T) {
	long := strings.Repeat("a", maxIDLen+1)
	cases := []struct {
		name, method, path, body string
	}{
		{"unknown field", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1","extra":1}`},
		{"field name in another case", "POST", "/maker/quotes", `{"RFQID":"rfq_1","price":"1"}`},
		{"repeated field", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1","price":"2"}`},
		{"repeated field in bodiless", "POST", "/faucet", `{"a":1,"a":1}`},
		{"wrong type number price", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":1.5}`},
		{"wrong type rfqId", "POST", "/maker/quotes", `{"rfqId":5,"price":"1"}`},
		{"decimal 11 digits", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1.12345678901"}`},
		{"decimal exponent", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1e5"}`},
		{"decimal negative", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"-1"}`},
		{"missing price", "POST", "/maker/quotes", `{"rfqId":"rfq_1"}`},
		{"bad timestamp", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1","validUntil":"tomorrow"}`},
		{"timestamp number", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1","validUntil":1700000000}`},
		{"two values", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1"}{}`},
		{"trailing garbage", "POST", "/maker/quotes", `{"rfqId":"rfq_1","price":"1"} x`},
		{"array body", "POST", "/maker/quotes", `[]`},
		{"null body", "POST", "/maker/quotes", `null`},
		{"empty body", "POST", "/maker/quotes", ``},
		{"truncated", "POST", "/maker/quotes", `{"rfqId":"rfq_1"`},
		{"bad rfq id charset", "POST", "/maker/quotes", `{"rfqId":"rfq/1","price":"1"}`},
		{"long rfq id", "POST", "/maker/quotes", `{"rfqId":"` + long + `","price":"1"}`},
		{"path id too long", "DELETE", "/maker/quotes/" + long, ``},
		{"path id bad char", "DELETE", "/rfq/a%20b", ``},
		{"rfq float ttl", "POST", "/rfq", `{"direction":"SELL","qty":"1","base":"a","quote":"b","invitedMakers":["m"],"ttlSeconds":1.5}`},
		{"rfq qty number", "POST", "/rfq", `{"direction":"SELL","qty":1,"base":"a","quote":"b","invitedMakers":["m"],"ttlSeconds":10}`},
		{"rfq missing qty", "POST", "/rfq", `{"direction":"SELL","base":"a","quote":"b","invitedMakers":["m"],"ttlSeconds":10}`},
		{"rfq missing invited", "POST", "/rfq", `{"direction":"SELL","qty":"1","base":"a","quote":"b","ttlSeconds":10}`},
		{"rfq invited not strings", "POST", "/rfq", `{"direction":"SELL","qty":"1","base":"a","quote":"b","invitedMakers":[1],"ttlSeconds":10}`},
		{"public key short", "POST", "/maker/register/start", `{"displayName":"x","publicKey":"` + base64.StdEncoding.EncodeToString(make([]byte, 31)) + `"}`},
		{"public key url alphabet", "POST", "/maker/register/start", `{"displayName":"x","publicKey":"` + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 32)) + `"}`},
		{"public key unpadded", "POST", "/maker/register/start", `{"displayName":"x","publicKey":"` + base64.RawStdEncoding.EncodeToString(make([]byte, 32)) + `"}`},
		{"public key missing", "POST", "/maker/register/start", `{"displayName":"x"}`},
		{"complete no signatures", "POST", "/maker/register/complete", `{"registrationId":"reg_1","signatures":[]}`},
		{"complete short signature", "POST", "/maker/register/complete", `{"registrationId":"reg_1","signatures":["` + pubKey + `"]}`},
		{"rotate bad signature", "POST", "/maker/api-key/rotate", `{"partyId":"p::1220","challenge":"c","signature":"!!"}`},
		{"rotate missing challenge", "POST", "/maker/api-key/rotate", `{"partyId":"p::1220","signature":"` + sig + `"}`},
		{"challenge missing party", "POST", "/maker/challenge", `{}`},
		{"withdraw amount number", "POST", "/wallet/withdraw", `{"symbol":"CC","amount":10,"receiver":"x::1"}`},
		{"withdraw missing receiver", "POST", "/wallet/withdraw", `{"symbol":"CC","amount":"10"}`},
		{"execute both forms", "POST", "/tx/execute", `{"actionId":"a","signature":"` + sig + `","signatures":[{"actionId":"b","signature":"` + sig + `"}]}`},
		{"execute neither form", "POST", "/tx/execute", `{}`},
		{"execute empty batch", "POST", "/tx/execute", `{"signatures":[]}`},
		{"execute batch null", "POST", "/tx/execute", `{"signatures":null}`},
		{"execute short signature", "POST", "/tx/execute", `{"actionId":"a","signature":"` + pubKey + `"}`},
		{"execute batch entry unknown field", "POST", "/tx/execute", `{"signatures":[{"actionId":"a","signature":"` + sig + `","x":1}]}`},
		{"execute 51 entries", "POST", "/tx/execute", batchBody(51)},
		{"bodiless with body", "POST", "/faucet", `{"x":1}`},
		{"bodiless with array", "POST", "/quote/q_1/accept", `[]`},
		{"mass cancel with body", "DELETE", "/maker/quotes", `{"quoteId":"q_1"}`},
		{"decline unknown field", "POST", "/maker/rfq/rfq_1/decline", `{"reason":"size","why":"x"}`},
		{"decline missing reason", "POST", "/maker/rfq/rfq_1/decline", `{}`},
		{"decline empty body", "POST", "/maker/rfq/rfq_1/decline", ``},
		{"decline reason number", "POST", "/maker/rfq/rfq_1/decline", `{"reason":1}`},
		{"decline path id bad char", "POST", "/maker/rfq/a%20b/decline", `{"reason":"size"}`},
		{"reference price missing quote", "GET", "/maker/reference-price?base=a", ``},
		{"reference price repeated", "GET", "/maker/reference-price?base=a&base=b&quote=c", ``},
		{"malformed query", "GET", "/trades?limit=%zz", ``},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, res := freshRequest(t, tc.method, tc.path, tc.body, testKey, "application/json")
			if res.status != 400 {
				t.Fatalf("status %d, want 400; body %s", res.status, res.body)
			}
			assertErrorBody(t, res, "")
			if n := d.beyondAuth(); n != 0 {
				t.Errorf("the desk was called %d times", n)
			}
		})
	}
}

func batchBody(n int) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = `{"actionId":"act_` + strings.Repeat("x", i%5+1) + `","signature":"` + sig + `"}`
	}
	return `{"signatures":[` + strings.Join(entries, ",") + `]}`
}

// TestBatchOf50 accepts the largest batch.
func TestBatchOf50(t *testing.T) {
	d, res := freshRequest(t, "POST", "/tx/execute", batchBody(50), testKey, "application/json")
	if res.status != 200 {
		t.Fatalf("status %d: %s", res.status, res.body)
	}
	cmd := d.commands()[0].(machine.ExecuteActions)
	if !cmd.Batch || len(cmd.Entries) != 50 {
		t.Errorf("batch %v with %d entries", cmd.Batch, len(cmd.Entries))
	}
}

// assertErrorBody checks a JSON {error, code?} body with exactly those fields.
func assertErrorBody(t *testing.T, res response, code string) {
	t.Helper()
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var body map[string]any
	dec := json.NewDecoder(strings.NewReader(res.body))
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body %q is not JSON: %v", res.body, err)
	}
	msg, ok := body["error"].(string)
	if !ok || msg == "" {
		t.Errorf("error body %q has no error text", res.body)
	}
	gotCode, hasCode := body["code"]
	switch {
	case code == "" && hasCode:
		t.Errorf("error body %q has a code, want none", res.body)
	case code != "" && gotCode != code:
		t.Errorf("error body %q: code %v, want %s", res.body, gotCode, code)
	}
	if len(body) > 2 {
		t.Errorf("error body %q has extra fields", res.body)
	}
}

// TestLimit covers the `limit` query on the three list endpoints.
func TestLimit(t *testing.T) {
	for _, path := range []string{"/maker/trades", "/trades", "/rfq-history"} {
		for _, v := range []string{"0", "501", "-1", "+5", "1.5", "abc", "", "1e2", "9999999", " 5"} {
			t.Run(path+"="+v, func(t *testing.T) {
				d, res := freshRequest(t, "GET", path+"?limit="+strings.ReplaceAll(v, " ", "%20"), "", testKey, "")
				if res.status != 400 {
					t.Fatalf("status %d, want 400", res.status)
				}
				assertErrorBody(t, res, "")
				if d.beyondAuth() != 0 {
					t.Error("the desk was called")
				}
			})
		}
	}
}

// TestBodyTooLarge is 413 past 64 KiB, for JSON and bodiless POSTs alike.
func TestBodyTooLarge(t *testing.T) {
	big := `{"rfqId":"rfq_1","price":"1","pad":"` + strings.Repeat("x", 64<<10) + `"}`
	for _, tc := range []struct{ path, body string }{
		{"/maker/quotes", big},
		{"/faucet", strings.Repeat(" ", 64<<10+1)},
		{"/maker/register/start", big},
	} {
		d, res := freshRequest(t, "POST", tc.path, tc.body, testKey, "application/json")
		if res.status != 413 {
			t.Fatalf("%s: status %d, want 413", tc.path, res.status)
		}
		assertErrorBody(t, res, "")
		if d.beyondAuth() != 0 {
			t.Error("the desk was called")
		}
	}
}

// TestBodilessPosts accepts no body, whitespace or {} with or without a Content-Type.
func TestBodilessPosts(t *testing.T) {
	paths := []string{"/quote/q_1/accept", "/faucet", "/wallet/incoming/00ab/accept", "/maker/preapproval", "DELETE /maker/quotes"}
	for _, path := range paths {
		method := "POST"
		if m, p, ok := strings.Cut(path, " "); ok {
			method, path = m, p
		}
		for _, body := range []string{"", "{}", " \n", " {} "} {
			for _, ct := range []string{"", "application/json", "text/plain"} {
				d, res := freshRequest(t, method, path, body, testKey, ct)
				if res.status != 200 || len(d.commands()) != 1 {
					t.Errorf("%s body %q type %q: status %d, %d commands", path, body, ct, res.status, len(d.commands()))
				}
			}
		}
	}
}

// TestNotFoundAndMethodNotAllowed answers JSON 404 and 405 (with Allow), without redirects.
func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	d := newFakeDesk()
	srv, ts := testServer(t, d, nil)
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/nope", 404},
		{"GET", "/trades/", 404},   // no trailing-slash redirect
		{"GET", "/TRADES", 404},    // no fixed-path redirect
		{"GET", "/rfq/rfq_1", 405}, // :id only on DELETE
		{"PUT", "/trades", 405},
		{"DELETE", "/trades", 405},
		{"POST", "/rfq/mine", 405},
		{"OPTIONS", "/rfq", 405},
		{"GET", "/tx/execute", 405},
	} {
		res := request(t, ts, tc.method, tc.path, "", testKey, "")
		if res.status != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, res.status, tc.status)
			continue
		}
		assertErrorBody(t, res, "")
		if tc.status == 405 && res.header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
		}
	}
	if d.calls() != 0 {
		t.Error("the desk was called")
	}
	m := srv.Metrics()
	var nf, mna uint64
	for _, c := range m.Requests {
		switch c.Route {
		case NotFoundRoute:
			nf += c.Count
		case MethodNotAllowedRoute:
			mna += c.Count
		}
	}
	if nf != 3 || mna != 6 {
		t.Errorf("metrics: %d not found, %d not allowed; want 3 and 6", nf, mna)
	}
}

// TestPanicIsJSON500 answers a panic with a JSON 500 that leaks nothing.
func TestPanicIsJSON500(t *testing.T) {
	d := newFakeDesk()
	d.doFn = func(machine.Command_) (machine.Reply, error) { panic("secret internal detail") }
	_, ts := testServer(t, d, nil)
	res := request(t, ts, "POST", "/faucet", "", testKey, "")
	if res.status != 500 {
		t.Fatalf("status %d", res.status)
	}
	assertErrorBody(t, res, "")
	if strings.Contains(res.body, "secret") {
		t.Errorf("500 body leaks the panic: %s", res.body)
	}
}

// TestAbortHandlerRepanics lets http.ErrAbortHandler abort the response.
func TestAbortHandlerRepanics(t *testing.T) {
	d := newFakeDesk()
	d.doFn = func(machine.Command_) (machine.Reply, error) { panic(http.ErrAbortHandler) }
	_, ts := testServer(t, d, nil)
	req, _ := http.NewRequest("POST", ts.URL+"/faucet", nil)
	req.Header.Set("X-API-Key", testKey)
	res, err := ts.Client().Do(req)
	if err == nil {
		res.Body.Close()
		t.Fatalf("got status %d, want an aborted response", res.StatusCode)
	}
}

// TestAuthMatrix: every authenticated route without a key is 401 and never reaches the
// desk; the four registration calls need none.
func TestAuthMatrix(t *testing.T) {
	d := newFakeDesk()
	srv, ts := testServer(t, d, nil)
	open := map[string]bool{
		"POST /maker/register/start": true, "POST /maker/register/complete": true,
		"POST /maker/challenge": true, "POST /maker/api-key/rotate": true,
		"GET /maker/stream": true, // 4401 after the handshake; see the stream tests
		HealthRoute:         true,
	}
	for _, rte := range srv.routes() {
		name := rte.method + " " + rte.path
		if rte.auth == open[name] {
			t.Errorf("%s: auth %v", name, rte.auth)
		}
		if !rte.auth {
			continue
		}
		path := strings.NewReplacer(":id", "x_1", ":cid", "00ab").Replace(rte.path)
		res := request(t, ts, rte.method, path, "", "", "")
		if res.status != 401 {
			t.Errorf("%s without a key: status %d, want 401", name, res.status)
			continue
		}
		assertErrorBody(t, res, "")
	}
	if d.calls() != 0 {
		t.Errorf("the desk was called %d times", d.calls())
	}
}

// TestUnknownKeyIsTheDesks401 passes the hash (never the key) and relays the desk's 401.
func TestUnknownKeyIsTheDesks401(t *testing.T) {
	d := newFakeDesk()
	d.readFn = func(string, machine.Query) (machine.Reply, error) {
		return machine.Reply{Status: 401, Err: &machine.APIError{Status: 401, Message: "unknown or missing API key"}}, nil
	}
	_, ts := testServer(t, d, nil)
	res := request(t, ts, "GET", "/instruments", "", "mk_unknown", "")
	if res.status != 401 {
		t.Fatalf("status %d", res.status)
	}
	assertErrorBody(t, res, "")
	if got := d.queries()[0].keyHash; got != HashKey("mk_unknown") || strings.Contains(got, "mk_") {
		t.Errorf("key hash %q", got)
	}
}

// TestReplyEncoding covers refusals with and without code, 204, 202 and desk failures.
func TestReplyEncoding(t *testing.T) {
	cases := []struct {
		name   string
		rep    machine.Reply
		err    error
		status int
		code   string
		body   string
	}{
		{"refusal with code", machine.Reply{Status: 409, Err: &machine.APIError{Status: 409, Code: machine.CodeInsufficientFunds, Message: "no funds"}}, nil, 409, machine.CodeInsufficientFunds, ""},
		{"refusal without code", machine.Reply{Status: 404, Err: &machine.APIError{Status: 404, Message: "gone"}}, nil, 404, "", ""},
		{"refusal status only on Err", machine.Reply{Err: &machine.APIError{Status: 410, Message: "expired"}}, nil, 410, "", ""},
		{"204 has no body", machine.Reply{Status: 204}, nil, 204, "", ""},
		{"202 body", machine.Reply{Status: 202, Body: machine.ActionsDTO{Actions: []machine.SignActionDTO{}}}, nil, 202, "", "{\"actions\":[]}\n"},
		{"desk failure", machine.Reply{}, errDeskDown, 503, machine.CodeRetryLater, ""},
		{"unencodable body", machine.Reply{Status: 200, Body: func() {}}, nil, 500, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newFakeDesk()
			d.doFn = func(machine.Command_) (machine.Reply, error) { return tc.rep, tc.err }
			_, ts := testServer(t, d, nil)
			res := request(t, ts, "DELETE", "/rfq/rfq_1", "", testKey, "")
			if res.status != tc.status {
				t.Fatalf("status %d, want %d (%s)", res.status, tc.status, res.body)
			}
			switch {
			case tc.status == 204:
				if res.body != "" {
					t.Errorf("204 with body %q", res.body)
				}
			case tc.status >= 400:
				assertErrorBody(t, res, tc.code)
			default:
				if res.body != tc.body {
					t.Errorf("body %q, want %q", res.body, tc.body)
				}
			}
		})
	}
}

// TestKeysAreGeneratedAndInjected: register/complete and rotate send the hash of a fresh
// "mk_" key and answer with that key in cleartext.
func TestKeysAreGeneratedAndInjected(t *testing.T) {
	d := newFakeDesk()
	d.doFn = func(cmd machine.Command_) (machine.Reply, error) {
		switch cmd.(type) {
		case machine.RegisterComplete:
			return machine.Reply{Status: 200, Body: machine.RegisterCompleteDTO{PartyID: "p::1220", Hint: "p", Actions: []machine.SignActionDTO{}}}, nil
		case machine.RotateKey:
			return machine.Reply{Status: 200, Body: machine.APIKeyDTO{}}, nil
		}
		return machine.Reply{Status: 500, Err: &machine.APIError{Status: 500, Message: "unexpected"}}, nil
	}
	_, ts := testServer(t, d, nil)
	seen := map[string]bool{}
	check := func(body string, hash string) {
		t.Helper()
		var got struct {
			APIKey string `json:"apiKey"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.APIKey, "mk_") || len(got.APIKey) != 3+43 {
			t.Errorf("key %q is not mk_ + base64url(32 bytes)", got.APIKey)
		}
		if _, err := base64.RawURLEncoding.DecodeString(got.APIKey[3:]); err != nil {
			t.Errorf("key %q: %v", got.APIKey, err)
		}
		if HashKey(got.APIKey) != hash {
			t.Errorf("the desk got hash %s, not the hash of the key handed out", hash)
		}
		if seen[got.APIKey] {
			t.Errorf("key %q handed out twice", got.APIKey)
		}
		seen[got.APIKey] = true
	}
	for i := 0; i < 3; i++ {
		res := request(t, ts, "POST", "/maker/register/complete", `{"registrationId":"reg_1","signatures":["`+sig+`","`+sig+`"]}`, "", "")
		if res.status != 200 {
			t.Fatalf("complete: %d %s", res.status, res.body)
		}
		cmds := d.commands()
		c := cmds[len(cmds)-1].(machine.RegisterComplete)
		if c.RegistrationID != "reg_1" || len(c.Signatures) != 2 || !bytes.Equal(c.Signatures[1], sigBytes) {
			t.Errorf("command %+v", c)
		}
		check(res.body, c.NewKeyHash)
		if !strings.Contains(res.body, `"partyId":"p::1220"`) || !strings.Contains(res.body, `"actions":[]`) {
			t.Errorf("body %s lost the desk's fields", res.body)
		}

		res = request(t, ts, "POST", "/maker/api-key/rotate", `{"partyId":"p::1220","challenge":"desk-challenge:abc","signature":"`+sig+`"}`, "", "")
		if res.status != 200 {
			t.Fatalf("rotate: %d %s", res.status, res.body)
		}
		cmds = d.commands()
		r := cmds[len(cmds)-1].(machine.RotateKey)
		if r.PartyID != "p::1220" || r.Challenge != "desk-challenge:abc" || !bytes.Equal(r.Signature, sigBytes) {
			t.Errorf("command %+v", r)
		}
		check(res.body, r.NewKeyHash)
	}
}

// TestRefusedRegistrationHasNoKey: a refusal carries no key.
func TestRefusedRegistrationHasNoKey(t *testing.T) {
	d := newFakeDesk()
	d.doFn = func(machine.Command_) (machine.Reply, error) {
		return machine.Reply{Status: 401, Err: &machine.APIError{Status: 401, Message: "bad signature"}}, nil
	}
	_, ts := testServer(t, d, nil)
	res := request(t, ts, "POST", "/maker/api-key/rotate", `{"partyId":"p::1220","challenge":"c","signature":"`+sig+`"}`, "", "")
	if res.status != 401 || strings.Contains(res.body, "mk_") {
		t.Fatalf("status %d body %s", res.status, res.body)
	}
	assertErrorBody(t, res, "")
}

// TestPerIPLimit: 10 a minute per IP on register/start and on challenge, separately; the
// bucket refills with the injected clock.
func TestPerIPLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	d := newFakeDesk()
	srv, ts := testServer(t, d, func(o *Options) { o.Now = clock })
	start := `{"displayName":"x","publicKey":"` + pubKey + `"}`
	for i := 0; i < 10; i++ {
		if res := request(t, ts, "POST", "/maker/register/start", start, "", ""); res.status != 200 {
			t.Fatalf("request %d: %d", i, res.status)
		}
	}
	res := request(t, ts, "POST", "/maker/register/start", start, "", "")
	if res.status != 429 || res.header.Get("Retry-After") == "" {
		t.Fatalf("11th: status %d, Retry-After %q", res.status, res.header.Get("Retry-After"))
	}
	assertErrorBody(t, res, "")
	// The challenge has its own bucket.
	if res := request(t, ts, "POST", "/maker/challenge", `{"partyId":"p::1"}`, "", ""); res.status != 200 {
		t.Fatalf("challenge: %d", res.status)
	}
	// A refused request never reaches the desk.
	if n := len(d.commands()); n != 11 {
		t.Errorf("desk got %d commands, want 11", n)
	}
	now = now.Add(6 * time.Second) // one token back at 10/minute
	if res := request(t, ts, "POST", "/maker/register/start", start, "", ""); res.status != 200 {
		t.Fatalf("after refill: %d", res.status)
	}
	if res := request(t, ts, "POST", "/maker/register/start", start, "", ""); res.status != 429 {
		t.Fatalf("after one refill, second: %d", res.status)
	}
	if m := srv.Metrics(); m.RateLimited != 2 {
		t.Errorf("rate limited %d, want 2", m.RateLimited)
	}
}

// TestLimiterMapIsBounded evicts the least recently seen IP.
func TestLimiterMapIsBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l := newIPLimiter(1, 3, func() time.Time { return now })
	for _, ip := range []string{"a", "b", "c", "d"} {
		if ok, _ := l.allow(ip); !ok {
			t.Fatalf("%s refused", ip)
		}
	}
	if l.size() != 3 {
		t.Fatalf("size %d", l.size())
	}
	if ok, _ := l.allow("d"); ok {
		t.Error("d has a second token")
	}
	if ok, _ := l.allow("a"); !ok { // evicted: a fresh bucket
		t.Error("a was not evicted")
	}
}

// TestMetricsCountRoutes counts requests by route pattern and status.
func TestMetricsCountRoutes(t *testing.T) {
	d := newFakeDesk()
	srv, ts := testServer(t, d, nil)
	request(t, ts, "DELETE", "/rfq/rfq_1", "", testKey, "")
	request(t, ts, "DELETE", "/rfq/rfq_2", "", testKey, "")
	request(t, ts, "DELETE", "/rfq/rfq_3", "", "", "")
	got := srv.Metrics().Requests
	want := []RouteStatusCount{{"DELETE /rfq/:id", 200, 2}, {"DELETE /rfq/:id", 401, 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// freshRequest sends one request (as request) to a server over a new fake desk and
// returns the desk, to see what reached it, and the answer.
func freshRequest(t *testing.T, method, path, body, key, contentType string) (*fakeDesk, response) {
	t.Helper()
	d := newFakeDesk()
	_, ts := testServer(t, d, nil)
	return d, request(t, ts, method, path, body, key, contentType)
}
