package machine

import (
	"bytes"
	"slices"
	"testing"
	"time"
)

// TestPreparedBlobTravels: the serialized prepared transaction a prepare answers is kept
// with the action (not in the allocation once the action holds it), survives a restart
// (the snapshot's prepared section) and goes back to the ledger with the signature: the
// fake ledger, like ledgersim, refuses an execute without it. The execute records the
// ledger offset the desk knew when it was first issued (LedgerCall.Since), and the call
// issued again after a restart carries the same.
func TestPreparedBlobTravels(t *testing.T) {
	h := newHarness(t)
	a := h.maker("Alpha")
	rfq := h.newRFQ(houseTaker, Buy, "0.5", 60, a)
	q := h.submit(a, rfq.RfqID, "100000")
	if len(q.Actions) == 0 {
		t.Fatal("no action")
	}
	for _, dto := range q.Actions {
		x := h.d.Actions[dto.ID]
		if want := fakeBlob(x.PreparedID, x.Hash); !bytes.Equal(x.Prepared, want) {
			t.Fatalf("action %s keeps %d bytes, want the prepare's %d", x.ID, len(x.Prepared), len(want))
		}
	}
	for _, al := range h.d.Quotes[q.QuoteID].Allocations {
		if al.Prepared != nil {
			t.Fatalf("allocation %s still keeps its blob beside its action's", al.LegID)
		}
	}
	h.d = roundTrip(t, h.d)
	for _, dto := range q.Actions {
		if x := h.d.Actions[dto.ID]; len(x.Prepared) != 6<<10 {
			t.Fatalf("after a restart the action keeps %d bytes", len(x.Prepared))
		}
	}
	h.auto = false
	h.sign(a.id, a.key, q.Actions)
	calls := h.queued
	h.queued = nil
	if len(calls) == 0 {
		t.Fatal("no execute sent")
	}
	end := h.d.LedgerEnd
	if end == 0 {
		t.Fatal("the desk recorded no ledger offset from the results")
	}
	since := map[string]int64{}
	for _, c := range calls {
		if c.Op != OpExecute || !bytes.Equal(c.Prepared, h.d.Actions[actionOfCall(t, h, c)].Prepared) {
			t.Fatalf("the execute %s does not carry the action's blob", c.CommandID)
		}
		if c.Since != end {
			t.Fatalf("the execute %s records offset %d, the desk knew %d", c.CommandID, c.Since, end)
		}
		since[c.CommandID] = c.Since
	}
	// Restarted with the executes in flight: the re-issued calls still carry the blobs.
	h.d = roundTrip(t, h.d)
	h.seq++
	out := h.applyEnvelope(Envelope{Seq: h.seq, At: h.now, Input: Boot{}})
	n := 0
	for _, c := range out.Calls {
		if c.Op == OpExecute {
			n++
			if len(c.Prepared) != 6<<10 {
				t.Fatalf("the re-issued execute %s carries %d bytes", c.CommandID, len(c.Prepared))
			}
			if c.Since != since[c.CommandID] {
				t.Fatalf("the re-issued execute %s records offset %d, first issued with %d", c.CommandID, c.Since, since[c.CommandID])
			}
		}
	}
	if n != len(calls) {
		t.Fatalf("%d executes re-issued, want %d", n, len(calls))
	}
	h.queued = append(h.queued, out.Calls...)
	h.flush()
	if st := h.d.Quotes[q.QuoteID].State; st != QuoteLive {
		t.Fatalf("quote %s after its executes, want live", st)
	}
}

// actionOfCall finds the action whose execute c is.
func actionOfCall(t *testing.T, h *harness, c LedgerCall) string {
	t.Helper()
	for id, x := range h.d.Actions {
		if x.Execute != nil && x.PreparedID == c.PreparedID {
			return id
		}
	}
	t.Fatalf("no action executes %s", c.PreparedID)
	return ""
}

// TestPreparedBlobRecordVersions: ledger.result carries the blob and the ledger offset since
// record version 7; a version 6 record (version 7 without them) decodes with neither.
func TestPreparedBlobRecordVersions(t *testing.T) {
	res := LedgerResult{CommandID: "c", PreparedID: "p", Hash: []byte{1, 2}, ExpiresAt: t0.Add(time.Minute), Prepared: fakeBlob("p", []byte{1, 2})}
	version, got, err := ledgerResultRoundTrip(t, res)
	if version != recordVersion || recordVersion != 7 {
		t.Fatalf("written as version %d", version)
	}
	if err != nil || !bytes.Equal(got.Prepared, res.Prepared) {
		t.Fatalf("version 7 ledger.result: %v", err)
	}
	got, err = ledgerResultAsV6(t, res)
	if err != nil {
		t.Fatal(err)
	}
	if got.PreparedID != "p" || got.Prepared != nil || !got.ExpiresAt.Equal(res.ExpiresAt) {
		t.Fatalf("version 6 ledger.result: %+v", got)
	}
}

// TestPreparedBlobSnapshotVersions: a version 4 snapshot (version 5 without the prepared
// and coin selection sections) restores with no blob kept and nothing reserved, and
// re-encodes at version 5 to the same state.
func TestPreparedBlobSnapshotVersions(t *testing.T) {
	h := newHarness(t)
	h.maker("Alpha")
	// The prepared section (four empty maps of blobs, the ledger end, two empty maps of
	// offsets), then the coin selection section (four zero counts, coinsel.go).
	const section = 7 + 4
	h.d.LedgerEnd = 0 // the registration's answers reported offsets
	b, err := h.d.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[len(b)-section:], make([]byte, section)) {
		t.Fatalf("a desk keeping no blob and reserving nothing ends its snapshot with %v, want empty sections", b[len(b)-section:])
	}
	v4 := slices.Clone(b[:len(b)-section])
	v4[len(snapshotMagic)] = snapshotVersion4
	d, err := Restore(v4)
	if err != nil {
		t.Fatalf("version 4 snapshot: %v", err)
	}
	again := reencodes(t, d, snapshotVersion4)
	if !bytes.Equal(again, b) {
		t.Fatal("version 4 re-encoded differs from the version 5 snapshot")
	}
	refusesNextVersion(t, again)
}
