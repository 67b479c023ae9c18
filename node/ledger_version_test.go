package node

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/journal"
)

// TestOldLedgerVersionRefused: a data directory whose ledger journal was written before
// party ids carried Canton's key fingerprint (a genesis record without ledgerVersion) is
// refused at start with an error naming both versions, not replayed to another state; a
// directory this build writes names version 2 and opens again.
func TestOldLedgerVersionRefused(t *testing.T) {
	opts := OptionsForTest(t.TempDir(), drive.NewEvents())
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	closeTestNode(t, n)
	var g genesisRecord
	withLedgerLog(t, opts.Dir, func(l journal.Log) {
		if err := readFirst(l, &g); err != nil {
			t.Fatal(err)
		}
	})
	if g.Kind != "ledger-genesis" || g.LedgerVersion != LedgerGenesisVersion || LedgerGenesisVersion != 3 {
		t.Fatalf("genesis %q of ledger version %d, want ledger-genesis of version 3", g.Kind, g.LedgerVersion)
	}
	n, err = Open(opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	closeTestNode(t, n)

	// The same genesis as an earlier build wrote it: no ledgerVersion.
	old := OptionsForTest(t.TempDir(), drive.NewEvents())
	withLedgerLog(t, old.Dir, func(l journal.Log) {
		rec, err := json.Marshal(genesisRecord{Kind: "ledger-genesis", Ledger: &old.Ledger})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	})
	n, err = Open(old)
	if err == nil {
		closeTestNode(t, n)
		t.Fatal("a data directory of ledger version 1 opened")
	}
	want := "ledger journal of ledger version 1, this build reads only version 3: its party ids carry the SHA-256 of the raw key, not Canton's key fingerprint"
	if !errors.Is(err, journal.ErrUnsupportedVersion) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open = %v, want ErrUnsupportedVersion naming %q", err, want)
	}

	// Version 2: its commands name no input holdings.
	if err := checkLedgerVersion(genesisRecord{LedgerVersion: 2}); !errors.Is(err, journal.ErrUnsupportedVersion) ||
		!strings.Contains(err.Error(), "ledger journal of ledger version 2, this build reads only version 3: its transfers and allocations name no input holdings") {
		t.Fatalf("version 2: %v", err)
	}
	// A version this build does not know either.
	if err := checkLedgerVersion(genesisRecord{LedgerVersion: 4}); err == nil ||
		!strings.Contains(err.Error(), "ledger journal of ledger version 4, this build reads only version 3") {
		t.Fatalf("version 4: %v", err)
	}
}

func withLedgerLog(t *testing.T, dir string, f func(journal.Log)) {
	t.Helper()
	l, err := journal.OpenDir(filepath.Join(dir, "ledger"), journal.Options{Sync: journal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	f(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func closeTestNode(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
