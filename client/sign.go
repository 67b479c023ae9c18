package client

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
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

// Fingerprint returns the part of a party id after "::" that the desk derives from a public
// key: "1220" and the hex of the SHA-256 of the raw key.
func Fingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "1220" + hex.EncodeToString(sum[:])
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
