package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// houseKeysFile holds the API keys the desk drew for house parties configured without one.
const houseKeysFile = "house-keys.json"

// houseKeys returns the drawnKey function of resolve for a data directory: the key of a
// house party named in <dir>/house-keys.json, or a fresh random one written there (mode
// 0600) at the first start. The key hash is journaled at genesis, so the key must outlive
// the process; an operator who wants to act as the house party reads it from the file.
func houseKeys(dir string) func(name string) (string, error) {
	return func(name string) (string, error) {
		path := filepath.Join(dir, houseKeysFile)
		keys := map[string]string{}
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			if err := json.Unmarshal(b, &keys); err != nil {
				return "", fmt.Errorf("read %s: %w", path, err)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("read house keys: %w", err)
		}
		if k := keys[name]; k != "" {
			return k, nil
		}
		var raw [24]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", fmt.Errorf("draw a house key: %w", err)
		}
		keys[name] = "hk_" + hex.EncodeToString(raw[:])
		out, err := json.MarshalIndent(keys, "", "  ")
		if err != nil {
			return "", fmt.Errorf("encode house keys: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("create data directory: %w", err)
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, append(out, '\n'), 0o600); err != nil {
			return "", fmt.Errorf("write house keys: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return "", fmt.Errorf("write house keys: %w", err)
		}
		return keys[name], nil
	}
}
