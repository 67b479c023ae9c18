package fuzz

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// FuzzDecimalBinary checks that the binary decimal decoder never panics, and that what it
// accepts re-encodes to the same bytes (the form is canonical) and formats on the wire.
func FuzzDecimalBinary(f *testing.F) {
	for _, s := range []string{"0", "1.5", "60000", "0.0000000001", "123456789012345678901234567890.123456789"} {
		b, _ := money.MustParse(s).AppendBinary(nil)
		f.Add(b)
	}
	f.Add([]byte{2, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, n, err := money.DecodeBinary(b)
		if err != nil {
			return
		}
		again, err := d.AppendBinary(nil)
		if err != nil || !bytes.Equal(again, b[:n]) {
			t.Fatalf("% x decoded as %s re-encodes as % x (%v)", b[:n], d, again, err)
		}
		if p, err := money.Parse(d.String()); err == nil && !p.Equal(d) {
			t.Fatalf("%s parses back as %s", d, p)
		}
	})
}

// FuzzDecodeEnvelope checks that the journal record decoder never panics on arbitrary
// bytes, and that a record it accepts re-encodes to the same bytes (the form is canonical).
func FuzzDecodeEnvelope(f *testing.F) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 5, time.UTC)
	for _, in := range []machine.Input{machine.Tick{}, machine.SocketOpened{Socket: 3, KeyHash: "k"},
		machine.CreateRFQ{Direction: machine.Sell, Qty: money.MustParse("1.5"), Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{"m"}, TTLSeconds: 9},
		machine.LedgerResult{CommandID: "c", Hash: []byte{1, 2}, Receipts: []string{"r"}},
		machine.ExecuteActions{Entries: []machine.SignedAction{{ActionID: "a", Signature: []byte{7}}}, Batch: true},
		machine.Checkpoint{Digest: "ab"}, machine.CheckpointMark{}, machine.CheckpointDigest{Mark: 12, Digest: "cd"},
		machine.CancelAllQuotes{Req: machine.Req{KeyHash: "k"}}} {
		b, err := machine.EncodeEnvelope(machine.Envelope{Seq: 7, At: at, Input: in})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"seq":9,"at":"2026-11-21T12:00:00.5Z","kind":"rfq.create","input":{"qty":"1.5","invitedMakers":["x"]}}`))
	if v3, err := os.ReadFile("../machine/testdata/formats/record-v3-socket-opened.bin"); err == nil {
		f.Add(v3) // a version 3 record, as the desk before cancel-on-disconnect wrote it
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := machine.DecodeEnvelope(b)
		if err != nil {
			return
		}
		out, err := machine.EncodeEnvelope(env)
		if err != nil {
			t.Fatalf("decoded record %x does not encode: %v", b, err)
		}
		// A record of a previous version (3 to 6, still read) re-encodes as version 7: the
		// same bytes after the version, socket.opened with what it lacked appended: the mark
		// (false) for version 3, the resume request (false, 0) for 3 and 4, the ticket hash
		// ("") for 3 to 5; and ledger.result with the absent prepared transaction (a nil byte
		// string), a zero ledger offset and its input holdings (none) appended for all four.
		want := b
		if b[0] >= 3 && b[0] <= 6 {
			want = append([]byte{7}, b[1:]...)
			switch env.Input.(type) {
			case machine.SocketOpened:
				if b[0] == 3 {
					want = append(want, 0)
				}
				if b[0] <= 4 {
					want = append(want, 0, 0)
				}
				if b[0] <= 5 {
					want = append(want, 0)
				}
			case machine.LedgerResult:
				want = append(want, 0, 0, 0) // no blob, offset 0, no inputs
			}
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("record %x re-encodes as %x, want %x", b, out, want)
		}
	})
}

// FuzzRestoreBinary checks that restoring arbitrary bytes after the binary snapshot magic
// never panics, and that a snapshot it accepts encodes back to the same bytes.
func FuzzRestoreBinary(f *testing.F) {
	cfg := machine.DefaultConfig()
	cfg.Operator, cfg.FeeParty = "operator::1", "fees::1"
	cfg.Instruments = []machine.Instrument{{Symbol: "cbtc", Display: "CBTC", USDPrice: money.MustParse("100000"), RegistryID: "reg:cbtc"},
		{Symbol: "usdcx", Display: "USDCx", USDPrice: money.MustParse("1"), RegistryID: "reg:usdcx"}}
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}}
	if d, err := machine.NewDesk(cfg); err == nil {
		if b, err := d.EncodeSnapshot(); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("RFQDDESK\x01"))
	if v1, err := os.ReadFile("../machine/testdata/formats/snapshot-v1.bin"); err == nil {
		f.Add(v1) // a version 1 snapshot, as the desk before cancel-on-disconnect wrote it
	}
	for _, name := range []string{"snapshot-v2-rfqs.bin", "snapshot-v2-declines.bin"} {
		if v2, err := os.ReadFile("../machine/testdata/formats/" + name); err == nil {
			f.Add(v2) // a version 2 snapshot, as the desk before the scorecard and maker protection wrote it
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := machine.Restore(b)
		if err != nil || !bytes.HasPrefix(b, []byte("RFQDDESK")) {
			return
		}
		again, err := d.EncodeSnapshot()
		if err != nil {
			t.Fatalf("restored desk does not encode: %v", err)
		}
		if _, err := machine.Restore(again); err != nil {
			t.Fatalf("re-encoded snapshot does not restore: %v", err)
		}
	})
}
