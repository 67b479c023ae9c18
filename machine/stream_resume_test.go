package machine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// sent is one numbered event as a client of the party saw it, with the desk's time then.
type sent struct {
	ev Event
	at time.Time
}

// numbered collects the party-wide events of party since index from, with the time now.
func (h *harness) numbered(party string, from int, now time.Time) []sent {
	var out []sent
	for _, e := range h.events[from:] {
		if e.Party == party && e.Socket == 0 {
			out = append(out, sent{e, now})
		}
	}
	return out
}

func payloadJSON(t tb, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamResumeLaw: whatever events a maker is sent (RFQs, quotes, actions, expiries,
// with time passing), across any number of restarts from a snapshot,
//   - the party's events are numbered 1, 2, 3… with no gap or repeat;
//   - a socket opened with ?since=N gets, when every event numbered above N is among the
//     newest StreamRetentionEvents and within StreamRetention of now (and N is at most the
//     latest), exactly those events again (type, payload bytes, number) and stream.resumed
//     {N+1, latest}; otherwise stream.gap {N, the oldest retained number or latest+1}, the
//     ordinary snapshot and snapshot.end {latest};
//   - a socket without since gets the snapshot and snapshot.end {latest};
//   - opening a socket numbers no event and changes no retained one.
func TestStreamResumeLaw(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := testConfig()
		cfg.StreamRetentionEvents = rapid.IntRange(0, 8).Draw(t, "retention events")
		cfg.StreamRetention = time.Duration(rapid.IntRange(1, 90).Draw(t, "retention seconds")) * time.Second
		h := newHarnessWith(rapidTB{t}, cfg)
		alpha := h.maker("Alpha")
		var got []sent
		for i, n := 0, rapid.IntRange(0, 12).Draw(t, "steps"); i < n; i++ {
			mark := len(h.events)
			switch rapid.IntRange(0, 4).Draw(t, "step") {
			case 0:
				h.newRFQ(houseTaker, Sell, "1", 60, alpha)
			case 1:
				r := h.newRFQ(houseTaker, Sell, "1", 120, alpha)
				h.live(alpha, r.RfqID, "60000")
			case 2:
				h.advance(time.Duration(rapid.IntRange(1, 70).Draw(t, "advance")) * time.Second)
			case 3:
				h.d = roundTrip(rapidTB{t}, h.d) // a restart from a snapshot
				h.apply(Boot{})
				h.connect(alpha.key) // every socket closed at boot: reconnect
			case 4:
				h.connect(alpha.key) // opening a socket numbers nothing
			}
			got = append(got, h.numbered(alpha.id, mark, h.now)...)
		}
		for i, s := range got {
			if s.ev.Seq != uint64(i+1) {
				t.Fatalf("event %d (%s) numbered %d", i+1, s.ev.Type, s.ev.Seq)
			}
		}
		latest := uint64(len(got))
		if h.d.latestSeq(alpha.id) != latest {
			t.Fatalf("latest %d, the desk says %d", latest, h.d.latestSeq(alpha.id))
		}
		cutoff := h.now.Add(-cfg.StreamRetention)
		retained := func(s sent) bool {
			return int(s.ev.Seq) > int(latest)-cfg.StreamRetentionEvents && !s.at.Before(cutoff)
		}
		oldest := latest + 1
		for i := len(got) - 1; i >= 0 && retained(got[i]); i-- {
			oldest = got[i].ev.Seq
		}
		resume := rapid.Bool().Draw(t, "resume")
		since := rapid.Uint64Range(0, latest+2).Draw(t, "since")
		before := h.digest()
		mark := len(h.events)
		h.socket++
		h.apply(SocketOpened{Socket: h.socket, KeyHash: keyHash(alpha.key), Resume: resume, Since: since})
		frames := h.evs(alpha.id, mark)
		for _, f := range frames {
			if f.Socket != h.socket {
				t.Fatalf("%s addressed to socket %d, not the new one %d", f.Type, f.Socket, h.socket)
			}
		}
		if h.d.latestSeq(alpha.id) != latest {
			t.Fatal("opening a socket numbered an event")
		}
		if resume && since <= latest && since+1 >= oldest {
			want := got[since:]
			if len(frames) != len(want)+1 {
				t.Fatalf("resume from %d: %d frames, want %d replayed and stream.resumed", since, len(frames), len(want))
			}
			for i, w := range want {
				f := frames[i]
				if f.Type != w.ev.Type || f.Seq != w.ev.Seq || !bytes.Equal(payloadJSON(rapidTB{t}, f.Payload), payloadJSON(rapidTB{t}, w.ev.Payload)) {
					t.Fatalf("replayed frame %d: %s %d %s, want %s %d %s", i, f.Type, f.Seq, payloadJSON(rapidTB{t}, f.Payload), w.ev.Type, w.ev.Seq, payloadJSON(rapidTB{t}, w.ev.Payload))
				}
			}
			last := frames[len(frames)-1]
			if last.Type != EvStreamResumed || last.Seq != 0 || last.Payload != (StreamResumedPayload{From: since + 1, To: latest}) {
				t.Fatalf("resume ends with %+v", last)
			}
		} else {
			rest := frames
			if resume {
				if len(frames) == 0 || frames[0].Type != EvStreamGap || frames[0].Payload != (StreamGapPayload{Since: since, Oldest: oldest}) {
					t.Fatalf("resume from %d (latest %d, oldest %d): first frame %+v, want stream.gap", since, latest, oldest, frames)
				}
				rest = frames[1:]
			}
			if len(rest) == 0 {
				t.Fatal("no snapshot.end")
			}
			for _, f := range rest[:len(rest)-1] {
				if f.Seq != 0 || (f.Type != EvRfqCreated && f.Type != EvQuoteCreated && f.Type != EvQuoteStatus) {
					t.Fatalf("snapshot frame %s numbered %d", f.Type, f.Seq)
				}
			}
			if end := rest[len(rest)-1]; end.Type != EvSnapshotEnd || end.Seq != 0 || end.Payload != (SnapshotEndPayload{Seq: latest}) {
				t.Fatalf("snapshot ends with %+v, want snapshot.end %d", end, latest)
			}
		}
		// The socket changed the desk's sockets only: the digest without it is the same.
		h.apply(SocketClosed{Socket: h.socket})
		if h.digest() != before {
			t.Fatal("a socket opened and closed changed the stream state")
		}
	})
}

