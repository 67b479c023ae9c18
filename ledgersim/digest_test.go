package ledgersim

import "testing"

// TestLazyDigestContributions drives more contracts through the ledger than the window
// of pending digest contributions holds (some archived at once, receipts kept), reading
// the digest of one ledger only at the end and of its replay after every input: both
// must agree, and each must equal a full recount.
func TestLazyDigestContributions(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	for i := 0; i < sumWindow; i++ {
		u := e.must(e.res, Transfer{Receiver: e.house, Instrument: "USDCx", Amount: d("0.5")})
		e.must(e.house, AcceptTransfer{Instruction: u.TransferInstruction})
	}
	r := replayInputs(t, e, func(r *Ledger) { _ = r.Digest() })
	if r.Digest() != e.l.Digest() {
		t.Fatal("digest read once differs from the digest read after every input")
	}
	for _, l := range []*Ledger{e.l, r} {
		if err := l.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
}
