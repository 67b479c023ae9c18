package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// TestMaxPendingRegistrationsConfig: the cap defaults to machine's default, a file sets it,
// and a cap below 1 is refused with its key named.
func TestMaxPendingRegistrationsConfig(t *testing.T) {
	getenv := func(string) string { return "" }
	drawn := func(string) (string, error) { return "drawn-key-0123456789", nil }
	for _, c := range []struct {
		name, file string
		want       int
		wantErr    string
	}{
		{"default", "", machine.DefaultMaxPendingRegistrations, ""},
		{"set", "max_pending_registrations = 25\n", 25, ""},
		{"zero refused", "max_pending_registrations = 0\n", 0, "max_pending_registrations"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := ""
			if c.file != "" {
				path = filepath.Join(t.TempDir(), "desk.toml")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			fc, err := loadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			m, _, err := fc.resolve(getenv, drawn)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.MaxPendingRegistrations != c.want {
				t.Errorf("cap %d, want %d", m.MaxPendingRegistrations, c.want)
			}
		})
	}
}

// TestLedgerDedupWindowConfig: the embedded ledger's deduplication window defaults to
// ledgersim's, a file sets it (journaled with the ledger's genesis), and one shorter than
// a prepared transaction's lifetime is refused with its key named.
func TestLedgerDedupWindowConfig(t *testing.T) {
	getenv := func(string) string { return "" }
	drawn := func(string) (string, error) { return "drawn-key-0123456789", nil }
	for _, c := range []struct {
		name, file string
		want       time.Duration
		wantErr    string
	}{
		{"default", "", ledgersim.DefaultDedupWindow, ""},
		{"set", "ledger_dedup_window = \"2h\"\n", 2 * time.Hour, ""},
		{"too short", "ledger_dedup_window = \"1m\"\n", 0, "ledger_dedup_window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := ""
			if c.file != "" {
				path = filepath.Join(t.TempDir(), "desk.toml")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			fc, err := loadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			_, spec, err := fc.resolve(getenv, drawn)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.DedupWindow != c.want {
				t.Errorf("window %s, want %s", spec.DedupWindow, c.want)
			}
		})
	}
}
