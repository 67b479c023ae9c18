package client

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrInsecureIdentityFile is wrapped by LoadIdentity's error for a file that group or other
// users may read or write.
var ErrInsecureIdentityFile = errors.New("identity file is accessible to group or others")

// IdentityFileMode is the permission SaveIdentity gives an identity file.
const IdentityFileMode fs.FileMode = 0o600

// maxIdentityFile bounds how much LoadIdentity reads.
const maxIdentityFile = 64 << 10

// Identity is what a party keeps to act on the desk: its ids, its API key and its Ed25519
// private key. It holds secrets: keep it in a file only SaveIdentity writes.
type Identity struct {
	// PartyID is the full party id.
	PartyID string `json:"partyId"`
	// Hint is the party's short hint.
	Hint string `json:"hint"`
	// APIKey is the current API key ("mk_…").
	APIKey string `json:"apiKey"`
	// PrivateKey is the 32-byte Ed25519 seed (standard base64 in JSON).
	PrivateKey []byte `json:"privateKey"`
	// BaseURL is the desk the identity belongs to, optional.
	BaseURL string `json:"baseUrl,omitempty"`
}

// Validate checks that the identity has a party id and a well-sized seed.
func (id *Identity) Validate() error {
	if id.PartyID == "" {
		return errors.New("client: identity: no partyId")
	}
	if len(id.PrivateKey) != ed25519.SeedSize {
		return fmt.Errorf("client: identity: private key seed of %d bytes, want %d", len(id.PrivateKey), ed25519.SeedSize)
	}
	return nil
}

// Key returns the Ed25519 private key built from the seed.
func (id *Identity) Key() (ed25519.PrivateKey, error) {
	if len(id.PrivateKey) != ed25519.SeedSize {
		return nil, fmt.Errorf("client: identity: private key seed of %d bytes, want %d", len(id.PrivateKey), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(id.PrivateKey), nil
}

// SaveIdentity writes id as JSON to path with mode 0600, atomically: it writes a temporary
// file in the same directory, syncs it and renames it over path, so a crash leaves either
// the old file or the new one.
func SaveIdentity(path string, id *Identity) error {
	if err := id.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return fmt.Errorf("client: save identity: %w", err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("client: save identity: %w", err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	// CreateTemp makes 0600 files already; Chmod makes it explicit and umask-proof.
	if err := tmp.Chmod(IdentityFileMode); err != nil {
		return fmt.Errorf("client: save identity: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("client: save identity: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("client: save identity: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("client: save identity: %w", err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("client: save identity: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: make the rename durable
		_ = d.Close()
	}
	return nil
}

// LoadIdentity reads an identity file written by SaveIdentity. It refuses (with an error
// wrapping ErrInsecureIdentityFile) a file that group or other users may access, since it
// holds the private key and the API key.
func LoadIdentity(path string) (*Identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("client: load identity: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("client: load identity: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("client: load identity %s: not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("client: load identity %s: mode %#o: %w (chmod 600 it)", path, perm, ErrInsecureIdentityFile)
	}
	if st.Size() > maxIdentityFile {
		return nil, fmt.Errorf("client: load identity %s: larger than %d bytes", path, maxIdentityFile)
	}
	var id Identity
	dec := json.NewDecoder(f)
	if err := dec.Decode(&id); err != nil {
		return nil, fmt.Errorf("client: load identity %s: %w", path, err)
	}
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("client: load identity %s: %w", path, err)
	}
	return &id, nil
}
