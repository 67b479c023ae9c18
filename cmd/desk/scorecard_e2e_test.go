package main

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// TestScorecardOverTheWire: two makers and the house taker trade in the desk process: on
// the first RFQ both quote and Alpha wins and settles (Beta loses, 166.67 bps from the
// winning price); on the second Beta declines and Alpha quotes and deletes its quote;
// eight more RFQs invite Alpha alone, unanswered. The scorecards answer exactly those
// figures, GET /desk shows Alpha's makerStats (10 invitations) and not Beta's (2), a bad
// window is 400; after a SIGKILL and a restart every answer is the same.
func TestScorecardOverTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the desk and kills its process")
	}
	bin, cfg, data := deskFixture(t)
	p := killedAtEnd(t, bin, data, cfg)
	d := &liveDesk{base: p.base}
	a, b, taker := maker(t, d, "Score Alpha", true), maker(t, d, "Score Beta", true), house(t, d)
	sa, sb := subscribe(t, a), subscribe(t, b)
	rfqReq := func(makers ...*client.Client) *client.RFQ {
		t.Helper()
		hints := make([]string, len(makers))
		for i, m := range makers {
			hints[i] = m.Hint()
		}
		r, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "cbtc", Quote: "usdcx",
			InvitedMakers: hints, TTLSeconds: 120})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	quote := func(m *client.Client, s *client.Stream, rfq string, price client.Decimal) *client.QuoteWithActions {
		t.Helper()
		q, err := m.SubmitQuote(ctx(t), client.QuoteRequest{RFQID: rfq, Price: price})
		if err != nil {
			t.Fatal(err)
		}
		anchor(t, m, s, q)
		return q
	}

	r1 := rfqReq(a, b)
	qa := quote(a, sa, r1.RFQID, "60000")
	quote(b, sb, r1.RFQID, "59000")
	if _, err := taker.AcceptQuote(ctx(t), qa.QuoteID); err != nil {
		t.Fatal(err)
	}
	await(t, sa, "trade.settled", nil)
	r2 := rfqReq(a, b)
	if err := b.DeclineRFQ(ctx(t), r2.RFQID, "price"); err != nil {
		t.Fatal(err)
	}
	q2 := quote(a, sa, r2.RFQID, "60100")
	if err := a.CancelQuote(ctx(t), q2.QuoteID); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		rfqReq(a)
	}

	type answers struct {
		a, b     *client.Scorecard
		stats    []client.MakerStats
		a1h, a7d *client.Scorecard
	}
	read := func(a, b, taker *client.Client) answers {
		t.Helper()
		var out answers
		var err error
		for _, x := range []struct {
			c      *client.Client
			window string
			into   **client.Scorecard
		}{{a, "", &out.a}, {b, "24h", &out.b}, {a, "1h", &out.a1h}, {a, "7d", &out.a7d}} {
			if *x.into, err = x.c.Scorecard(ctx(t), x.window); err != nil {
				t.Fatal(err)
			}
		}
		info, err := taker.Desk(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		out.stats = info.MakerStats
		var apiErr *client.APIError
		if _, err := a.Scorecard(ctx(t), "30d"); !errors.As(err, &apiErr) || apiErr.Status != 400 {
			t.Fatalf("window 30d: %v, want 400", err)
		}
		return out
	}
	before := read(a, b, taker)
	sc := before.a
	if sc.Invited != 10 || sc.Quoted != 2 || sc.Declined != 0 || sc.ResponseRate != 0.2 || sc.Won != 1 || sc.Lost != 0 ||
		sc.Settled != 1 || sc.SettleRate != 1 || len(sc.Failed.ByReason) != 0 ||
		!reflect.DeepEqual(sc.Revoked.ByReason, map[string]int{"maker": 1}) ||
		sc.QuoteLatencyMs.P50 == nil || sc.QuoteLatencyMs.P99 == nil || *sc.QuoteLatencyMs.P50 > *sc.QuoteLatencyMs.P99 || sc.LostDistanceBps.P50 != nil {
		t.Fatalf("Alpha's scorecard %+v", sc)
	}
	if !reflect.DeepEqual(before.a1h, sc) || !reflect.DeepEqual(before.a7d, sc) {
		t.Fatalf("Alpha's 1h %+v and 7d %+v windows differ from its 24h one %+v, all of minutes", before.a1h, before.a7d, sc)
	}
	sc = before.b
	if sc.Invited != 2 || sc.Quoted != 1 || sc.Declined != 1 || sc.ResponseRate != 1 || sc.Won != 0 || sc.Lost != 1 ||
		sc.Settled != 0 || sc.SettleRate != 0 || len(sc.Revoked.ByReason) != 0 ||
		sc.LostDistanceBps.P50 == nil || *sc.LostDistanceBps.P50 != 166.67 || sc.QuoteLatencyMs.P50 == nil {
		t.Fatalf("Beta's scorecard %+v", sc)
	}
	if len(before.stats) != 1 || before.stats[0].Maker != a.Hint() || before.stats[0].ResponseRate != 0.2 ||
		before.stats[0].SettleRate != 1 || before.stats[0].QuoteLatencyMsP50 == nil ||
		*before.stats[0].QuoteLatencyMsP50 != *before.a.QuoteLatencyMs.P50 {
		t.Fatalf("makerStats %+v", before.stats)
	}

	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	sa.Close()
	sb.Close()
	p = startProcess(t, bin, data, cfg)
	again := func(c *client.Client) *client.Client {
		t.Helper()
		n, err := client.FromIdentity(at(c.Identity(), p.base), p.base)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a2, b2 := again(a), again(b)
	taker2, err := client.New(p.base, client.WithAPIKey(houseKey))
	if err != nil {
		t.Fatal(err)
	}
	subscribe(t, a2) // online again, so GET /desk lists it
	after := read(a2, b2, taker2)
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("after a SIGKILL and a restart:\n%+v\nbefore:\n%+v", after, before)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}
