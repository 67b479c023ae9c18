package machine

import (
	"slices"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// setProtection applies PUT /maker/protection and returns its answer.
func (h *harness) setProtection(m actor, window, fills int, notional string, freeze int) Reply {
	h.t.Helper()
	return h.reply(h.apply(SetProtection{Req: m.req(), WindowSeconds: window, MaxFills: fills,
		MaxNotionalUSD: money.MustParse(notional), FreezeSeconds: freeze}))
}

// liveQuotes makes n RFQs of the house taker, each of qty, and a live quote of m on each.
func (h *harness) liveQuotes(m actor, n int, qty string) []string {
	h.t.Helper()
	var ids []string
	for range n {
		r := h.newRFQ(houseTaker, Sell, qty, 300, m)
		ids = append(ids, h.live(m, r.RfqID, "60000").QuoteID)
	}
	return ids
}

// protectionOf reads GET /maker/protection for m.
func (h *harness) protectionOf(m actor) ProtectionDTO {
	h.t.Helper()
	rep := h.read(m.key, QProtection{})
	dto, ok := rep.Body.(ProtectionDTO)
	if rep.Status != 200 || !ok {
		h.t.Fatalf("GET /maker/protection: %d %+v", rep.Status, rep)
	}
	return dto
}

// TestProtectionOffByDefault: before any PUT the GET shows protection off, and accepts
// count nothing and trip nothing.
func TestProtectionOffByDefault(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	got := mustJSON(t, h.protectionOf(m))
	want := `{"windowSeconds":0,"maxFills":0,"maxNotionalUsd":"0","freezeSeconds":0,"frozen":false,"frozenUntil":null,"fillsInWindow":0,"notionalInWindowUsd":"0"}`
	if got != want {
		t.Fatalf("GET before any PUT: %s, want %s", got, want)
	}
	ids := h.liveQuotes(m, 3, "0.01")
	h.accept(houseTaker, ids[0])
	h.accept(houseTaker, ids[1])
	if st := h.d.Quotes[ids[2]].State; st != QuoteLive {
		t.Fatalf("a quote of a maker without protection is %s after two fills", st)
	}
	if len(h.d.Protections) != 0 {
		t.Fatalf("fills of a maker that never set protection were kept: %+v", h.d.Protections)
	}
}

// TestProtectionTripsOnFills: the accept that brings the fills in the window to maxFills is
// answered 202, every other pending quote of the maker (live, or funding and unsigned) is
// revoked with reason protection, the maker hears maker.protection, quotes are refused 409
// MMP_FROZEN until frozenUntil, and then accepted again; a quote on another maker is
// untouched.
func TestProtectionTripsOnFills(t *testing.T) {
	h := newHarness(t)
	m, other := h.maker("Alpha"), h.maker("Beta")
	dto := h.ok(h.apply(SetProtection{Req: m.req(), WindowSeconds: 60, MaxFills: 2, MaxNotionalUSD: money.MustParse("0"), FreezeSeconds: 30}), 200).(ProtectionDTO)
	if dto.WindowSeconds != 60 || dto.MaxFills != 2 || dto.FreezeSeconds != 30 || dto.Frozen || dto.FillsInWindow != 0 {
		t.Fatalf("PUT answer %+v", dto)
	}
	ids := h.liveQuotes(m, 3, "0.01")
	r := h.newRFQ(houseTaker, Sell, "0.01", 300, m, other)
	unsigned := h.submit(m, r.RfqID, "60000").QuoteID
	theirs := h.live(other, r.RfqID, "60000").QuoteID
	h.accept(houseTaker, ids[0])
	if p := h.protectionOf(m); p.FillsInWindow != 1 || p.NotionalInWindowUSD.String() != "1000" || p.Frozen {
		t.Fatalf("after one fill: %+v", p)
	}
	h.now = h.now.Add(5 * time.Second)
	from := len(h.events)
	h.accept(houseTaker, ids[1])
	for _, id := range []string{ids[2], unsigned} {
		if q := h.d.Quotes[id]; q.State != QuoteRevoked || q.RevokeReason != RevokeProtection {
			t.Fatalf("quote %s after the trip: %s %q, want revoked for protection", id, q.State, q.RevokeReason)
		}
	}
	if st := h.d.Quotes[theirs].State; st != QuoteLive {
		t.Fatalf("another maker's quote is %s after the trip", st)
	}
	if st := h.d.Quotes[ids[1]].State; st != QuoteSettling && st != QuoteWon {
		t.Fatalf("the tripping accept's quote is %s, want settling or won", st)
	}
	ev, ok := h.lastOf(m.id, EvMakerProtection)
	if !ok {
		t.Fatalf("no maker.protection; events %v", h.eventsFor(m.id, from))
	}
	until := h.now.Add(30 * time.Second)
	want := MakerProtectionPayload{Triggered: TriggeredFills, FrozenUntil: ptr(WireTime(until)), Revoked: slices.Sorted(slices.Values([]string{ids[2], unsigned}))} // made at one instant: by id
	if got := mustJSON(t, ev.Payload); got != mustJSON(t, want) {
		t.Fatalf("maker.protection %s, want %s", got, mustJSON(t, want))
	}
	p := h.protectionOf(m)
	if !p.Frozen || p.FrozenUntil == nil || !time.Time(*p.FrozenUntil).Equal(until) || p.FillsInWindow != 0 {
		t.Fatalf("GET while frozen: %+v", p)
	}
	r2 := h.newRFQ(houseTaker, Sell, "0.01", 300, m)
	h.refused(h.apply(SubmitQuote{Req: m.req(), RFQID: r2.RfqID, Price: money.MustParse("60000")}), 409, CodeMMPFrozen)
	h.now = until.Add(-time.Nanosecond)
	h.refused(h.apply(SubmitQuote{Req: m.req(), RFQID: r2.RfqID, Price: money.MustParse("60000")}), 409, CodeMMPFrozen)
	h.now = until
	if p := h.protectionOf(m); p.Frozen || p.FrozenUntil != nil {
		t.Fatalf("GET at frozenUntil: %+v, want not frozen", p)
	}
	h.submit(m, r2.RfqID, "60000")
}

func ptr[T any](v T) *T { return &v }

// TestProtectionTripsOnNotionalUntilReset: notional at or over the limit trips; with
// freezeSeconds 0 the freeze lasts until a reset (frozenUntil null, frozen true); a reset
// ends it, and a second reset changes nothing.
func TestProtectionTripsOnNotionalUntilReset(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	h.ok(h.apply(SetProtection{Req: m.req(), WindowSeconds: 600, MaxFills: 0, MaxNotionalUSD: money.MustParse("2000"), FreezeSeconds: 0}), 200)
	ids := h.liveQuotes(m, 3, "0.01") // 1000 USD each
	h.accept(houseTaker, ids[0])
	if st := h.d.Quotes[ids[2]].State; st != QuoteLive {
		t.Fatalf("tripped under the notional: %s", st)
	}
	h.accept(houseTaker, ids[1])
	ev, ok := h.lastOf(m.id, EvMakerProtection)
	if !ok || mustJSON(t, ev.Payload) != mustJSON(t, MakerProtectionPayload{Triggered: TriggeredNotional, Revoked: []string{ids[2]}}) {
		t.Fatalf("maker.protection %+v %v", ev.Payload, ok)
	}
	h.now = h.now.Add(48 * time.Hour)
	if p := h.protectionOf(m); !p.Frozen || p.FrozenUntil != nil {
		t.Fatalf("GET two days after a trip with freezeSeconds 0: %+v", p)
	}
	h.advance(time.Second) // the RFQs expire; a fresh one
	r := h.newRFQ(houseTaker, Sell, "0.01", 300, m)
	h.refused(h.apply(SubmitQuote{Req: m.req(), RFQID: r.RfqID, Price: money.MustParse("60000")}), 409, CodeMMPFrozen)
	before := h.digest()
	if p := h.ok(h.apply(ResetProtection{Req: m.req()}), 200).(ProtectionDTO); p.Frozen || p.FrozenUntil != nil || p.MaxNotionalUSD.String() != "2000" {
		t.Fatalf("reset answer %+v", p)
	}
	if h.digest() == before {
		t.Fatal("the reset of a freeze changed nothing")
	}
	after := h.digest()
	h.ok(h.apply(ResetProtection{Req: m.req()}), 200)
	if h.digest() != after {
		t.Fatal("a reset while not frozen changed the desk")
	}
	h.submit(m, r.RfqID, "60000")
}

// TestProtectionWindowAndLowering: a fill older than the window counts for nothing; a
// PUT lowering maxFills below the count does not trip at once (the next fill does); a
// PUT while frozen leaves the freeze alone.
func TestProtectionWindowAndLowering(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	h.setProtection(m, 10, 3, "0", 100)
	ids := h.liveQuotes(m, 5, "0.01")
	h.accept(houseTaker, ids[0])
	h.now = h.now.Add(10 * time.Second) // the first fill leaves the window
	h.accept(houseTaker, ids[1])
	h.accept(houseTaker, ids[2])
	if p := h.protectionOf(m); p.FillsInWindow != 2 || p.Frozen {
		t.Fatalf("two fills in the window: %+v", p)
	}
	if rep := h.setProtection(m, 10, 1, "0", 100); rep.Status != 200 || rep.Body.(ProtectionDTO).Frozen {
		t.Fatalf("lowering maxFills under the count: %+v", rep)
	}
	if st := h.d.Quotes[ids[3]].State; st != QuoteLive {
		t.Fatalf("lowering the limit tripped at once: %s", st)
	}
	h.accept(houseTaker, ids[3])
	if st := h.d.Quotes[ids[4]].State; st != QuoteRevoked {
		t.Fatalf("the next fill did not trip: %s", st)
	}
	until := h.protectionOf(m).FrozenUntil
	h.setProtection(m, 0, 0, "0", 5)
	if p := h.protectionOf(m); !p.Frozen || p.FrozenUntil == nil || *p.FrozenUntil != *until {
		t.Fatalf("a PUT while frozen changed the freeze: %+v, was until %v", p, until)
	}
}

// TestProtectionBadSettings: every setting out of its bounds is 400 and changes nothing.
func TestProtectionBadSettings(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	h.setProtection(m, 60, 3, "5000", 30)
	before := h.semanticDigest()
	for _, c := range []SetProtection{
		{WindowSeconds: -1, MaxNotionalUSD: money.Zero}, {WindowSeconds: MaxProtectionWindowSeconds + 1, MaxNotionalUSD: money.Zero},
		{MaxFills: -1, MaxNotionalUSD: money.Zero}, {MaxFills: MaxProtectionFills + 1, MaxNotionalUSD: money.Zero},
		{FreezeSeconds: -1, MaxNotionalUSD: money.Zero}, {FreezeSeconds: MaxProtectionFreezeSeconds + 1, MaxNotionalUSD: money.Zero},
		{MaxNotionalUSD: money.FromInt(-1)},
	} {
		c.Req = m.req()
		h.refused(h.apply(c), 400, "")
		if h.semanticDigest() != before {
			t.Fatalf("refused %+v changed the desk", c)
		}
	}
	rep := h.reply(h.apply(SetProtection{Req: actor{key: "nobody"}.req(), MaxNotionalUSD: money.FromInt(0)}))
	if rep.Status != 401 {
		t.Fatalf("unknown key: %d", rep.Status)
	}
	if rep := h.reply(h.apply(ResetProtection{Req: actor{key: "nobody"}.req()})); rep.Status != 401 {
		t.Fatalf("reset with an unknown key: %d", rep.Status)
	}
}

// TestProtectionJournal: both commands survive their journal records.
func TestProtectionJournal(t *testing.T) {
	mustRoundTrip(t, SetProtection{Req: Req{KeyHash: "ab12"}, WindowSeconds: 60, MaxFills: 3, MaxNotionalUSD: money.MustParse("12.5"), FreezeSeconds: 0})
	mustRoundTrip(t, ResetProtection{Req: Req{KeyHash: "ab12"}})
}

// TestProtectionSurvivesSnapshot: the settings, the counted fills and the freeze survive a
// snapshot, and the restored desk refuses a quote as the frozen one did.
func TestProtectionSurvivesSnapshot(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	h.setProtection(m, 60, 2, "0", 0)
	ids := h.liveQuotes(m, 3, "0.01")
	h.accept(houseTaker, ids[0])
	d := roundTrip(t, h.d)
	if got, want := mustJSON(t, d.Protections), mustJSON(t, h.d.Protections); got != want {
		t.Fatalf("restored protections %s, want %s", got, want)
	}
	h.d = d
	h.accept(houseTaker, ids[1])
	if p := h.protectionOf(m); !p.Frozen {
		t.Fatalf("the restored desk did not trip on the second fill: %+v", p)
	}
	h.d = roundTrip(t, h.d)
	r := h.newRFQ(houseTaker, Sell, "0.01", 300, m)
	h.refused(h.apply(SubmitQuote{Req: m.req(), RFQID: r.RfqID, Price: money.MustParse("60000")}), 409, CodeMMPFrozen)
}

// TestSnapshotVersion2: a version 2 snapshot (golden bytes written by the desk before
// maker protection, the re-encoding of snapshot-v1.bin) restores with no protection and
// each RFQ's notional recomputed from the configuration, and re-encodes to a version 3
// snapshot that restores the same.
func TestSnapshotVersion2(t *testing.T) {
	v2, d := restoreGolden(t, "snapshot-v2-rfqs.bin")
	if v2[len(snapshotMagic)] != snapshotVersion2 {
		t.Fatalf("the golden snapshot is of version %d", v2[len(snapshotMagic)])
	}
	if len(d.Protections) != 0 || len(d.RFQs) == 0 {
		t.Fatalf("restored %d protections and %d RFQs", len(d.Protections), len(d.RFQs))
	}
	for _, r := range d.RFQs {
		base, _ := d.Cfg.instrument(r.Base)
		if want := r.Qty.MulDown(base.USDPrice); r.NotionalUSD.Cmp(want) != 0 {
			t.Fatalf("RFQ %s notional %s, want %s", r.ID, r.NotionalUSD, want)
		}
	}
	reencodes(t, d, 2)
}

// TestProtectionProperty: whatever the settings and the times of a maker's accepts, the
// protection trips at the first accept whose answer brings the fills accepted in the
// trailing window (since the last trip) to maxFills or their notional to the limit, and
// at no other; each trip revokes every live quote of the maker, and a quote is refused
// exactly while the freeze lasts.
func TestProtectionProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarnessWith(rapidTB{t}, testConfig())
		m := h.maker("Alpha")
		window := rapid.IntRange(1, 30).Draw(t, "window")
		maxFills := rapid.IntRange(0, 4).Draw(t, "maxFills")
		maxNotional := rapid.IntRange(0, 5).Draw(t, "maxNotional (thousands)")
		freeze := rapid.IntRange(0, 20).Draw(t, "freeze")
		h.setProtection(m, window, maxFills, money.FromInt(int64(maxNotional)*1000).String(), freeze)
		type fill struct {
			at       time.Time
			notional int64
		}
		var fills []fill
		var frozenUntil *time.Time
		for i, n := 0, rapid.IntRange(1, 8).Draw(t, "accepts"); i < n; i++ {
			h.now = h.now.Add(time.Duration(rapid.IntRange(0, 12).Draw(t, "gap")) * time.Second)
			frozen := frozenUntil != nil && (frozenUntil.IsZero() || h.now.Before(*frozenUntil))
			if !frozen {
				frozenUntil = nil
			}
			qty := []string{"0.01", "0.02"}[rapid.IntRange(0, 1).Draw(t, "qty")]
			r := h.newRFQ(houseTaker, Sell, qty, 300, m)
			seq := h.apply(SubmitQuote{Req: m.req(), RFQID: r.RfqID, Price: money.MustParse("60000")})
			if frozen {
				h.refused(seq, 409, CodeMMPFrozen)
				if rapid.Bool().Draw(t, "reset") {
					h.ok(h.apply(ResetProtection{Req: m.req()}), 200)
					frozenUntil = nil
				}
				continue
			}
			q := h.ok(seq, 200).(QuoteWithActionsDTO)
			h.ok(h.sign(m.id, m.key, q.Actions), 200)
			spare := h.liveQuotes(m, 1, "0.01")[0]
			h.accept(houseTaker, q.QuoteID)
			fills = append(fills, fill{h.now, map[string]int64{"0.01": 1000, "0.02": 2000}[qty]})
			count, sum := 0, int64(0)
			for _, f := range fills {
				if f.at.After(h.now.Add(-time.Duration(window) * time.Second)) {
					count++
					sum += f.notional
				}
			}
			trips := maxFills > 0 && count >= maxFills || maxNotional > 0 && sum >= int64(maxNotional)*1000
			if got := h.d.Quotes[spare].State == QuoteRevoked; got != trips {
				t.Fatalf("accept %d: %d fills, %d USD in the window (limits %d, %d000): tripped %v", i, count, sum, maxFills, maxNotional, got)
			}
			if trips {
				fills = nil
				until := time.Time{}
				if freeze > 0 {
					until = h.now.Add(time.Duration(freeze) * time.Second)
				}
				frozenUntil = &until
				if p := h.protectionOf(m); !p.Frozen || p.FillsInWindow != 0 {
					t.Fatalf("GET after a trip: %+v", p)
				}
			} else if p := h.protectionOf(m); p.FillsInWindow != count || p.NotionalInWindowUSD.Cmp(money.FromInt(sum)) != 0 {
				t.Fatalf("GET: %+v, want %d fills and %d USD", p, count, sum)
			} else if !slices.Contains([]State{QuoteLive}, h.d.Quotes[spare].State) {
				t.Fatalf("spare quote %s", h.d.Quotes[spare].State)
			}
		}
	})
}

