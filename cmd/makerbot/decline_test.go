package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/strategy"
)

// fakeDesk answers the three calls a quote decision makes: the reference price (mid, or
// none when ""), the balances (usdcx only), and the decline, which it records.
type fakeDesk struct {
	mu       sync.Mutex
	mid      string
	declines []string // "rfqId reason"
}

func (f *fakeDesk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && r.URL.Path == "/maker/reference-price":
		if f.mid == "" {
			_, _ = io.WriteString(w, `{}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"price": f.mid})
	case r.Method == "GET" && r.URL.Path == "/balances":
		_, _ = io.WriteString(w, `{"party":"p","holdings":[{"symbol":"usdcx","displaySymbol":"USDCx","amount":"10000"}]}`)
	case r.Method == "POST" && r.PathValue("id") != "":
		var body struct{ Reason string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.declines = append(f.declines, r.PathValue("id")+" "+body.Reason)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, `{"code":"NOT_FOUND","message":"not here"}`, http.StatusNotFound)
	}
}

func (f *fakeDesk) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.declines)
}

func testBot(t *testing.T, decline bool, mid string) (*bot, *fakeDesk) {
	t.Helper()
	f := &fakeDesk{mid: mid}
	mux := http.NewServeMux()
	mux.Handle("/", f)
	mux.Handle("POST /maker/rfq/{id}/decline", f)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithAPIKey("test-key"))
	if err != nil {
		t.Fatal(err)
	}
	b := newBot(config{params: strategy.Params{SpreadBps: 20, MaxShareBps: 2500}, decline: decline},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	b.c = c
	return b, f
}

// TestBotDeclinesWhatItSkips: an RFQ the strategy skips is declined with the strategy's
// reason (size for a ticket over the share limit, inventory for a holding the bot lacks,
// price without a reference price), once per reason; -decline=false declines nothing; a
// quotable RFQ is not declined.
func TestBotDeclinesWhatItSkips(t *testing.T) {
	big := client.RFQ{RFQID: "rfq-big", Direction: client.Sell, Qty: "1", Base: "cbtc", Quote: "usdcx"} // spends ~100000 usdcx of 10000
	noInv := client.RFQ{RFQID: "rfq-inv", Direction: client.Buy, Qty: "0.01", Base: "cbtc", Quote: "usdcx"}
	small := client.RFQ{RFQID: "rfq-ok", Direction: client.Sell, Qty: "0.001", Base: "cbtc", Quote: "usdcx"}
	ctx := context.Background()

	b, f := testBot(t, true, "100000")
	for _, r := range []client.RFQ{big, noInv, big} {
		delete(b.attempts, r.RFQID) // past the re-quote wait
		if err := b.quote(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := f.got(), []string{"rfq-big size", "rfq-inv inventory"}; !slices.Equal(got, want) {
		t.Fatalf("declines %q, want %q (a repeat with the same reason is not sent)", got, want)
	}
	f.mu.Lock()
	f.mid = "" // the desk has no reference price any more: a new reason is sent
	f.mu.Unlock()
	delete(b.attempts, big.RFQID)
	if err := b.quote(ctx, big); err != nil {
		t.Fatal(err)
	}
	if got := f.got(); len(got) != 3 || got[2] != "rfq-big price" {
		t.Fatalf("declines %q, want a third: rfq-big price", got)
	}
	if n := b.metrics.declines.Load(); n != 3 {
		t.Fatalf("makerbot_rfqs_declined_total %d, want 3", n)
	}
	// A quotable RFQ goes to POST /maker/quotes (refused here: 404), never to a decline.
	f.mu.Lock()
	f.mid = "100000"
	f.mu.Unlock()
	if err := b.quote(ctx, small); err != nil {
		t.Fatal(err)
	}
	if got := f.got(); len(got) != 3 {
		t.Fatalf("a quotable RFQ was declined: %q", got)
	}

	off, f := testBot(t, false, "100000")
	if err := off.quote(ctx, big); err != nil {
		t.Fatal(err)
	}
	if got := f.got(); len(got) != 0 || off.metrics.quotesSkipped.Load() != 1 {
		t.Fatalf("-decline=false: declines %q, skipped %d", got, off.metrics.quotesSkipped.Load())
	}
}

// TestDeclineFlagDefault: the bot declines and opens its stream for cancel-on-disconnect by
// default (the safe defaults); -decline=false and -cancel-on-disconnect=false turn them off.
func TestDeclineFlagDefault(t *testing.T) {
	env := func(string) string { return "" }
	c, err := parseFlags(nil, io.Discard, env)
	if err != nil || !c.decline {
		t.Fatalf("default: decline %v, err %v", c.decline, err)
	}
	if c, err = parseFlags([]string{"-decline=false"}, io.Discard, env); err != nil || c.decline {
		t.Fatalf("-decline=false: decline %v, err %v", c.decline, err)
	}
	if !c.cancelOnDisconnect {
		t.Fatal("cancel-on-disconnect is off by default")
	}
	if c, err = parseFlags([]string{"-cancel-on-disconnect=false"}, io.Discard, env); err != nil || c.cancelOnDisconnect {
		t.Fatalf("-cancel-on-disconnect=false: %v, err %v", c.cancelOnDisconnect, err)
	}
}

// TestStrategyReasonsAreTheDesks: the strategy's decline reasons are the desk's, in order.
func TestStrategyReasonsAreTheDesks(t *testing.T) {
	ours := []string{strategy.DeclinePrice, strategy.DeclineSize, strategy.DeclineInventory, strategy.DeclineInstrument, strategy.DeclineOther}
	if !slices.Equal(ours, machine.DeclineReasons) {
		t.Fatalf("strategy's reasons %q, the desk's %q", ours, machine.DeclineReasons)
	}
}
