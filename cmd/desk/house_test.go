package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// TestDefaultHouseMakerTrades: a desk on the default configuration lists its house maker
// in GET /desk at once; it quotes a registered taker's RFQ in both directions at the
// reference price ± 20 bps, and the accepted trade settles.
func TestDefaultHouseMakerTrades(t *testing.T) {
	d := startLive(t, "per_ip_per_minute = 1000\n")
	taker := maker(t, d, "House Test Taker", false)
	info, err := taker.Desk(ctx(t))
	if err != nil || len(info.Makers) != 1 || info.Makers[0] != "house-maker" {
		t.Fatalf("GET /desk: %+v %v", info, err)
	}
	if _, err := taker.Faucet(ctx(t)); err != nil {
		t.Fatal(err)
	}
	acceptDeposits(t, taker)
	for _, c := range []struct {
		dir   client.Direction
		price client.Decimal
	}{{client.Sell, "99800"}, {client.Buy, "100200"}} {
		rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: c.dir, Qty: "0.01", Base: "cbtc", Quote: "usdcx",
			InvitedMakers: []string{"house-maker"}, TTLSeconds: 60})
		if err != nil {
			t.Fatal(err)
		}
		q := awaitQuote(t, taker, rfq.RFQID)
		if q.Price != c.price || q.Maker != "house-maker" {
			t.Fatalf("%s: house quote %+v, want price %s", c.dir, q, c.price)
		}
		tr, err := taker.AcceptQuote(ctx(t), q.QuoteID)
		if err != nil {
			t.Fatal(err)
		}
		signAll(t, taker, tr.Actions)
		awaitTrade(t, taker, tr.TradeID)
	}
}

// TestHouseKeyStableAcrossRestarts: the drawn house key is kept in the data directory with
// mode 0600 and reused, so a restarted desk still runs its house maker.
func TestHouseKeyStableAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	k1, err := houseKeys(dir)("house-maker")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := houseKeys(dir)("house-maker")
	if err != nil || k1 != k2 || !strings.HasPrefix(k1, "hk_") {
		t.Fatalf("%q %q %v", k1, k2, err)
	}
	st, err := os.Stat(filepath.Join(dir, houseKeysFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v", st.Mode(), err)
	}
}

// awaitQuote polls GET /rfq/mine until a quote is live on the RFQ.
func awaitQuote(t *testing.T, c *client.Client, rfqID string) client.Quote {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		mine, err := c.MyRFQs(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range mine {
			if r.RFQID == rfqID {
				for _, q := range r.Quotes {
					if q.Status == client.QuotePending {
						return q
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no live quote on %s within 15s", rfqID)
	return client.Quote{}
}

// awaitTrade polls GET /trades until the trade is settled.
func awaitTrade(t *testing.T, c *client.Client, tradeID string) client.Trade {
	t.Helper()
	cx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for cx.Err() == nil {
		trades, err := c.Trades(cx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trades {
			if tr.TradeID == tradeID {
				return tr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("trade %s not settled within 20s", tradeID)
	return client.Trade{}
}