// TestProtectionFillsBounded: past MaxProtectionFillsKept the two oldest entries merge, so
// the list stays bounded while the window's count and notional stay whole, and a merged
// entry leaves the window with its later part.
func TestProtectionFillsBounded(t *testing.T) {
	p := &Protection{WindowSeconds: 3600}
	total := money.FromInt(0)
	n := MaxProtectionFillsKept + 37
	for i := range n {
		f := ProtectionFill{At: t0.Add(time.Duration(i) * time.Millisecond), Count: 1, NotionalUSD: money.FromInt(int64(i + 1))}
		total = total.Add(f.NotionalUSD)
		p.record(f)
		if len(p.Fills) > MaxProtectionFillsKept {
			t.Fatalf("after %d fills the list holds %d entries", i+1, len(p.Fills))
		}
	}
	now := t0.Add(time.Duration(n) * time.Millisecond)
	if got, sum := p.inWindow(now); got != n || sum.Cmp(total) != 0 {
		t.Fatalf("window counts %d fills, %s USD; want %d, %s", got, sum, n, total)
	}
	if first := p.Fills[0]; first.Count != 38 || !first.At.Equal(t0.Add(37*time.Millisecond)) {
		t.Fatalf("the merged entry is %+v, want 38 fills at the time of the 38th", first)
	}
	// The window ends just after the merged entry's own time: all 38 leave together.
	if got, _ := p.inWindow(t0.Add(37*time.Millisecond + time.Hour)); got != n-38 {
		t.Fatalf("an hour after the 38th fill the window counts %d, want %d", got, n-38)
	}
}
