package machine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// drawChange draws a configuration change that may apply: new prices, lifetimes, limits
// and fee tiers, and perhaps an instrument added.
func drawChange(t *rapid.T, old Config) Config {
	next := cloneConfig(old)
	price := func(label string) money.Decimal {
		return money.MustParse(rapid.StringMatching(`[1-9][0-9]{0,6}(\.[0-9]{1,6})?`).Draw(t, label))
	}
	for i := range next.Instruments {
		if rapid.Bool().Draw(t, "reprice-"+next.Instruments[i].Symbol) {
			next.Instruments[i].USDPrice = price("price-" + next.Instruments[i].Symbol)
		}
	}
	next.QuoteLifetime = time.Duration(rapid.IntRange(1, 600).Draw(t, "quote_lifetime")) * time.Second
	next.MinNotionalUSD = price("min_notional_usd")
	next.HistoryRetention = rapid.IntRange(1, 1000).Draw(t, "history_retention")
	next.FeeTiers = []FeeTier{{MinNotionalUSD: money.Zero, FeeBps: rapid.IntRange(0, 100).Draw(t, "base_bps")}}
	if rapid.Bool().Draw(t, "add") {
		next.Instruments = append(next.Instruments, Instrument{Symbol: "ceth", Display: "CETH", Decimals: 8,
			USDPrice: price("price-ceth"), FaucetAmount: money.MustParse("2"), RegistryID: "reg:ceth"})
	}
	return next
}

// TestReconfigureRoundTrip: a Reconfigure survives the journal record encoding, and a desk
// that applied it has the new configuration, in its snapshot too, and the same digest as a
// desk that applied the decoded record.
func TestReconfigureRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		old := testConfig()
		next := drawChange(t, old)
		in := Reconfigure{Config: next}
		b, err := EncodeEnvelope(Envelope{Seq: 3, At: t0, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		env, err := DecodeEnvelope(b)
		if err != nil {
			t.Fatal(err)
		}
		if toJSON(t, env.Input) != toJSON(t, in) {
			t.Fatalf("round trip: %s, want %s", toJSON(t, env.Input), toJSON(t, in))
		}
		live, _ := NewDesk(old)
		replayed, _ := NewDesk(old)
		Apply(live, Envelope{Seq: 3, At: t0, Input: in})
		Apply(replayed, env)
		if toJSON(t, live.Cfg) != toJSON(t, next) {
			t.Fatalf("configuration in force %s, want %s", toJSON(t, live.Cfg), toJSON(t, next))
		}
		d1, _ := live.Digest()
		d2, _ := replayed.Digest()
		if d1 != d2 {
			t.Fatal("the desk that applied the decoded record has another digest")
		}
		var snap bytes.Buffer
		if err := live.WriteSnapshot(&snap); err != nil {
			t.Fatal(err)
		}
		restored, err := Restore(snap.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if toJSON(t, restored.Cfg) != toJSON(t, next) {
			t.Fatal("the snapshot lost the configuration change")
		}
		deltas, err := DiffConfig(old, next)
		if err != nil {
			t.Fatal(err)
		}
		if (len(deltas) == 0) != (toJSON(t, old) == toJSON(t, next)) {
			t.Fatalf("deltas %v for a change %v", deltas, toJSON(t, old) != toJSON(t, next))
		}
		// The input is idempotent: applying it again changes nothing.
		Apply(live, Envelope{Seq: 4, At: t0, Input: in})
		if d3, _ := live.Digest(); d3 != d1 {
			t.Fatal("a second application changed the desk")
		}
	})
}

// TestDiffConfigNamesKeys: each changed key is named with its old and new values, and a
// change that cannot apply is refused with its reason, by DiffConfig and by Apply alike.
func TestDiffConfigNamesKeys(t *testing.T) {
	old := testConfig()
	next := cloneConfig(old)
	next.QuoteLifetime = 45 * time.Second
	next.Instruments[0].USDPrice = money.MustParse("90000")
	next.MaxPendingRegistrations = old.MaxPendingRegistrations + 5
	deltas, err := DiffConfig(old, next)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range deltas {
		got = append(got, d.String())
	}
	want := fmt.Sprintf("quote_lifetime: 30s -> 45s|max_pending_registrations: %d -> %d|instrument.cbtc.usd_price: 100000 -> 90000",
		old.MaxPendingRegistrations, next.MaxPendingRegistrations)
	if strings.Join(got, "|") != want {
		t.Fatalf("deltas %q, want %q", strings.Join(got, "|"), want)
	}

	refused := []struct {
		name   string
		change func(*Config)
		reason string
	}{
		{"decimals", func(c *Config) { c.Instruments[0].Decimals = 6 }, "instrument.cbtc.decimals cannot change"},
		{"removed", func(c *Config) { c.Instruments = c.Instruments[1:] }, `instrument "cbtc" cannot be removed`},
		{"native", func(c *Config) { c.Instruments[2].Native = false }, "instrument.cc.native cannot change"},
		{"network", func(c *Config) { c.Network = Mainnet }, "network cannot change"},
		{"house", func(c *Config) { c.House[0].KeyHash = keyHash("other") }, "house cannot change"},
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			next := cloneConfig(old)
			next.Instruments = append([]Instrument(nil), old.Instruments...)
			next.House = append([]HouseParty(nil), old.House...)
			next.QuoteLifetime = time.Minute // an acceptable change alongside changes nothing either
			r.change(&next)
			if _, err := DiffConfig(old, next); err == nil || !strings.Contains(err.Error(), r.reason) {
				t.Fatalf("got %v, want an error saying %q", err, r.reason)
			}
			d, _ := NewDesk(old)
			Apply(d, Envelope{Seq: 1, At: t0, Input: Tick{}})
			before, _ := d.Digest()
			Apply(d, Envelope{Seq: 2, At: t0, Input: Reconfigure{Config: next}})
			if after, _ := d.Digest(); after != before {
				t.Fatal("a refused change changed the desk")
			}
		})
	}
	// A change that passes the diff but not validation changes nothing either.
	bad := cloneConfig(old)
	bad.FeeTiers = nil
	d, _ := NewDesk(old)
	Apply(d, Envelope{Seq: 2, At: t0, Input: Reconfigure{Config: bad}})
	if len(d.Cfg.FeeTiers) == 0 {
		t.Fatal("an invalid configuration was put in force")
	}
}

// TestReconfigureFee: the fee of a trade after a change of tiers is the new tier's.
func TestReconfigureFee(t *testing.T) {
	d, _ := NewDesk(testConfig())
	if got := d.Cfg.feeBpsFor(money.FromInt(50)); got != 25 {
		t.Fatalf("fee before: %d bps", got)
	}
	next := cloneConfig(d.Cfg)
	next.FeeTiers = []FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 40}}
	Apply(d, Envelope{Seq: 2, At: t0, Input: Reconfigure{Config: next}})
	if got := d.Cfg.feeBpsFor(money.FromInt(50)); got != 40 {
		t.Fatalf("fee after: %d bps, want 40", got)
	}
	b, _ := json.Marshal(d.Cfg.FeeTiers)
	if string(b) != `[{"minNotionalUsd":"0","feeBps":40}]` {
		t.Fatalf("tiers in force %s", b)
	}
}
