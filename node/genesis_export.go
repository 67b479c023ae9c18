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
	return ledgerGenesisRecord(spec)
}

// EncodeLedgerInput renders one ledger input as the process's recorder journals it: its
// binary form (ledgersim.Input.AppendBinary), which ReplayLedger reads. LedgerRecordJSON
// shows it as JSON.
func EncodeLedgerInput(in ledgersim.Input) ([]byte, error) {
	rec, err := in.AppendBinary(nil)
	if err != nil {
		return nil, fmt.Errorf("encode ledger input: %w", err)
	}
	return rec, nil
}

// DecodeLedgerInput reads one ledger journal record after genesis, in either form: the
// binary one or the JSON that earlier builds wrote (ledgersim.DecodeInput).
func DecodeLedgerInput(raw []byte) (ledgersim.Input, error) {
	return decodeLedgerInput(raw)
}

// LedgerRecordJSON renders any ledger journal record as JSON, for traces and tools that
// show records as text: a JSON record (the genesis, or an input an earlier build wrote)
// as it is, a binary input record as the JSON of its Input, which DecodeLedgerInput reads
// back to the same input (JSON omits empty byte slices, which the ledger never records).
func LedgerRecordJSON(raw []byte) (json.RawMessage, error) {
	if len(raw) > 0 && raw[0] != ledgersim.InputBinaryVersion {
		if !json.Valid(raw) {
			return nil, fmt.Errorf("ledger record: neither JSON nor binary (first byte %#x)", raw[0])
		}
		return raw, nil
	}
	in, err := decodeLedgerInput(raw)
	if err != nil {
		return nil, fmt.Errorf("ledger record: %w", err)
	}
	js, err := json.Marshal(&in)
	if err != nil {
		return nil, fmt.Errorf("ledger record as JSON: %w", err)
	}
	return js, nil
}
