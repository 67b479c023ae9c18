package ledgersim

import (
	"crypto/ed25519"
	"encoding/hex"
	"strings"
	"testing"
)

// TestFingerprintCanton pins the party id's fingerprint to Canton's, computed by hand
// (outside this code) for fixed keys. Canton's source it follows, in the
// digital-asset/canton repository, community/base/src/main/scala/com/digitalasset/canton/crypto/:
//   - CryptoKeys.scala, object Fingerprint, create(bytes):
//     Hash.digest(HashPurpose.PublicKeyFingerprint, bytes, HashAlgorithm.Sha256), rendered
//     by toLengthLimitedHexString as the multihash hex ("1220" for SHA-256 of 32 bytes);
//   - HashPurpose.scala: PublicKeyFingerprint = HashPurpose(12, "PublicKeyFingerprint");
//   - Hash.scala, digest: build(purpose, algorithm).addWithoutLengthPrefix(bytes).finish(),
//     the builder first hashing the purpose as a 4-byte big-endian integer.
//
// For an Ed25519 key the bytes are the raw 32-byte public key (DECISIONS, "Formats").
func TestFingerprintCanton(t *testing.T) {
	seq := make([]byte, 32)
	for i := range seq {
		seq[i] = byte(i)
	}
	// The public key of RFC 8032's first Ed25519 test vector (section 7.1, TEST 1).
	rfc, err := hex.DecodeString("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		pub      []byte
		want     string
		oldWrong string // the form before 2026-11-25: SHA-256 of the raw key alone
	}{
		{"rfc8032-test1", rfc,
			"1220035a791d845bbb8195615e7eccd7a57c2ec4075c2e88695f194bab4e0194a889",
			"122021fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9"},
		{"bytes-0-to-31", seq,
			"122093aa96c5554371f0d1fd471ce282f3b590ab0758f35c124924c8e3715910bbe1",
			"1220630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"},
	} {
		got := Fingerprint(ed25519.PublicKey(c.pub))
		if got != c.want {
			t.Errorf("%s: Fingerprint = %s, want %s", c.name, got, c.want)
		}
		if got == c.oldWrong {
			t.Errorf("%s: Fingerprint is still the SHA-256 of the raw key alone", c.name)
		}
		if id := PartyID("alice-1", ed25519.PublicKey(c.pub)); id != "alice-1::"+c.want {
			t.Errorf("%s: PartyID = %s", c.name, id)
		}
	}
}

// TestPartiesCarryCantonFingerprint checks that both kinds of party the ledger allocates,
// an onboarded external party and an internal one, carry the fingerprint of their key.
func TestPartiesCarryCantonFingerprint(t *testing.T) {
	l := newEnv(t, ProfileTestnet).l
	k := testKey("fp")
	pub := k.Public().(ed25519.PublicKey)
	ob, err := l.OnboardExternal("fp-maker", pub)
	if err != nil {
		t.Fatal(err)
	}
	if ob.PartyID != "fp-maker::"+Fingerprint(pub) {
		t.Errorf("external party id %s, want the key's fingerprint %s", ob.PartyID, Fingerprint(pub))
	}
	id, err := l.AllocateInternal("fp-house")
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Party(id)
	if err != nil {
		t.Fatal(err)
	}
	hint, fp, _ := strings.Cut(id, "::")
	if hint != "fp-house" || fp != Fingerprint(p.PublicKey) {
		t.Errorf("internal party id %s does not carry its key's fingerprint %s", id, Fingerprint(p.PublicKey))
	}
}
