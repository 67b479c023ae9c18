package model

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// TestRegisterStartFingerprint: the model accepts a register/start answer whose party id
// carries Canton's key fingerprint (DECISIONS, "Formats": SHA-256 over the 4-byte big-endian
// hash purpose 12 and the raw key, after 1220), pinned here by hand for the public key of
// RFC 8032's first Ed25519 test vector, and refuses the form before 2026-11-25 (the SHA-256
// of the raw key alone) that it accepted while the embedded ledger lagged.
func TestRegisterStartFingerprint(t *testing.T) {
	pub, err := hex.DecodeString("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	if err != nil {
		t.Fatal(err)
	}
	const canton = "1220035a791d845bbb8195615e7eccd7a57c2ec4075c2e88695f194bab4e0194a889"
	if got := fingerprint(pub); got != canton {
		t.Fatalf("fingerprint = %s, want %s", got, canton)
	}
	sum := sha256.Sum256(pub)
	legacy := "1220" + hex.EncodeToString(sum[:])
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		fp string
		ok bool
	}{{canton, true}, {legacy, false}} {
		m, err := New(testConfig())
		if err != nil {
			t.Fatal(err)
		}
		start := machine.RegisterStart{DisplayName: "Bob", PublicKey: pub}
		if err := m.Apply(machine.Envelope{Seq: 1, At: at, Input: start}, machine.Outputs{}); err != nil {
			t.Fatal(err)
		}
		body := machine.RegisterStartDTO{RegistrationID: "reg_1", PartyID: "bob-a1b2c3::" + c.fp,
			Topology: []machine.TopologyDTO{{Hash: make([]byte, 34)}}}
		err = m.Apply(machine.Envelope{Seq: 2, At: at, Input: machine.Tick{}},
			machine.Outputs{Replies: []machine.Reply{{Seq: 1, Status: 200, Body: body}}})
		switch {
		case c.ok && err != nil:
			t.Errorf("Canton's fingerprint refused: %v", err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "fingerprint")):
			t.Errorf("the old fingerprint form: %v, want a divergence naming the fingerprint", err)
		}
	}
}
