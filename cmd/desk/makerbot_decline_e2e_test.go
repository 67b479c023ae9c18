package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// TestMakerBotDeclines runs cmd/makerbot (default flags: it declines what it skips)
// against a real desk: the house taker's RFQ the bot can quote gets a quote, and one that
// would spend more than -max-share-bps of the bot's holding (1 cbtc ≈ 100000 usdcx against
// the faucet's 10000) is declined: the taker's stream carries quote.declined from the bot
// with reason size, and GET /rfq/mine lists the decline.
func TestMakerBotDeclines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bot as a process")
	}
	dir := t.TempDir()
	botBin := buildBinary(t, dir, "../makerbot", "makerbot")
	d := startLive(t, baseConfig)
	taker := house(t, d)
	ts := subscribe(t, taker)

	idPath := filepath.Join(dir, "bot.json")
	bot := exec.Command(botBin, "-url", d.base, "-identity", idPath, "-name", "Declining Bot", "-metrics-addr", "",
		"-reconcile-every", "1s", "-status-every", "2s", "-max-backoff", "1s", "-faucet-every", "1s")
	if err := bot.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bot.Process.Signal(syscall.SIGTERM); _ = bot.Wait() }()
	hint := awaitBotOnline(t, taker, idPath)

	ask := func(qty client.Decimal) string {
		t.Helper()
		rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: client.Sell, Qty: qty, Base: "cbtc", Quote: "usdcx",
			InvitedMakers: []string{hint}, TTLSeconds: 60})
		if err != nil {
			t.Fatal(err)
		}
		return rfq.RFQID
	}
	if q := awaitQuote(t, taker, ask("0.001")); q.Maker != hint { // the bot is funded and quoting
		t.Fatalf("quote from %s, want the bot %s", q.Maker, hint)
	}

	big := ask("1")
	var got *client.QuoteDeclined
	await(t, ts, client.EventQuoteDeclined, func(e client.Event) bool {
		d, err := e.QuoteDeclined()
		got = d
		return err == nil && d.RFQID == big
	})
	if got.Maker != hint || got.Reason != "size" {
		t.Fatalf("quote.declined %+v, want from the bot %s with reason size", got, hint)
	}
	mine, err := taker.MyRFQs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mine {
		if r.RFQID == big {
			if len(r.Declines) != 1 || r.Declines[0].Maker != hint || r.Declines[0].Reason != "size" || len(r.Quotes) != 0 {
				t.Fatalf("GET /rfq/mine: declines %+v, quotes %d; want the bot's size decline and no quote", r.Declines, len(r.Quotes))
			}
			return
		}
	}
	t.Fatalf("GET /rfq/mine does not list %s", big)
}
