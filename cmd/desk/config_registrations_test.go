package main

import (
	"testing"
	"time"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// TestDefaultedKeysConfig covers the keys that default to their package's value:
//   - max_pending_registrations defaults to machine's default, a file sets it, and a cap
//     below 1 is refused with its key named;
//   - ledger_dedup_window (the embedded ledger's deduplication window) defaults to
//     ledgersim's, a file sets it (journaled with the ledger's genesis), and one shorter
//     than a prepared transaction's lifetime is refused with its key named.
func TestDefaultedKeysConfig(t *testing.T) {
	registrations := func(m machine.Config, _ node.LedgerSpec) any { return m.MaxPendingRegistrations }
	window := func(_ machine.Config, spec node.LedgerSpec) any { return spec.DedupWindow }
	runKeyCases(t, []keyCase{
		{"registrations default", "", registrations, machine.DefaultMaxPendingRegistrations, ""},
		{"registrations set", "max_pending_registrations = 25\n", registrations, 25, ""},
		{"registrations zero refused", "max_pending_registrations = 0\n", registrations, nil, "max_pending_registrations"},
		{"window default", "", window, ledgersim.DefaultDedupWindow, ""},
		{"window set", "ledger_dedup_window = \"2h\"\n", window, 2 * time.Hour, ""},
		{"window too short", "ledger_dedup_window = \"1m\"\n", window, nil, "ledger_dedup_window"},
	})
}
