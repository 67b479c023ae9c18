package node

// EncodeLedgerSnapshot frames a ledger snapshot (ledgersim's SnapshotWith) with the
// journal's genesis spec exactly as the process saves it into the ledger journal, so that a
// simulator keeping its own journals snapshots, prunes and recovers (RecoverLedger,
// LedgerGenesis) like the process.
func EncodeLedgerSnapshot(spec LedgerSpec, ledger []byte) ([]byte, error) {
	return encodeLedgerSnapshot(spec, ledger)
}
