package transport

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
)

// APIKeyPrefix is the fixed prefix of every API key the desk hands out.
const APIKeyPrefix = "mk_"

// challengePrefix starts every key-rotation challenge; the rest is random.
const challengePrefix = "desk-challenge:"

// HashKey is the hex SHA-256 of an API key: the only form of a key the machine sees.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// secrets draws API keys and challenges from a random source (crypto/rand in production).
type secrets struct{ rand io.Reader }

// newAPIKey returns "mk_" + base64url(32 random bytes, no padding).
func (s secrets) newAPIKey() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("draw an API key: %w", err)
	}
	return APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// newChallenge returns "desk-challenge:" + base64url(24 random bytes).
func (s secrets) newChallenge() (string, error) {
	var b [24]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("draw a challenge: %w", err)
	}
	return challengePrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// defaultRand is the production random source.
var defaultRand io.Reader = rand.Reader
