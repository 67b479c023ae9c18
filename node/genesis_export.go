package node

import (
	"encoding/json"
	"fmt"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// EncodeDeskGenesis renders the first record of a desk journal exactly as Open writes it,
// so that a simulator keeping its own journals recovers through ReplayDesk like the process.
func EncodeDeskGenesis(cfg machine.Config) ([]byte, error) {
	rec, err := json.Marshal(genesisRecord{Kind: "desk-genesis", Config: &cfg})
	if err != nil {
		return nil, fmt.Errorf("encode desk genesis: %w", err)
	}
	return rec, nil
}

// EncodeLedgerGenesis renders the first record of a ledger journal exactly as Open writes it.
func EncodeLedgerGenesis(spec LedgerSpec) ([]byte, error) {
	rec, err := json.Marshal(genesisRecord{Kind: "ledger-genesis", Ledger: &spec})
	if err != nil {
		return nil, fmt.Errorf("encode ledger genesis: %w", err)
	}
	return rec, nil
}

// EncodeLedgerInput renders one ledger input as the process's recorder journals it (the
// form ReplayLedger reads).
func EncodeLedgerInput(in ledgersim.Input) ([]byte, error) {
	rec, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode ledger input: %w", err)
	}
	return rec, nil
}

// DecodeLedgerInput reads one ledger journal record after genesis.
func DecodeLedgerInput(raw []byte) (ledgersim.Input, error) {
	return decodeLedgerInput(raw)
}