// TestStreamResumeAcrossReplay: a desk rebuilt from its journal with ApplyQuiet (a
// restart's replay) numbers and retains exactly what the live desk did, so a resume after
// it replays the same frames.
func TestStreamResumeAcrossReplay(t *testing.T) {
	h := newHarness(t)
	var log []Envelope
	h.log = &log
	alpha := h.maker("Alpha")
	r := h.newRFQ(houseTaker, Sell, "1", 60, alpha)
	h.live(alpha, r.RfqID, "60000")
	h.advance(2 * time.Minute) // the RFQ and the quote expire
	live := h.d.Streams[alpha.id]
	if live == nil || live.Seq < 4 || live.Len() != int(live.Seq) {
		t.Fatalf("live stream state %+v", live)
	}
	d, err := NewDesk(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		ApplyQuiet(d, e)
	}
	eq(t, "replayed stream state", d.Streams[alpha.id], live)
	if a, b := h.digest(), func() [32]byte { s, _ := d.Digest(); return s }(); a != b {
		t.Fatal("the replayed desk's digest differs")
	}
	out := Apply(d, Envelope{Seq: h.seq + 1, At: h.now, Input: SocketOpened{Socket: 99, KeyHash: keyHash(alpha.key), Resume: true, Since: 1}})
	var types []string
	for _, e := range out.Events {
		types = append(types, fmt.Sprintf("%s#%d", e.Type, e.Seq))
	}
	if len(out.Events) != int(live.Seq) || out.Events[len(out.Events)-1].Type != EvStreamResumed {
		t.Fatalf("resume after replay: %v", types)
	}
}

