package main

import (
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// idemCall sends one request with an Idempotency-Key (none when idemKey is empty) and
// returns the status, the Idempotent-Replayed header and the body as sent.
func idemCall(t *testing.T, method, url, apiKey, idemKey, body string) (int, string, string) {
	t.Helper()
	res, b := httpCall(t, method, url, body, map[string]string{"X-API-Key": apiKey, "Idempotency-Key": idemKey})
	return res.StatusCode, res.Header.Get("Idempotent-Replayed"), string(b)
}

// TestIdempotencyOverTheWire runs the desk process: POST /rfq with an Idempotency-Key
// creates one RFQ; the same request again answers the same bytes with
// Idempotent-Replayed: true and creates nothing; another body with the key is 422
// IDEMPOTENCY_KEY_REUSED, a malformed key 400 and an unknown API key 401; after a SIGKILL
// and a restart (and after a second, clean one, from a snapshot that holds the record),
// the repeat still answers the first answer and still creates nothing.
func TestIdempotencyOverTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the desk process")
	}
	bin, cfg, data := deskFixture(t)
	start := func() *process {
		return launch(t, exec.Command(bin, "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", data, "-config", cfg,
			"-checkpoint-every", "3"), true)
	}
	mine := func(base string) int {
		rfqs, err := houseAt(t, base).MyRFQs(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return len(rfqs)
	}

	p := start()
	m := registered(t, p.base, "Idempotency Maker")
	s := subscribe(t, m)
	body := `{"direction":"SELL","qty":"0.01","base":"CBTC","quote":"usdcx","invitedMakers":["` + m.Hint() + `"],"ttlSeconds":3600}`
	status, replayed, first := idemCall(t, "POST", p.base+"/rfq", houseKey, "e2e-rfq-1", body)
	if status != 200 || replayed != "" || !strings.Contains(first, `"rfqId"`) {
		t.Fatalf("first: %d %q %s", status, replayed, first)
	}
	rfqs := 1 // the RFQs the house taker has made
	check := func(base, when string) {
		t.Helper()
		status, replayed, again := idemCall(t, "POST", base+"/rfq", houseKey, "e2e-rfq-1", body)
		if status != 200 || replayed != "true" || again != first {
			t.Fatalf("%s: %d %q %s, want 200 replayed %s", when, status, replayed, again, first)
		}
		if n := mine(base); n != rfqs {
			t.Fatalf("%s: %d RFQs, want %d", when, n, rfqs)
		}
	}
	check(p.base, "repeat")
	if status, _, b := idemCall(t, "POST", p.base+"/rfq", houseKey, "e2e-rfq-1", strings.Replace(body, "0.01", "0.02", 1)); status != 422 || !strings.Contains(b, `"code":"IDEMPOTENCY_KEY_REUSED"`) {
		t.Fatalf("another body: %d %s", status, b)
	}
	if status, _, b := idemCall(t, "DELETE", p.base+"/rfq/x", houseKey, "e2e-rfq-1", ""); status != 422 {
		t.Fatalf("another path: %d %s", status, b)
	}
	if status, _, b := idemCall(t, "POST", p.base+"/rfq", houseKey, "bad key!", body); status != 400 {
		t.Fatalf("malformed key: %d %s", status, b)
	}
	if status, _, b := idemCall(t, "POST", p.base+"/rfq", "mk_unknown", "bad key!", body); status != 401 {
		t.Fatalf("unknown API key: %d %s", status, b)
	}
	if n := mine(p.base); n != 1 {
		t.Fatalf("%d RFQs after the refusals, want 1", n)
	}
	// Through the Go client: the same call twice under one key is one RFQ.
	hc, err := client.New(p.base, client.WithAPIKey(houseKey), client.WithWriteRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	req := client.CreateRFQRequest{Direction: "BUY", Qty: "0.01", Base: "CBTC", Quote: "usdcx", InvitedMakers: []string{m.Hint()}, TTLSeconds: 3600}
	r1, err1 := hc.CreateRFQ(client.WithIdempotencyKey(ctx(t), "e2e-client-1"), req)
	r2, err2 := hc.CreateRFQ(client.WithIdempotencyKey(ctx(t), "e2e-client-1"), req)
	if err1 != nil || err2 != nil || r1.RFQID != r2.RFQID {
		t.Fatalf("the client's keyed call twice: %+v %v, %+v %v", r1, err1, r2, err2)
	}
	rfqs = 2
	if n := mine(p.base); n != rfqs {
		t.Fatalf("%d RFQs after the client's keyed call twice, want %d", n, rfqs)
	}

	// Eight copies of one keyed write at once: one RFQ; every 200 is the same bytes; the
	// others may only be 409 RETRY_LATER (a copy that met the first in flight).
	var wg sync.WaitGroup
	answers := make([][3]string, 8)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, rp, b := idemCall(t, "POST", p.base+"/rfq", houseKey, "e2e-race-1", body)
			answers[i] = [3]string{strconv.Itoa(st), rp, b}
		}()
	}
	wg.Wait()
	fresh, bodyOf200 := 0, ""
	for _, a := range answers {
		switch {
		case a[0] == "200" && (bodyOf200 == "" || a[2] == bodyOf200):
			bodyOf200 = a[2]
			if a[1] == "" {
				fresh++
			}
		case a[0] == "409" && strings.Contains(a[2], "RETRY_LATER"):
		default:
			t.Fatalf("a concurrent copy answered %v", a)
		}
	}
	if fresh != 1 {
		t.Fatalf("%d fresh answers among the concurrent copies, want 1: %v", fresh, answers)
	}
	rfqs = 3
	if n := mine(p.base); n != rfqs {
		t.Fatalf("%d RFQs after the concurrent copies, want %d", n, rfqs)
	}

	s.Close()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = start()
	check(p.base, "after SIGKILL and restart")
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
	p = start()
	defer func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_ = p.cmd.Wait()
	}()
	check(p.base, "after a clean restart")
	// A new key runs anew: the maker's stream is gone now, so the desk refuses it.
	if status, replayed, b := idemCall(t, "POST", p.base+"/rfq", houseKey, "e2e-rfq-2", body); status != 400 || replayed != "" || !strings.Contains(b, "not reachable") {
		t.Fatalf("a new key: %d %q %s", status, replayed, b)
	}
}
