package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
)

const houseKey = "house-taker-key-0123456789"

// baseConfig is the test desk: small instruments, a generous per-IP limit, no faucet
// cooldown, and a funded house taker.
const baseConfig = `
min_notional_usd = "1"
faucet_cooldown = "0s"
per_ip_per_minute = 1000

[[instrument]]
symbol = "cbtc"
display = "CBTC"
decimals = 8
usd_price = "100000"
faucet_amount = "0.1"

[[instrument]]
symbol = "usdcx"
display = "USDCx"
decimals = 6
usd_price = "1"
faucet_amount = "10000"

[[house]]
name = "house-taker"
role = "taker"
api_key = "` + houseKey + `"
fund = { cbtc = "10", usdcx = "1000000" }
`

// liveDesk is the real desk process's run, serving on loopback ports.
type liveDesk struct {
	base, admin string
	stop        func()
}

func startLive(t *testing.T, config string, extra ...string) *liveDesk {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "desk.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data"),
		"-config", cfgPath, "-log-level", "error"}, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { done <- run(ctx, args, io.Discard, &stderr, os.Getenv, ready) }()
	select {
	case addrs := <-ready:
		d := &liveDesk{base: "http://" + addrs[0], admin: "http://" + addrs[1]}
		d.stop = func() {
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("desk exited %d: %s", code, stderr.String())
			}
		}
		t.Cleanup(d.stop)
		return d
	case code := <-done:
		cancel()
		t.Fatalf("desk exited %d before serving: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("desk did not start within 10s")
	}
	return nil
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// maker registers a party, funds it from the faucet and accepts every deposit.
func maker(t *testing.T, d *liveDesk, name string, fund bool) *client.Client {
	t.Helper()
	c := registered(t, d.base, name)
	if fund {
		fundAll(t, c, 2)
	}
	return c
}

// registered is a client of the desk at base for a party it registers as name.
func registered(t *testing.T, base, name string) *client.Client {
	t.Helper()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx(t), name); err != nil {
		t.Fatal(err)
	}
	return c
}

func signAll(t *testing.T, c *client.Client, acts []client.SignAction) {
	t.Helper()
	res, err := c.SignAndExecute(ctx(t), acts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.OK() {
			t.Fatalf("action %s: %s %s", r.ActionID, r.Status, r.Error)
		}
	}
}

func house(t *testing.T, d *liveDesk) *client.Client { return houseAt(t, d.base) }