// TestStreamRetentionBounds: the window keeps the newest StreamRetentionEvents and drops
// what is older than StreamRetention when the next event is emitted; a stale since is a gap
// naming the oldest retained number, an ahead one a gap too, and 0 retention events keep
// nothing (every resume with an event missed is a gap naming latest+1).
func TestStreamRetentionBounds(t *testing.T) {
	cfg := testConfig()
	cfg.StreamRetentionEvents = 3
	cfg.StreamRetention = time.Minute
	h := newHarnessWith(t, cfg)
	alpha := h.maker("Alpha")
	for range 5 {
		h.newRFQ(houseTaker, Sell, "1", 600, alpha)
	}
	s := h.d.Streams[alpha.id]
	if s.Seq != 5 || s.Len() != 3 || s.Retained()[0].Seq != 3 {
		t.Fatalf("count bound: %+v", s)
	}
	open := func(since uint64) []Event {
		mark := len(h.events)
		h.socket++
		h.apply(SocketOpened{Socket: h.socket, KeyHash: keyHash(alpha.key), Resume: true, Since: since})
		return h.evs(alpha.id, mark)
	}
	if f := open(1); f[0].Payload != (StreamGapPayload{Since: 1, Oldest: 3}) {
		t.Fatalf("stale since: %+v", f[0])
	}
	if f := open(2); len(f) != 4 || f[0].Seq != 3 || f[3].Payload != (StreamResumedPayload{From: 3, To: 5}) {
		t.Fatalf("since 2: %+v", f)
	}
	if f := open(6); f[0].Payload != (StreamGapPayload{Since: 6, Oldest: 3}) {
		t.Fatalf("ahead since: %+v", f[0])
	}
	h.now = h.now.Add(61 * time.Second) // older than the window: not replayed, though not yet trimmed
	if f := open(4); f[0].Payload != (StreamGapPayload{Since: 4, Oldest: 6}) {
		t.Fatalf("expired window: %+v", f[0])
	}
	if f := open(5); len(f) != 1 || f[0].Payload != (StreamResumedPayload{From: 6, To: 5}) {
		t.Fatalf("nothing missed: %+v", f)
	}
	h.newRFQ(houseTaker, Sell, "1", 600, alpha) // trims the expired ones
	if s := h.d.Streams[alpha.id]; s.Len() != 1 || s.Retained()[0].Seq != 6 {
		t.Fatalf("time bound: %+v", s)
	}
}

// TestStreamRetentionConfig: the bounds are validated.
func TestStreamRetentionConfig(t *testing.T) {
	for _, c := range []struct {
		events int
		window time.Duration
		ok     bool
	}{
		{0, 0, true}, {5000, 10 * time.Minute, true}, {MaxStreamRetentionEvents, MaxStreamRetention, true},
		{-1, time.Minute, false}, {MaxStreamRetentionEvents + 1, time.Minute, false},
		{10, -time.Second, false}, {10, MaxStreamRetention + time.Second, false},
	} {
		cfg := testConfig()
		cfg.StreamRetentionEvents, cfg.StreamRetention = c.events, c.window
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%d events, %s: %v", c.events, c.window, err)
		}
	}
}

// TestRetainedPayloadsRoundTrip: every event type a party is sent replays with its
// payload decoded into the type it is emitted with, encoding to the same bytes.
func TestRetainedPayloadsRoundTrip(t *testing.T) {
	types := map[string]any{
		EvRfqCreated: RfqDTO{}, EvRfqClosed: RfqIDPayload{}, EvRfqExpired: RfqIDPayload{}, EvQuoteCreated: QuoteDTO{},
		EvQuoteStatus: QuoteStatusPayload{}, EvQuoteDeclined: QuoteDeclinedPayload{}, EvQuoteAnchored: QuoteAnchoredPayload{},
		EvTradeStep: TradeStepPayload{}, EvTradeSettled: TradeDTO{}, EvTradeFailed: TradeFailedPayload{},
		EvSignRequested: SignActionDTO{}, EvSignCompleted: ActionIDPayload{}, EvHistoryRecorded: RfqHistoryDTO{},
	}
	rapid.Check(t, func(t *rapid.T) {
		typ := rapid.SampledFrom(sortedKeys(types)).Draw(t, "type")
		v := reflect.New(reflect.TypeOf(types[typ]))
		fill(t, v.Elem(), typ)
		if r, ok := v.Interface().(*RfqDTO); ok {
			r.Quotes, r.Declines = nil, nil // rfq.created carries neither (GET /rfq/mine does)
		}
		raw, err := json.Marshal(v.Elem().Interface())
		if err != nil {
			t.Skip("a drawn value that does not encode")
		}
		got := RetainedPayload(typ, json.RawMessage(raw))
		if reflect.TypeOf(got) != reflect.TypeOf(types[typ]) {
			t.Fatalf("%s replays as %T", typ, got)
		}
		again, err := json.Marshal(got)
		if err != nil || !bytes.Equal(again, raw) {
			t.Fatalf("%s: %s, replayed as %s (%v)", typ, raw, again, err)
		}
	})
}
