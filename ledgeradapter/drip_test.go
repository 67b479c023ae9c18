package ledgeradapter_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// dripped sends party 10 USDCx from the reservoir and prepares party's accept of the
// transfer; it returns both answers, for the caller to check.
func dripped(t *testing.T, a *ledgeradapter.Adapter, ps ledgeradapter.Parties, party string) (drip, prep machine.LedgerResult) {
	t.Helper()
	drip = do(t, a, machine.LedgerCall{CommandID: "drip", Op: machine.OpSubmit, ActAs: ps.Reservoir,
		Command: &machine.Command{Transfer: &machine.TransferCmd{Sender: ps.Reservoir, Receiver: party, Instrument: "usdcx-registry", Amount: money.MustParse("10")}}})
	prep = do(t, a, machine.LedgerCall{CommandID: "accept", Op: machine.OpPrepare, ActAs: party,
		Command: &machine.Command{AcceptTransfer: &machine.AcceptTransferCmd{InstructionCID: drip.InstructionCID}}})
	return drip, prep
}

// signedExecute is the call, with command id id, that executes the prepared transaction
// of p as party, signed with party's key priv.
func signedExecute(id, party string, priv ed25519.PrivateKey, p machine.LedgerResult) machine.LedgerCall {
	return machine.LedgerCall{CommandID: id, Op: machine.OpExecute, ActAs: party, PreparedID: p.PreparedID, Prepared: p.Prepared, Signature: ed25519.Sign(priv, p.Hash)}
}