// houseAt is the house taker's client of the desk at base.
func houseAt(t *testing.T, base string) *client.Client {
	t.Helper()
	c, err := client.New(base, client.WithAPIKey(houseKey))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// await reads the stream until an event of type typ that ok accepts arrives; it returns
// the types seen on the way, the event included.
func await(t *testing.T, s *client.Stream, typ string, ok func(client.Event) bool) (client.Event, []string) {
	t.Helper()
	var seen []string
	timeout := time.After(15 * time.Second)
	for {
		select {
		case e, open := <-s.Events():
			if !open {
				t.Fatalf("stream ended waiting for %s: %v (saw %v)", typ, s.Err(), seen)
			}
			seen = append(seen, e.Type)
			if e.Type == typ && (ok == nil || ok(e)) {
				return e, seen
			}
		case <-timeout:
			t.Fatalf("no %s within 15s (saw %v)", typ, seen)
		}
	}
}

func subscribe(t *testing.T, c *client.Client) *client.Stream {
	t.Helper()
	s := c.Subscribe(context.Background(), &client.StreamOptions{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	t.Cleanup(s.Close)
	await(t, s, client.EventConnected, nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := c.Status(ctx(t))
		if err == nil && st.Invitable {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("maker never became invitable: %+v %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLifecycleOverTheWire: two registered makers fund themselves and stream, the house
// taker asks both, both quote and sign, the taker accepts the better quote, and the trade
// settles with exact balances; the loser hears rfq.closed then quote.status lost.
func TestLifecycleOverTheWire(t *testing.T) {
	d := startLive(t, baseConfig)
	m1, m2, taker := maker(t, d, "Wire Maker One", true), maker(t, d, "Wire Maker Two", true), house(t, d)
	s1, s2 := subscribe(t, m1), subscribe(t, m2)

	rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: "SELL", Qty: "0.05", Base: "CBTC", Quote: "usdcx",
		InvitedMakers: []string{m1.Hint(), m2.Hint()}, TTLSeconds: 120})
	if err != nil {
		t.Fatal(err)
	}
	quote := func(m *client.Client, s *client.Stream, price client.Decimal) *client.QuoteWithActions {
		await(t, s, "rfq.created", nil)
		q, err := m.SubmitQuote(ctx(t), client.QuoteRequest{RFQID: rfq.RFQID, Price: price})
		if err != nil {
			t.Fatal(err)
		}
		signAll(t, m, q.Actions)
		await(t, s, "quote.anchored", nil)
		return q
	}
	q1 := quote(m1, s1, "60000")
	quote(m2, s2, "59000")
	mine, err := taker.MyRFQs(ctx(t))
	if err != nil || len(mine) != 1 || len(mine[0].Quotes) != 2 {
		t.Fatalf("taker's RFQs %+v %v", mine, err)
	}
	tr, err := taker.AcceptQuote(ctx(t), q1.QuoteID)
	if err != nil || tr.Status != "settling" || len(tr.Actions) != 0 {
		t.Fatalf("accept %+v %v", tr, err)
	}
	e, _ := await(t, s1, "trade.settled", nil)
	settled, err := e.TradeSettled()
	if err != nil || settled.Status != "settled" || settled.Fee != "9" || settled.Ledger.UpdateID == "" {
		t.Fatalf("settled %+v %v", settled, err) // 0.05 × 60000 = 3000 at 30 bps
	}
	_, seen := await(t, s2, "quote.status", nil)
	if n := len(seen); n < 2 || seen[n-2] != "rfq.closed" {
		t.Fatalf("loser saw %v, want rfq.closed then quote.status", seen)
	}
	bal, err := m1.Balances(ctx(t))
	if err != nil || fmt.Sprint(bal.Holdings) != "[{cbtc CBTC 0.15} {usdcx USDCx 7000}]" {
		t.Fatalf("winner balances %+v %v", bal, err)
	}
	trades, err := taker.Trades(ctx(t), 10)
	if err != nil || len(trades) != 1 || trades[0].TradeID != settled.TradeID {
		t.Fatalf("taker trades %+v %v", trades, err)
	}
}

// rawCall sends a request as is and returns the status and body.
func rawCall(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	contentType := ""
	if body != "" {
		contentType = "application/json"
	}
	res, b := httpCall(t, method, url, body, map[string]string{"X-API-Key": key, "Content-Type": contentType})
	return res.StatusCode, string(b)
}

// TestErrorsOverTheWire provokes every error of SPEC's table that a client can provoke
// quickly, and checks status and code.
func TestErrorsOverTheWire(t *testing.T) {
	d := startLive(t, baseConfig)
	m1, broke, taker := maker(t, d, "Err Maker", true), maker(t, d, "Broke Maker", false), house(t, d)
	subscribe(t, m1)
	subscribe(t, broke)
	rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: "SELL", Qty: "1", Base: "cbtc", Quote: "usdcx",
		InvitedMakers: []string{m1.Hint(), broke.Hint()}, TTLSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	outsider := maker(t, d, "Outsider", false)
	k1, kb, ko := m1.APIKey(), broke.APIKey(), outsider.APIKey()
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	cases := []struct {
		name, method, path, key, body string
		status                        int
		code                          string
	}{
		{"unknown field", "POST", "/rfq", houseKey, `{"direction":"SELL","qty":"1","base":"cbtc","quote":"usdcx","invitedMakers":["x"],"ttlSeconds":60,"extra":1}`, 400, ""},
		{"float qty", "POST", "/rfq", houseKey, `{"direction":"SELL","qty":1,"base":"cbtc","quote":"usdcx","invitedMakers":["x"],"ttlSeconds":60}`, 400, ""},
		{"unknown instrument", "POST", "/rfq", houseKey, `{"direction":"SELL","qty":"1","base":"doge","quote":"usdcx","invitedMakers":["` + m1.Hint() + `"],"ttlSeconds":60}`, 400, ""},
		{"offline maker", "POST", "/rfq", houseKey, `{"direction":"SELL","qty":"1","base":"cbtc","quote":"usdcx","invitedMakers":["` + outsider.Hint() + `"],"ttlSeconds":60}`, 400, ""},
		{"below minimum", "POST", "/rfq", houseKey, `{"direction":"SELL","qty":"0.000001","base":"cbtc","quote":"usdcx","invitedMakers":["` + m1.Hint() + `"],"ttlSeconds":60}`, 400, "BELOW_MIN_NOTIONAL"},
		{"bad decimal price", "POST", "/maker/quotes", k1, `{"rfqId":"` + rfq.RFQID + `","price":"1e5"}`, 400, ""},
		{"unknown key", "GET", "/balances", "mk_nobody", "", 401, ""},
		{"not invited", "POST", "/maker/quotes", ko, `{"rfqId":"` + rfq.RFQID + `","price":"50000"}`, 403, ""},
		{"unknown rfq", "POST", "/maker/quotes", k1, `{"rfqId":"rfq_000000000000000000000000","price":"50000"}`, 404, ""},
		{"insufficient funds", "POST", "/maker/quotes", kb, `{"rfqId":"` + rfq.RFQID + `","price":"50000"}`, 409, "INSUFFICIENT_FUNDS"},
		{"dust", "POST", "/maker/quotes", k1, `{"rfqId":"` + rfq.RFQID + `","price":"0.0000000001"}`, 409, "DUST_TRADE"},
		{"validUntil in the past", "POST", "/maker/quotes", k1, `{"rfqId":"` + rfq.RFQID + `","price":"50000","validUntil":"` + past + `"}`, 409, ""},
		{"unknown quote accept", "POST", "/quote/q_000000000000000000000000/accept", houseKey, "", 404, ""},
		{"unknown action", "POST", "/tx/execute", k1, `{"actionId":"act_000000000000000000000000","signature":"` + strings.Repeat("A", 86) + `=="}`, 404, ""},
		{"withdraw unknown instrument", "POST", "/wallet/withdraw", k1, `{"symbol":"doge","amount":"1","receiver":"x::1220ab"}`, 404, ""},
		{"batch too large", "POST", "/tx/execute", k1, `{"signatures":[` + strings.TrimSuffix(strings.Repeat(`{"actionId":"a","signature":"`+strings.Repeat("A", 86)+`=="},`, 51), ",") + `]}`, 400, ""},
		{"body too large", "POST", "/rfq", houseKey, `{"direction":"` + strings.Repeat("S", 70000) + `"}`, 413, ""},
		{"limit out of range", "GET", "/trades?limit=501", k1, "", 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := rawCall(t, c.method, d.base+c.path, c.key, c.body)
			if status != c.status || (c.code != "" && !strings.Contains(body, `"code":"`+c.code+`"`)) {
				t.Fatalf("%s %s: %d %s, want %d %s", c.method, c.path, status, body, c.status, c.code)
			}
		})
	}
}

// TestSandboxAnswers501: the local sandbox has no faucet and no withdrawals.
func TestSandboxAnswers501(t *testing.T) {
	d := startLive(t, baseConfig, "-network", "sandbox")
	m := maker(t, d, "Sandboxed", false)
	if status, _ := rawCall(t, "POST", d.base+"/faucet", m.APIKey(), ""); status != 501 {
		t.Fatalf("faucet on sandbox: %d", status)
	}
	if status, _ := rawCall(t, "POST", d.base+"/wallet/withdraw", m.APIKey(), `{"symbol":"cbtc","amount":"1","receiver":"x::1220ab"}`); status != 501 {
		t.Fatalf("withdraw on sandbox: %d", status)
	}
	if info, err := m.FaucetInfo(ctx(t)); err != nil || info.Enabled {
		t.Fatalf("faucet info on sandbox %+v %v", info, err)
	}
}

// TestRegisterStartIsLimitedPerIP: the per-IP limit answers 429.
func TestRegisterStartIsLimitedPerIP(t *testing.T) {
	d := startLive(t, strings.Replace(baseConfig, "per_ip_per_minute = 1000", "per_ip_per_minute = 2", 1))
	body := `{"displayName":"Limited","publicKey":"` + strings.Repeat("A", 43) + `="}`
	var statuses []int
	for range 4 {
		status, _ := rawCall(t, "POST", d.base+"/maker/register/start", "", body)
		statuses = append(statuses, status)
	}
	if statuses[3] != 429 {
		t.Fatalf("statuses %v, want the later ones 429", statuses)
	}
}

// authRoutes are every endpoint that needs a key, with a plausible body.
var authRoutes = []struct{ method, path, body string }{
	{"GET", "/maker/status", ""}, {"POST", "/maker/preapproval", ""},
	{"POST", "/maker/quotes", `{"rfqId":"rfq_x","price":"1"}`}, {"DELETE", "/maker/quotes/q_x", ""},
	{"GET", "/maker/trades", ""}, {"GET", "/rfq/incoming", ""}, {"GET", "/maker/reference-price?base=cbtc&quote=usdcx", ""},
	{"POST", "/rfq", `{"direction":"SELL","qty":"1","base":"cbtc","quote":"usdcx","invitedMakers":["x"],"ttlSeconds":60}`},
	{"DELETE", "/rfq/rfq_x", ""}, {"GET", "/rfq/mine", ""}, {"GET", "/rfq-history", ""}, {"POST", "/quote/q_x/accept", ""},
	{"GET", "/trades", ""}, {"GET", "/desk", ""}, {"GET", "/config", ""}, {"GET", "/instruments", ""},
	{"GET", "/balances", ""}, {"GET", "/wallet/holdings", ""}, {"GET", "/wallet/incoming", ""},
	{"POST", "/wallet/incoming/00ab/accept", ""}, {"POST", "/wallet/withdraw", `{"symbol":"cbtc","amount":"1","receiver":"x::1220ab"}`},
	{"POST", "/faucet", ""}, {"GET", "/faucet", ""}, {"GET", "/tx/pending", ""},
	{"POST", "/tx/execute", `{"actionId":"act_x","signature":"` + strings.Repeat("A", 86) + `=="}`},
}

// TestAuthMatrix: every authenticated endpoint refuses a missing and an unknown key, and
// another party's things are out of reach of a valid key.
func TestAuthMatrix(t *testing.T) {
	d := startLive(t, baseConfig)
	for _, r := range authRoutes {
		for _, key := range []string{"", "mk_unknown"} {
			if status, body := rawCall(t, r.method, d.base+r.path, key, r.body); status != 401 {
				t.Errorf("%s %s with key %q: %d %s, want 401", r.method, r.path, key, status, body)
			}
		}
	}
	owner, other, taker := maker(t, d, "Owner", true), maker(t, d, "Other", true), house(t, d)
	s := subscribe(t, owner)
	rfq, q := quoteRFQ(t, taker, owner, s, client.CreateRFQRequest{Direction: "BUY", Qty: "0.01", Base: "cbtc", Quote: "usdcx", TTLSeconds: 60}, "60000")
	sig, err := owner.Sign(q.Actions[0])
	if err != nil {
		t.Fatal(err)
	}
	ko := other.APIKey()
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"DELETE", "/rfq/" + rfq.RFQID, "", 403},
		{"DELETE", "/maker/quotes/" + q.QuoteID, "", 403},
		{"POST", "/quote/" + q.QuoteID + "/accept", "", 404}, // not anchored: invisible to anyone but its maker
		{"POST", "/tx/execute", `{"actionId":"` + q.Actions[0].ID + `","signature":"` + sig + `"}`, 404},
	} {
		if status, body := rawCall(t, c.method, d.base+c.path, ko, c.body); status != c.status {
			t.Errorf("another party's %s %s: %d %s, want %d", c.method, c.path, status, body, c.status)
		}
	}
	if pending, err := other.PendingActions(ctx(t)); err != nil || len(pending) != 0 {
		t.Fatalf("another party's pending actions leaked: %+v %v", pending, err)
	}
}

// TestKeyRotationOverTheWire: after challenge + rotate the old key is refused and the
// sockets it opened are closed with 4401.
func TestKeyRotationOverTheWire(t *testing.T) {
	d := startLive(t, baseConfig)
	m := maker(t, d, "Rotator", false)
	old := m.APIKey()
	s := subscribe(t, m)
	if _, err := m.RecoverKey(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if m.APIKey() == old {
		t.Fatal("the key did not change")
	}
	if status, _ := rawCall(t, "GET", d.base+"/maker/status", old, ""); status != 401 {
		t.Fatalf("old key answered %d", status)
	}
	if _, err := m.Status(ctx(t)); err != nil {
		t.Fatalf("new key refused: %v", err)
	}
	select {
	case <-s.Done():
		if !errors.Is(s.Err(), client.ErrUnauthorized) {
			t.Fatalf("stream ended with %v, want the 4401 auth error", s.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the old key's socket was not closed")
	}
}

// TestSnapshotOnReconnect: a new socket first receives the party's open RFQs and its live
// quote on each.
func TestSnapshotOnReconnect(t *testing.T) {
	d := startLive(t, baseConfig)
	m, taker := maker(t, d, "Snapper", true), house(t, d)
	s := subscribe(t, m)
	_, q := quoteRFQ(t, taker, m, s, client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "cbtc", Quote: "usdcx", TTLSeconds: 120}, "50000")
	anchor(t, m, s, q)
	again := m.Subscribe(context.Background(), nil)
	defer again.Close()
	_, seen := await(t, again, "quote.status", nil)
	if got := strings.Join(seen, ","); got != client.EventConnected+",rfq.created,quote.created,quote.status" {
		t.Fatalf("snapshot %s", got)
	}
}

// TestMalformedBodiesNeverFail5xx: garbage on every POST endpoint is a 4xx, never a 5xx.
func TestMalformedBodiesNeverFail5xx(t *testing.T) {
	d := startLive(t, baseConfig)
	m := maker(t, d, "Fuzzed", false)
	bodies := []string{"", "{", "[]", "null", `"x"`, "12", `{"a":`, `{"qty":{"x":1}}`, `{"price":[1,2]}`,
		`{"signatures":null}`, `{"signatures":[null]}`, `{"displayName":null,"publicKey":7}`, "\x00\xff", `{"rfqId":"` + strings.Repeat("x", 5000) + `"}`,
		`{"direction":"SELL","qty":"99999999999999999999999999999999999","base":"cbtc","quote":"usdcx","invitedMakers":[],"ttlSeconds":9e99}`}
	posts := []string{"/maker/register/start", "/maker/register/complete", "/maker/challenge", "/maker/api-key/rotate"}
	for _, r := range authRoutes {
		if r.method == "POST" {
			posts = append(posts, r.path)
		}
	}
	for _, path := range posts {
		for _, b := range bodies {
			if status, resp := rawCall(t, "POST", d.base+path, m.APIKey(), b); status >= 500 {
				t.Errorf("POST %s %q: %d %s", path, b, status, resp)
			}
		}
	}
}

// TestAdminEndpoints: health, readiness, metrics and the runtime's profiles on the admin
// listener only.
func TestAdminEndpoints(t *testing.T) {
	d := startLive(t, baseConfig)
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/metrics": "desk_loop_inputs_total",
		"/debug/pprof/": "goroutine", "/debug/pprof/goroutine?debug=1": "goroutine profile: total",
		"/debug/pprof/heap?debug=1": "heap profile:", "/debug/pprof/cmdline": "-test."} {
		status, body := rawCall(t, "GET", d.admin+path, "", "")
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("admin %s: %d %s", path, status, body)
		}
		if path == "/healthz" {
			continue // the public API has its own keyless liveness probe
		}
		if status, _ := rawCall(t, "GET", d.base+path, "", ""); status != 404 && status != 401 {
			t.Errorf("%s answered %d on the public listener", path, status)
		}
	}
}
