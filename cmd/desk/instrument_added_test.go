package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// xauTable is an instrument added to baseConfig, with its faucet reservoir.
const xauTable = `
[[instrument]]
symbol = "xau"
display = "XAU"
decimals = 4
usd_price = "2000"
faucet_amount = "5"
reservoir = "1000"
`

func holds(t *testing.T, c *client.Client, symbol string) string {
	t.Helper()
	b, err := c.Balances(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range b.Holdings {
		if h.Symbol == symbol {
			return string(h.Amount)
		}
	}
	return "0"
}

// TestInstrumentAddedOnRestart: a desk stopped and started with an [[instrument]] table
// added logs the key, lists it on GET /instruments, hands it out from the faucet, settles
// a trade in it, and starts again on the same file with no change; removing it again
// stops the start.
func TestInstrumentAddedOnRestart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	d, _, _ := startOn(t, data, baseConfig)
	d.stop()

	d, log, code := startOn(t, data, baseConfig+xauTable)
	if d == nil {
		t.Fatalf("the start with xau added exited %d: %s", code, log.String())
	}
	for _, want := range []string{`msg="instrument listed on the ledger" symbol=xau`, `key=instrument.xau old="" new=`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %s:\n%s", want, log.String())
		}
	}
	m := maker(t, d, "Gold Maker", false)
	ins, err := m.Instruments(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var symbols []string
	for _, in := range ins {
		symbols = append(symbols, in.Symbol)
	}
	if got := strings.Join(symbols, ","); got != "cbtc,usdcx,xau" {
		t.Fatalf("GET /instruments: %s", got)
	}
	fundAll(t, m, 3)
	taker := registered(t, d.base, "Gold Taker")
	fundAll(t, taker, 3)
	if got := holds(t, taker, "xau"); got != "5" {
		t.Fatalf("the taker holds %s xau after a faucet draw, want 5", got)
	}
	s := subscribe(t, m)
	_, q := quoteRFQ(t, taker, m, s, client.CreateRFQRequest{Direction: "SELL", Qty: "1", Base: "xau", Quote: "usdcx", TTLSeconds: 120}, "2000")
	anchor(t, m, s, q)
	acc, err := taker.AcceptQuote(ctx(t), q.QuoteID)
	if err != nil {
		t.Fatal(err)
	}
	signAll(t, taker, acc.Actions)
	await(t, s, "trade.settled", nil)
	if got := holds(t, taker, "xau") + " " + holds(t, m, "xau"); got != "4 6" {
		t.Fatalf("xau after the trade (taker, maker): %s, want 4 6", got)
	}
	d.stop()

	d, log, _ = startOn(t, data, baseConfig+xauTable)
	if d == nil || strings.Contains(log.String(), "configuration changed") {
		t.Fatalf("the second start on the same file: %s", log.String())
	}
	again, err := client.New(d.base, client.WithAPIKey(taker.APIKey()))
	if err != nil {
		t.Fatal(err)
	}
	if got := holds(t, again, "xau"); got != "4" {
		t.Fatalf("after a restart the taker holds %s xau, want 4", got)
	}
	d.stop()

	if d, log, code := startOn(t, data, baseConfig); d != nil || code == 0 || !strings.Contains(log.String(), `instrument \"xau\" cannot be removed`) {
		t.Fatalf("removing xau: exit %d: %s", code, log.String())
	}
}
