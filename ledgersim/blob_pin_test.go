package ledgersim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// blobPin is one prepared transaction's serialized form, pinned by its digest.
type blobPin struct {
	Kind   CommandKind `json:"kind"`
	Inputs int         `json:"inputs"`
	Len    int         `json:"len"`
	SHA256 string      `json:"sha256"`
}

// pinScenario prepares (and executes) one transaction of every kind a party signs, with
// zero, one and several input holdings, and returns the blobs in order.
func pinScenario(t *testing.T) []blobPin {
	t.Helper()
	e := newEnv(t, ProfileTestnet)
	alice, bob := e.external("alice"), e.external("bob")
	for range 3 {
		e.fund(alice, "USDCx", "100")
	}
	e.fund(alice, "CBTC", "0.5")
	var pins []blobPin
	do := func(party string, cmd Command) Update {
		t.Helper()
		p, err := e.l.Prepare(party, cmd, e.cmdID())
		if err != nil {
			t.Fatalf("prepare %s: %v", cmd.Kind(), err)
		}
		s := sha256.Sum256(p.Blob)
		pins = append(pins, blobPin{Kind: cmd.Kind(), Inputs: len(p.Inputs), Len: len(p.Blob), SHA256: hex.EncodeToString(s[:])})
		u, err := e.l.Execute(p.Blob, ed25519.Sign(e.keys[party], p.Hash[:]))
		if err != nil {
			t.Fatalf("execute %s: %v", cmd.Kind(), err)
		}
		return u
	}
	ref := SettlementRef{Executor: e.op, ID: "pin-1"}
	free := e.l.FreeHoldings(alice, "USDCx")
	cids := make([]string, len(free))
	for i, h := range free {
		cids[i] = h.CID
	}
	send := do(alice, Allocate{Settlement: ref, LegID: "send", Side: SideSend, Instrument: "USDCx", Amount: d("250.5"),
		AllocateBefore: t0.Add(time.Minute), SettleBefore: t0.Add(time.Hour), Inputs: cids})
	recv := do(bob, Allocate{Settlement: ref, LegID: "recv", Side: SideReceive, Instrument: "USDCx", Amount: d("250.5"),
		SettleBefore: t0.Add(time.Hour)})
	do(alice, WithdrawAllocation{Allocation: send.Allocation})
	do(bob, CancelAllocation{Allocation: recv.Allocation})
	tr := named(e.l, alice, Transfer{Receiver: bob, Instrument: "CBTC", Amount: d("0.125"), ExecuteBefore: t0.Add(time.Hour), Reason: "pin"})
	u := do(alice, tr)
	do(bob, RejectTransfer{Instruction: u.TransferInstruction})
	u = do(alice, named(e.l, alice, Transfer{Receiver: bob, Instrument: "USDCx", Amount: d("7")}))
	do(alice, WithdrawTransfer{Instruction: u.TransferInstruction})
	u = do(alice, named(e.l, alice, Transfer{Receiver: bob, Instrument: "USDCx", Amount: d("3.25")}))
	do(bob, AcceptTransfer{Instruction: u.TransferInstruction})
	carol := e.onboard("carol")
	do(carol, CreatePreapproval{})
	e.check()
	return pins
}

// TestPreparedBlobBytesPinned: the serialized prepared transactions of a fixed scenario
// (every kind a party signs; no, one and three inputs) keep their exact bytes. The blob's
// bytes reach the desk's journal, snapshots and the replay traces, and a blob handed out
// before a change must still execute after it: a change of these bytes needs a new
// blobVersion (with the old one still accepted), and -update.
func TestPreparedBlobBytesPinned(t *testing.T) {
	got := pinScenario(t)
	path := filepath.Join("testdata", "blob-pins.json")
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	var want []blobPin
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d blobs, %d pinned", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("blob %d changed (a new layout needs a new blobVersion):\n got %s\nwant %s", i, fmtPin(got[i]), fmtPin(want[i]))
		}
	}
}

func fmtPin(p blobPin) string {
	return fmt.Sprintf("%s inputs=%d len=%d sha256=%s", p.Kind, p.Inputs, p.Len, p.SHA256)
}
