package main

import (
	"slices"
	"syscall"
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// liveQuotesOver makes n RFQs of the taker inviting m, each with a live quote of m, and
// returns the quotes in the order made.
func liveQuotesOver(t *testing.T, taker, m *client.Client, s *client.Stream, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		_, q := quoteRFQ(t, taker, m, s, client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "cbtc", Quote: "usdcx", TTLSeconds: 300}, "60000")
		anchor(t, m, s, q)
		ids = append(ids, q.QuoteID)
	}
	return ids
}

// submitRefusedFrozen creates an RFQ inviting m and checks that m's quote on it is refused
// 409 MMP_FROZEN; it returns the RFQ's id.
func submitRefusedFrozen(t *testing.T, taker, m *client.Client, s *client.Stream) string {
	t.Helper()
	rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: "SELL", Qty: "0.01", Base: "cbtc", Quote: "usdcx",
		InvitedMakers: []string{m.Hint()}, TTLSeconds: 300})
	if err != nil {
		t.Fatal(err)
	}
	await(t, s, client.EventRFQCreated, nil)
	_, err = m.SubmitQuote(ctx(t), client.QuoteRequest{RFQID: rfq.RFQID, Price: "60000"})
	if !client.IsCode(err, client.CodeMMPFrozen) || client.Status(err) != 409 {
		t.Fatalf("a quote while frozen: %v, want 409 %s", err, client.CodeMMPFrozen)
	}
	return rfq.RFQID
}

// TestProtectionOverTheWire: a maker sets its protection (two fills in ten minutes, frozen
// until reset); the taker's second accept trips it: the maker's third quote is revoked
// (reason protection), maker.protection says so, a new quote is refused 409 MMP_FROZEN,
// GET shows the freeze; a reset ends it and the maker quotes again. A bad body is 400.
func TestProtectionOverTheWire(t *testing.T) {
	d := startLive(t, baseConfig)
	m, taker := maker(t, d, "Protected Maker", true), house(t, d)
	s := subscribe(t, m)
	if p, err := m.Protection(ctx(t)); err != nil || p.WindowSeconds != 0 || p.Frozen || p.FrozenUntil != nil || p.MaxNotionalUSD != "0" {
		t.Fatalf("protection before any PUT: %+v %v, want off", p, err)
	}
	if code, body := rawCall(t, "PUT", d.base+"/maker/protection", m.APIKey(), `{"windowSeconds":600,"maxFills":-2,"maxNotionalUsd":"0","freezeSeconds":0}`); code != 400 {
		t.Fatalf("a negative maxFills: %d %s, want 400", code, body)
	}
	p, err := m.SetProtection(ctx(t), client.ProtectionSettings{WindowSeconds: 600, MaxFills: 2, MaxNotionalUSD: "0", FreezeSeconds: 0})
	if err != nil || p.MaxFills != 2 || p.WindowSeconds != 600 || p.Frozen {
		t.Fatalf("PUT: %+v %v", p, err)
	}
	ids := liveQuotesOver(t, taker, m, s, 3)
	for _, id := range ids[:2] {
		if _, err := taker.AcceptQuote(ctx(t), id); err != nil {
			t.Fatalf("accept %s: %v", id, err)
		}
	}
	ev, _ := await(t, s, client.EventMakerProtection, nil)
	tripped, err := ev.MakerProtection()
	if err != nil || tripped.Triggered != "fills" || tripped.FrozenUntil != nil || !slices.Equal(tripped.Revoked, ids[2:]) {
		t.Fatalf("maker.protection %+v %v, want fills, until reset, revoked %v", tripped, err, ids[2:])
	}
	rfqs, err := m.IncomingRFQs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rfqs {
		if r.MyQuote != nil && r.MyQuote.QuoteID == ids[2] && (r.MyQuote.Status != client.QuoteRevoked || r.MyQuote.RevokeReason != "protection") {
			t.Fatalf("the revoked quote reads %s (reason %q)", r.MyQuote.Status, r.MyQuote.RevokeReason)
		}
	}
	rfqID := submitRefusedFrozen(t, taker, m, s)
	if p, err := m.Protection(ctx(t)); err != nil || !p.Frozen || p.FrozenUntil != nil || p.FillsInWindow != 0 {
		t.Fatalf("GET while frozen: %+v %v", p, err)
	}
	if p, err := m.ResetProtection(ctx(t)); err != nil || p.Frozen {
		t.Fatalf("reset: %+v %v", p, err)
	}
	if _, err := m.SubmitQuote(ctx(t), client.QuoteRequest{RFQID: rfqID, Price: "60000"}); err != nil {
		t.Fatalf("a quote after the reset: %v", err)
	}
}

// TestProtectionSurvivesSIGKILL: a maker's protection trips (one fill, frozen an hour);
// the desk process is killed with SIGKILL and restarted: the settings and the freeze, with
// its frozenUntil, are as before, a quote is still refused 409 MMP_FROZEN, and a reset
// then lets the maker quote.
func TestProtectionSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the desk process")
	}
	bin, cfg, data := deskFixture(t)
	p := killedAtEnd(t, bin, data, cfg)
	m := registered(t, p.base, "Frozen Across Restarts")
	fundAll(t, m, 2)
	taker := houseAt(t, p.base)
	s := subscribe(t, m)
	set := client.ProtectionSettings{WindowSeconds: 120, MaxFills: 1, MaxNotionalUSD: "5000", FreezeSeconds: 3600}
	if _, err := m.SetProtection(ctx(t), set); err != nil {
		t.Fatal(err)
	}
	ids := liveQuotesOver(t, taker, m, s, 2)
	if _, err := taker.AcceptQuote(ctx(t), ids[0]); err != nil {
		t.Fatal(err)
	}
	ev, _ := await(t, s, client.EventMakerProtection, nil)
	tripped, err := ev.MakerProtection()
	if err != nil || tripped.FrozenUntil == nil || !slices.Equal(tripped.Revoked, ids[1:]) {
		t.Fatalf("maker.protection %+v %v", tripped, err)
	}
	before, err := m.Protection(ctx(t))
	if err != nil || !before.Frozen {
		t.Fatalf("GET before the kill: %+v %v", before, err)
	}
	s.Close()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	p = startProcess(t, bin, data, cfg)
	t.Cleanup(func() { _ = p.cmd.Process.Signal(syscall.SIGTERM); _ = p.cmd.Wait() })
	if m, err = client.FromIdentity(at(m.Identity(), p.base), p.base); err != nil {
		t.Fatal(err)
	}
	if taker, err = client.New(p.base, client.WithAPIKey(houseKey)); err != nil {
		t.Fatal(err)
	}
	after, err := m.Protection(ctx(t))
	if err != nil || after.ProtectionSettings != set || !after.Frozen || after.FrozenUntil == nil || !after.FrozenUntil.Equal(*before.FrozenUntil) {
		t.Fatalf("GET after the restart: %+v %v, want %+v", after, err, before)
	}
	s = subscribe(t, m)
	rfqID := submitRefusedFrozen(t, taker, m, s)
	if _, err := m.ResetProtection(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SubmitQuote(ctx(t), client.QuoteRequest{RFQID: rfqID, Price: "60000"}); err != nil {
		t.Fatalf("a quote after the reset: %v", err)
	}
}
