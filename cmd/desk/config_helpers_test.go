package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// writeConfig writes body as a configuration file in a fresh temporary directory and
// returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "desk.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// resolveConfig loads the configuration file body (no file at all when it is empty) and
// resolves it with an empty environment and a fixed drawn key; err is the load's or the
// resolution's.
func resolveConfig(t *testing.T, body string) (fileConfig, machine.Config, node.LedgerSpec, error) {
	t.Helper()
	path := ""
	if body != "" {
		path = writeConfig(t, body)
	}
	fc, err := loadConfig(path)
	if err != nil {
		return fc, machine.Config{}, node.LedgerSpec{}, err
	}
	drawn := func(string) (string, error) { return "drawn-key-0123456789", nil }
	m, spec, err := fc.resolve(func(string) string { return "" }, drawn)
	return fc, m, spec, err
}

// refused reports whether a case that wants an error naming wantErr got it (and fails the
// test when it did not); a case that wants none ("") fails on any error and is not refused.
func refused(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("got %v, want an error naming %q", err, wantErr)
	}
	return true
}
