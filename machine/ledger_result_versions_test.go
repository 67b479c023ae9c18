package machine

import (
	"slices"
	"testing"
)

// The two record-version tests of ledger.result (the prepared blob and offset, the coin
// selection's inputs) share how they write and read it.

// ledgerResultRoundTrip writes res in an envelope at the current record version and reads
// it back, returning the version byte written.
func ledgerResultRoundTrip(t *testing.T, res LedgerResult) (byte, LedgerResult, error) {
	t.Helper()
	b, err := EncodeEnvelope(Envelope{Seq: 3, At: t0, Input: res})
	if err != nil {
		t.Fatal(err)
	}
	env, err := DecodeEnvelope(b)
	if err != nil {
		return b[0], LedgerResult{}, err
	}
	return b[0], env.Input.(LedgerResult), nil
}

// ledgerResultAsV6 writes res without the fields version 7 added (the blob, the offset
// and the inputs) as a version 6 record, version 7 without them, and reads it back.
func ledgerResultAsV6(t *testing.T, res LedgerResult) (LedgerResult, error) {
	t.Helper()
	res.Prepared, res.Offset, res.Inputs = nil, 0, nil
	b, err := EncodeEnvelope(Envelope{Seq: 3, At: t0, Input: res})
	if err != nil {
		t.Fatal(err)
	}
	v6 := slices.Clone(b[:len(b)-3]) // without the absent blob, the zero offset and the empty inputs
	v6[0] = recordVersion6
	env, err := DecodeEnvelope(v6)
	if err != nil {
		return LedgerResult{}, err
	}
	return env.Input.(LedgerResult), nil
}
