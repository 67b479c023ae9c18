package ledgersim

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/wire"
)

// preparedAllocation prepares a send allocation of 10 USDCx for a funded external party.
func preparedAllocation(t *testing.T, e *env, hint, cmdID string) (string, Prepared) {
	t.Helper()
	alice := e.external(hint)
	e.fund(alice, "USDCx", "100")
	cmd := Allocate{Settlement: SettlementRef{Executor: e.op, ID: "s-" + cmdID}, LegID: "a", Side: SideSend,
		Instrument: "USDCx", Amount: d("10"), SettleBefore: t0.Add(time.Hour)}
	p, err := e.prepare(alice, cmd, cmdID)
	if err != nil {
		t.Fatal(err)
	}
	return alice, p
}

// TestPreparedBlob: Prepare answers the serialized prepared transaction, as Canton's
// interactive submission service does (PrepareSubmissionResponse.prepared_transaction, in
// canton's community/ledger-api/src/main/protobuf/com/daml/ledger/api/v2/interactive/
// interactive_submission_service.proto): of a token-standard allocation's size, the same
// bytes for the same state, its hash the hash the party signs, and Execute takes it back
// (ExecuteSubmissionRequest.prepared_transaction; no prepared id of the participant's).
func TestPreparedBlob(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice, p := preparedAllocation(t, e, "alice", "c1")
	if n := len(p.Blob); n < 4<<10 || n > 8<<10 {
		t.Fatalf("an allocation's blob is %d bytes; want several KiB (4 to 8)", n)
	}
	if !bytes.Equal(mustHeader(t, p.Blob), EncodePrepared("ledgersim", p)) {
		t.Fatal("the blob does not lead with the encoding the hash covers")
	}
	if got, ok := headerPreparedID(mustHeader(t, p.Blob)); !ok || got != p.ID {
		t.Fatalf("the blob names prepared id %q, want %q", got, p.ID)
	}
	for _, cid := range p.Inputs {
		if !bytes.Contains(p.Blob, []byte(cid)) {
			t.Fatalf("the blob does not carry its input %s", cid)
		}
	}
	// Deterministic: a second ledger from the same configuration makes the same blob.
	e2 := newEnv(t, ProfileTestnet)
	_, p2 := preparedAllocation(t, e2, "alice", "c1")
	if !bytes.Equal(p.Blob, p2.Blob) {
		t.Fatal("the same state and command gave two different blobs")
	}
	u, err := e.l.Execute(p.Blob, ed25519.Sign(e.keys[alice], p.Hash[:]))
	if err != nil || u.PreparedID != p.ID {
		t.Fatalf("execute of the blob: %+v, %v", u, err)
	}
	e.check()
}

// mustHeader reads the header (the hashed encoding) of a blob.
func mustHeader(t *testing.T, blob []byte) []byte {
	t.Helper()
	d := wire.NewDecoder(blob[len(blobMagic)+1:])
	h := d.Bytes()
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	return h
}

// TestPreparedBlobTampered: a blob with any byte flipped is refused with a clear error
// and changes nothing; Canton refuses an altered prepared transaction because its hash no
// longer matches the signature (canton's InteractiveSubmissionService execute: the hash is
// recomputed from the transaction received); ledgersim authenticates the blob instead
// (blob.go), and says so.
func TestPreparedBlobTampered(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice, p := preparedAllocation(t, e, "alice", "c1")
	sig := ed25519.Sign(e.keys[alice], p.Hash[:])
	before := e.l.Digest()
	for _, at := range []int{0, len(blobMagic), 10, len(p.Blob) / 2, len(p.Blob) - 40, len(p.Blob) - 1} {
		bad := bytes.Clone(p.Blob)
		bad[at] ^= 0x01
		_, err := e.l.Execute(bad, sig)
		wantCat(t, err, CategoryInvalid)
		if !strings.Contains(err.Error(), "prepared transaction") {
			t.Fatalf("byte %d flipped: unclear refusal %q", at, err)
		}
	}
	if !strings.Contains(errOf(e.l.Execute(flip(p.Blob, len(p.Blob)/2), sig)).Error(), "altered since prepare") {
		t.Fatal("a flipped byte in the body is not called an alteration")
	}
	_, err := e.l.Execute(p.Blob[:len(p.Blob)-1], sig)
	wantCat(t, err, CategoryInvalid)
	_, err = e.l.Execute(nil, sig)
	wantCat(t, err, CategoryInvalid)
	_, err = e.l.Execute(append(bytes.Clone(p.Blob), 0), sig)
	wantCat(t, err, CategoryInvalid)
	if e.l.Digest() != before {
		t.Fatal("a refused blob changed the ledger")
	}
	// A blob of another ledger (another seed) is not this one's.
	other := newEnvTuned(t, ProfileTestnet, func(c *Config) { c.Seed++ })
	_, q := preparedAllocation(t, other, "alice", "c1")
	_, err = e.l.Execute(q.Blob, sig)
	wantCat(t, err, CategoryInvalid)
	// The genuine blob still executes.
	if _, err := e.l.Execute(p.Blob, sig); err != nil {
		t.Fatal(err)
	}
}

func flip(b []byte, at int) []byte {
	c := bytes.Clone(b)
	c[at] ^= 0x80
	return c
}

func errOf(_ Update, err error) error {
	if err == nil {
		return errNone
	}
	return err
}

var errNone = newErr(CategoryNone, "", "no error")

// TestPreparedBlobAfterReplay: a ledger rebuilt from its journal, or restored from a
// snapshot, takes the blobs the original handed out (the key derives from the
// configuration), so a desk restarting beside it executes what it journaled.
func TestPreparedBlobAfterReplay(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice, p := preparedAllocation(t, e, "alice", "c1")
	r, err := New(e.l.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range e.inputs {
		if err := r.Replay(in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Execute(p.Blob, ed25519.Sign(e.keys[alice], p.Hash[:])); err != nil {
		t.Fatal(err)
	}
}

// TestPreparedBlobCheap: serializing a prepared transaction is one allocation (the blob,
// at its exact size with room for nothing more), and opening it at execute one (the
// prepared id it names), however many blobs the ledger made before: the registry
// contracts' parts are made once per ledger, the buffers and the keyed HMACs reused.
func TestPreparedBlobCheap(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	_, p := preparedAllocation(t, e, "alice", "c1")
	rec := e.l.st.prepared[p.ID]
	if rec == nil {
		t.Fatal("the prepared transaction is not live")
	}
	var blob []byte
	serialize := func() {
		e.l.mu.Lock()
		blob = e.l.serialize(&rec.p)
		e.l.mu.Unlock()
	}
	serialize()
	if !bytes.Equal(blob, p.Blob) {
		t.Fatal("serializing again gave other bytes")
	}
	if len(blob) != cap(blob) {
		t.Fatalf("the blob is %d bytes in a buffer of %d", len(blob), cap(blob))
	}
	if raceEnabled {
		t.Skip("allocation counts under the race detector, whose sync.Pool drops entries at random")
	}
	if n := testing.AllocsPerRun(50, serialize); n > 1 {
		t.Errorf("serialize: %.1f allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(50, func() {
		if _, err := e.l.open(p.Blob); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("open: %.1f allocations, want 1", n)
	}
}
