package fuzz

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/machine"
)

// FuzzParseTime checks the timestamp decoder of quote submissions: arbitrary text never
// panics, and an accepted timestamp is UTC, at the millisecond, and survives the wire form.
func FuzzParseTime(f *testing.F) {
	for _, seed := range []string{"2026-11-21T12:00:00Z", "2026-11-21T12:00:00.123+02:00", "2026-11-21T12:00:00.123456789-07:30",
		"2026-11-21", "", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z", "2026-02-30T00:00:00Z"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := machine.ParseTime(s)
		if err != nil {
			return
		}
		if ts.Location() != time.UTC || ts.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("%q parsed to %v, not UTC milliseconds", s, ts)
		}
		again, err := machine.ParseTime(machine.FormatTime(ts))
		if err != nil || !again.Equal(ts) {
			t.Fatalf("%q: the wire form %q does not parse back: %v %v", s, machine.FormatTime(ts), again, err)
		}
	})
}

// FuzzStreamFrame checks the client's stream-frame decoding: an arbitrary frame never
// panics, whatever its type and payload; a frame of a known type that decodes has a payload
// that encodes again.
func FuzzStreamFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"rfq.created","payload":{"rfqId":"rfq_1","qty":"1.5","deadline":"2026-11-21T12:00:00Z"}}`,
		`{"type":"quote.status","payload":{"quoteId":"q_1","rfqId":"rfq_1","status":"lost"}}`,
		`{"type":"trade.settled","payload":{"tradeId":"t_1","fee":"0.1","ledger":{"updateId":"1220ab","receiptCids":["00ab"]}}}`,
		`{"type":"sign.requested","payload":{"id":"act_1","hash":"AAAA"}}`,
		`{"type":"unknown.kind","payload":[1,2]}`, `{"type":"rfq.closed","payload":null}`, `{}`, `[]`, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var ev client.Event
		if err := json.Unmarshal(frame, &ev); err != nil {
			return
		}
		v, err := ev.Decode()
		if err != nil || v == nil {
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("a decoded %s payload does not encode: %v", ev.Type, err)
		}
	})
}
