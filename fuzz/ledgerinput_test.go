package fuzz

import (
	"bytes"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/money"
)

// FuzzDecodeLedgerInput checks that the ledger journal record decoder never panics on
// arbitrary bytes, that a binary record it accepts re-encodes to the same bytes, and that
// any record it accepts (JSON too) survives the binary form unchanged.
func FuzzDecodeLedgerInput(f *testing.F) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 5, time.UTC)
	party := "maker::1220" + string(bytes.Repeat([]byte("ab"), 32))
	cid := "00" + string(bytes.Repeat([]byte("0f"), 32))
	for _, in := range []ledgersim.Input{
		{Kind: ledgersim.InputTick, At: at},
		{Kind: ledgersim.InputOnboard, At: at, Hint: "maker", PublicKey: []byte{1, 2}, PartyID: party},
		{Kind: ledgersim.InputCompleteOnboarding, At: at, PartyID: party, Signatures: [][]byte{{1}, nil, {}}},
		{Kind: ledgersim.InputPrepare, At: at, ActAs: party, CommandID: "c", PreparedID: "prep-" + string(bytes.Repeat([]byte("1"), 32)), Hash: []byte{3},
			Command: ledgersim.Envelope(ledgersim.Allocate{Settlement: ledgersim.SettlementRef{Executor: party, ID: "s"}, LegID: "l",
				Side: ledgersim.SideSend, Instrument: "cbtc", Amount: money.MustParse("1.5"), SettleBefore: at})},
		{Kind: ledgersim.InputSubmit, At: at, ActAs: party, UpdateID: "1220" + string(bytes.Repeat([]byte("9"), 64)),
			Command: ledgersim.Envelope(ledgersim.Settle{Legs: []ledgersim.Leg{{Sender: party, Amount: money.MustParse("2")}}, Allocations: []string{cid}})},
		{Kind: ledgersim.InputSubmit, At: at, Command: ledgersim.Envelope(ledgersim.Transfer{Receiver: party, Amount: money.MustParse("0.1"), Reason: "r"})},
		{Kind: ledgersim.InputExecute, At: at, Signature: []byte{4}},
		{Kind: "other", Command: &ledgersim.CommandEnvelope{}},
	} {
		b, err := in.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"execute","at":"2026-11-21T12:00:05.9Z","preparedId":"prep-9fed0624329568ec0c9202720851b4c8","signature":"EwQf"}`))
	f.Add([]byte(`{"kind":"submit","command":{"settle":{"settlement":{"executor":"e","id":"s"},"legs":null,"allocations":[]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ledgersim.DecodeInput(b)
		if err != nil {
			return
		}
		binary := b[0] == ledgersim.InputBinaryVersion
		out, err := in.AppendBinary(nil)
		if err != nil {
			if binary {
				t.Fatalf("% x decodes as %+v, which does not encode: %v", b, in, err)
			}
			return // e.g. a JSON time before year 1: decodable, out of the binary form's range
		}
		if binary && !bytes.Equal(out, b) {
			t.Fatalf("% x decodes as %+v, which re-encodes as % x", b, in, out)
		}
		// The binary form is a function of everything an input holds (amounts by value,
		// times by instant), so equal bytes after a second round trip mean nothing was lost.
		back, err := ledgersim.DecodeInput(out)
		if err != nil {
			t.Fatalf("re-encoded % x: %v", out, err)
		}
		if again, err := back.AppendBinary(nil); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("%+v encodes as % x, decodes as %+v, which encodes as % x (%v)", in, out, back, again, err)
		}
	})
}
