package client

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testSeed gives a fixed key, so the tests are deterministic.
func testPrivateKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

func TestSignHashSignsRawBytes(t *testing.T) {
	key := testPrivateKey(1)
	pub := key.Public().(ed25519.PublicKey)
	raw := sha256.Sum256([]byte("prepared transaction"))
	hashB64 := base64.StdEncoding.EncodeToString(raw[:])

	sigB64, err := SignHash(key, hashB64)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(sigB64)
	if err != nil || len(sig) != ed25519.SignatureSize {
		t.Fatalf("signature %q is not padded std base64 of 64 bytes: %v", sigB64, err)
	}
	if !ed25519.Verify(pub, raw[:], sig) {
		t.Error("signature does not verify over the raw hash bytes")
	}
	if ed25519.Verify(pub, []byte(hashB64), sig) {
		t.Error("signature verifies over the base64 text: the raw bytes must be signed")
	}
	if got := SignTopology(key, raw[:]); got != sigB64 {
		t.Errorf("SignTopology(raw) = %q, SignHash(b64) = %q", got, sigB64)
	}
}

func TestSignHashRejectsBadInput(t *testing.T) {
	key := testPrivateKey(1)
	for _, h := range []string{"", "not base64!", "3q2-7w", "3q2+7w", "3q2+7w=="[:7]} {
		if _, err := SignHash(key, h); err == nil {
			t.Errorf("SignHash(%q) accepted", h)
		}
	}
	if _, err := SignHash(key[:10], "3q2+7w=="); err == nil {
		t.Error("short key accepted")
	}
}

func TestSignChallengeSignsUTF8(t *testing.T) {
	key := testPrivateKey(2)
	challenge := "rotate:ch_5f3c—ü"
	sig, err := base64.StdEncoding.DecodeString(SignChallenge(key, challenge))
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(key.Public().(ed25519.PublicKey), []byte(challenge), sig) {
		t.Error("challenge signature does not verify over the UTF-8 bytes")
	}
}

func TestKeyHelpers(t *testing.T) {
	key, err := GenerateKey()
	if err != nil || len(key) != ed25519.PrivateKeySize {
		t.Fatalf("GenerateKey: %d bytes, %v", len(key), err)
	}
	pub := key.Public().(ed25519.PublicKey)
	if got, _ := base64.StdEncoding.DecodeString(PublicKeyBase64(key)); !bytes.Equal(got, pub) {
		t.Error("PublicKeyBase64 is not the raw public key")
	}
	if fp := Fingerprint(pub); len(fp) != 68 || fp[:4] != "1220" {
		t.Errorf("Fingerprint = %q", fp)
	}
}

// TestFingerprintCanton pins Fingerprint to Canton's key fingerprint, computed by hand for
// the public key of RFC 8032's first Ed25519 test vector: SHA-256 over the 4-byte big-endian
// hash purpose 12 (HashPurpose.PublicKeyFingerprint) and the raw key, after the multihash
// prefix 1220 (Canton: crypto/CryptoKeys.scala, Fingerprint.create; ledgersim has the same
// vector). A party id in the earlier form, the SHA-256 of the raw key alone, is refused
// saying so; one of another key is refused as not bound.
func TestFingerprintCanton(t *testing.T) {
	pub, err := hex.DecodeString("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	if err != nil {
		t.Fatal(err)
	}
	const want = "1220035a791d845bbb8195615e7eccd7a57c2ec4075c2e88695f194bab4e0194a889"
	if fp := Fingerprint(pub); fp != want {
		t.Fatalf("Fingerprint = %s, want %s", fp, want)
	}
	if err := VerifyPartyID("bob-1a2b3c::"+want, pub); err != nil {
		t.Errorf("VerifyPartyID of the right id: %v", err)
	}
	const old = "122021fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9" // SHA-256 of the raw key
	if err := VerifyPartyID("bob-1a2b3c::"+old, pub); err == nil || !strings.Contains(err.Error(), "SHA-256 of the raw key") {
		t.Errorf("VerifyPartyID of the old form: %v, want a refusal naming the old form", err)
	}
	other := testPrivateKey(2).Public().(ed25519.PublicKey)
	for _, id := range []string{"bob-1a2b3c::" + Fingerprint(other), want, "::" + want, "bob::1220"} {
		if err := VerifyPartyID(id, pub); err == nil {
			t.Errorf("VerifyPartyID(%q) accepted", id)
		}
	}
	if err := VerifyPartyID("bob::"+want, pub[:31]); err == nil {
		t.Error("VerifyPartyID accepted a short key")
	}
}

