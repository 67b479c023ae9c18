package client

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// GenerateKey returns a fresh Ed25519 party key from crypto/rand.
func GenerateKey() (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, fmt.Errorf("client: generate key: %w", err)
	}
	return key, nil
}

// PublicKeyBase64 returns the standard padded base64 of key's 32-byte raw public key, the
// form register/start expects.
func PublicKeyBase64(key ed25519.PrivateKey) string {
	return base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
}

// fingerprintPurpose is Canton's hash purpose of a public key fingerprint
// (HashPurpose.PublicKeyFingerprint), hashed as 4 big-endian bytes before the key.
const fingerprintPurpose = 12

// Fingerprint returns the part of a party id after "::" that the desk derives from a public
// key, exactly as Canton forms it: "1220" (the multihash prefix of a SHA-256) and the hex of
// SHA-256 over the 4-byte big-endian hash purpose 12 followed by the raw 32-byte key.
func Fingerprint(pub ed25519.PublicKey) string {
	h := sha256.New()
	var purpose [4]byte
	binary.BigEndian.PutUint32(purpose[:], fingerprintPurpose)
	h.Write(purpose[:])
	h.Write(pub)
	return "1220" + hex.EncodeToString(h.Sum(nil))
}

// legacyFingerprint is the form desks used before 2026-11-25 (the SHA-256 of the raw key
// alone, which no Canton participant produces), recognised only to refuse it clearly.
func legacyFingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "1220" + hex.EncodeToString(sum[:])
}

// VerifyPartyID checks that partyID ("<hint>::1220<64 hex>") is bound to pub: its part after
// the last "::" must be pub's Fingerprint. A party id in the form desks used before
// 2026-11-25 (the SHA-256 of the raw key alone) is refused with an error that says so.
func VerifyPartyID(partyID string, pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("client: party id %q: public key of %d bytes, want %d", partyID, len(pub), ed25519.PublicKeySize)
	}
	i := strings.LastIndex(partyID, "::")
	if i <= 0 {
		return fmt.Errorf("client: party id %q is not of the form <hint>::<fingerprint>", partyID)
	}
	switch fp := partyID[i+2:]; fp {
	case Fingerprint(pub):
		return nil
	case legacyFingerprint(pub):
		return fmt.Errorf("client: party id %q carries the SHA-256 of the raw key, the form desks used before "+
			"2026-11-25, not Canton's key fingerprint %s: the desk runs an outdated build", partyID, Fingerprint(pub))
	default:
		return fmt.Errorf("client: party id %q is not bound to our public key (want suffix ::%s)", partyID, Fingerprint(pub))
	}
}

// SignHash signs a prepared-transaction or topology hash given in its wire form (standard
// padded base64): it decodes the hash, signs the RAW bytes, and returns the standard padded
// base64 of the 64-byte signature.
func SignHash(key ed25519.PrivateKey, hashB64 string) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("client: sign hash: private key of %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(hashB64)
	if err != nil {
		return "", fmt.Errorf("client: sign hash: hash is not standard base64: %w", err)
	}
	if len(raw) == 0 {
		return "", fmt.Errorf("client: sign hash: empty hash")
	}
	return SignTopology(key, raw), nil
}

// SignTopology signs raw hash bytes (a topology hash after base64 decoding) and returns the
// standard padded base64 signature.
func SignTopology(key ed25519.PrivateKey, rawHash []byte) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key, rawHash))
}

// SignChallenge signs a key-rotation challenge as UTF-8 text (the only string the desk has
// signed as text) and returns the standard padded base64 signature.
func SignChallenge(key ed25519.PrivateKey, challenge string) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(challenge)))
}
