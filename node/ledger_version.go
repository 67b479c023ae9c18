package node

import (
	"encoding/json"
	"fmt"

	"github.com/deskco/rfqdesk/journal"
)

// LedgerGenesisVersion is the version of the embedded ledger a ledger journal's genesis
// record names (its "ledgerVersion" field). A journal replays only to the state it
// recorded when today's ledger forms every id the way the one that wrote it did, so a
// change of how the ledger derives recorded ids bumps this version and the older
// journals are refused. Version 3 (2026-11-26): transfers and allocations name their
// input holdings (ledgersim.Allocate.Inputs) and the ledger refuses one that names none,
// so a version 2 journal's commands, which named none, no longer replay. Version 2
// (2026-11-25): party ids carry Canton's key fingerprint (ledgersim.Fingerprint).
// Version 1, a genesis record without the field: party ids carried the SHA-256 of the
// raw key alone.
const LedgerGenesisVersion = 3

// ledgerGenesisRecord renders a ledger journal's first record: the spec, and the version
// of the ledger that writes the journal.
func ledgerGenesisRecord(spec LedgerSpec) ([]byte, error) {
	rec, err := json.Marshal(genesisRecord{Kind: "ledger-genesis", LedgerVersion: LedgerGenesisVersion, Ledger: &spec})
	if err != nil {
		return nil, fmt.Errorf("encode ledger genesis: %w", err)
	}
	return rec, nil
}

// checkLedgerVersion refuses a ledger genesis record of another version than this build's,
// naming both (the error matches journal.ErrUnsupportedVersion).
func checkLedgerVersion(g genesisRecord) error {
	v := g.LedgerVersion
	if v == 0 {
		v = 1 // written before the field
	}
	switch {
	case v == LedgerGenesisVersion:
		return nil
	case v == 2:
		return fmt.Errorf("%w: ledger journal of ledger version 2, this build reads only version %d: "+
			"its transfers and allocations name no input holdings (the ledger chose them), so it cannot "+
			"replay to the state it recorded (start from a new data directory)",
			journal.ErrUnsupportedVersion, LedgerGenesisVersion)
	case v == 1:
		return fmt.Errorf("%w: ledger journal of ledger version 1, this build reads only version %d: "+
			"its party ids carry the SHA-256 of the raw key, not Canton's key fingerprint, so it cannot "+
			"replay to the state it recorded (start from a new data directory)",
			journal.ErrUnsupportedVersion, LedgerGenesisVersion)
	default:
		return fmt.Errorf("%w: ledger journal of ledger version %d, this build reads only version %d",
			journal.ErrUnsupportedVersion, v, LedgerGenesisVersion)
	}
}