func testIdentity() *Identity {
	return &Identity{PartyID: "bob-x1y2z3::1220ab", Hint: "bob-x1y2z3", APIKey: "mk_secret",
		PrivateKey: testPrivateKey(3).Seed(), BaseURL: "http://127.0.0.1:8080"}
}

func TestIdentityFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "maker.json")
	id := testIdentity()
	if err := SaveIdentity(path, id); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %#o, want 0600", st.Mode().Perm())
	}
	got, err := LoadIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.PartyID != id.PartyID || got.Hint != id.Hint || got.APIKey != id.APIKey || got.BaseURL != id.BaseURL ||
		!bytes.Equal(got.PrivateKey, id.PrivateKey) {
		t.Errorf("round trip: got %+v", got)
	}
	k, err := got.Key()
	if err != nil || !k.Equal(testPrivateKey(3)) {
		t.Errorf("Key(): %v", err)
	}

	// Overwrite (a rotated key) keeps the mode and leaves no temporary file behind.
	id.APIKey = "mk_rotated"
	if err := SaveIdentity(path, id); err != nil {
		t.Fatal(err)
	}
	if got, err = LoadIdentity(path); err != nil || got.APIKey != "mk_rotated" {
		t.Errorf("after overwrite: %+v %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the identity file", len(entries))
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"privateKey"`) || strings.Contains(string(raw), "{\n  }") {
		t.Errorf("unexpected file content: %s", raw)
	}
}

func TestLoadIdentityRefusesOpenPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "maker.json")
	if err := SaveIdentity(path, testIdentity()); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o602} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadIdentity(path); !errors.Is(err, ErrInsecureIdentityFile) {
			t.Errorf("mode %#o: %v, want ErrInsecureIdentityFile", mode, err)
		}
	}
}

func TestIdentityValidation(t *testing.T) {
	dir := t.TempDir()
	bad := testIdentity()
	bad.PrivateKey = bad.PrivateKey[:31]
	if err := SaveIdentity(filepath.Join(dir, "a.json"), bad); err == nil {
		t.Error("saved a 31-byte seed")
	}
	bad = testIdentity()
	bad.PartyID = ""
	if err := SaveIdentity(filepath.Join(dir, "b.json"), bad); err == nil {
		t.Error("saved an identity without party id")
	}
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, []byte(`{"partyId":"p","privateKey":"AAAA"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(path); err == nil {
		t.Error("loaded a 3-byte seed")
	}
	if err := os.WriteFile(path, []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(path); err == nil {
		t.Error("loaded garbage")
	}
	if _, err := LoadIdentity(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestClientFromIdentity(t *testing.T) {
	id := testIdentity()
	c, err := FromIdentity(id, "http://ignored.example")
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != id.BaseURL || c.APIKey() != id.APIKey || c.PartyID() != id.PartyID || c.Hint() != id.Hint ||
		!c.PrivateKey().Equal(testPrivateKey(3)) {
		t.Errorf("client does not carry the identity")
	}
	back := c.Identity()
	if back.PartyID != id.PartyID || !bytes.Equal(back.PrivateKey, id.PrivateKey) || back.BaseURL != id.BaseURL {
		t.Errorf("Identity() = %+v", back)
	}
	c.SetAPIKey("mk_2")
	if c.Identity().APIKey != "mk_2" {
		t.Error("SetAPIKey not reflected")
	}
}
