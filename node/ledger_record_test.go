package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgersim"
)

// TestLedgerJournalMixedForms: a ledger journal whose older records an earlier build
// wrote as JSON and whose newer ones are binary replays to the live ledger's digest, and
// LedgerRecordJSON shows every record as JSON that reads back to the same input.
func TestLedgerJournalMixedForms(t *testing.T) {
	spec := testLedgerSpec()
	start := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	clk := ledgersim.NewManualClock(start)
	log := journal.NewMemLog(true)
	n, ps := ledgerNode(t, log, spec, clk)
	for i := range 6 {
		faucet(t, n.Ledger.L, ps, fmt.Sprint(i))
		clk.Advance(1500 * time.Millisecond)
	}
	var recs [][]byte
	for _, rec := range Records(log, 1, new(error)) {
		recs = append(recs, bytes.Clone(rec))
	}
	if len(recs) != 13 {
		t.Fatalf("%d records, want genesis and 12 inputs", len(recs))
	}
	for i, rec := range recs[1:] {
		if rec[0] != ledgersim.InputBinaryVersion {
			t.Fatalf("record %d is not in the binary form: %q", i+2, rec)
		}
	}
	mixed := journal.NewMemLog(true)
	for i, rec := range recs {
		if i > 0 {
			in, err := DecodeLedgerInput(rec)
			if err != nil {
				t.Fatalf("record %d: %v", i+1, err)
			}
			if i <= len(recs)/2 {
				rec, err = json.Marshal(in)
			} else {
				rec, err = in.AppendBinary(nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := mixed.Append(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	fresh, _ := ledgerNode(t, journal.NewMemLog(true), spec, ledgersim.NewManualClock(start))
	if got, err := ReplayLedger(mixed, fresh.Ledger.L); err != nil || got != 12 {
		t.Fatalf("replayed %d inputs: %v", got, err)
	}
	if fresh.Ledger.L.Digest() != n.Ledger.L.Digest() {
		t.Fatal("the mixed journal replays to another ledger")
	}

	for seq, rec := range Records(mixed, 1, new(error)) {
		js, err := LedgerRecordJSON(rec)
		if err != nil {
			t.Fatalf("record %d: %v", seq, err)
		}
		if seq == 1 || rec[0] == '{' {
			if !bytes.Equal(js, rec) {
				t.Fatalf("JSON record %d shown as %s", seq, js)
			}
			continue
		}
		a, errA := DecodeLedgerInput(rec)
		b, errB := DecodeLedgerInput(js)
		if errA != nil || errB != nil {
			t.Fatalf("record %d: %v, %v", seq, errA, errB)
		}
		ba, _ := a.AppendBinary(nil)
		bb, _ := b.AppendBinary(nil)
		if !bytes.Equal(ba, bb) {
			t.Fatalf("record %d shown as %s, which reads as another input", seq, js)
		}
	}
	for _, bad := range [][]byte{nil, {ledgersim.InputBinaryVersion, 0xff}, []byte("{not json"), {2, 0}} {
		if js, err := LedgerRecordJSON(bad); err == nil {
			t.Errorf("LedgerRecordJSON(% x) = %s, want an error", bad, js)
		}
	}
}
