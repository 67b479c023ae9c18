package ledgersim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json")

type goldenVectors struct {
	PublicKey         string            `json:"publicKey"`
	PartyID           string            `json:"partyId"`
	TopologyHashes    []string          `json:"topologyHashes"`
	PreparedEncodings map[string]string `json:"preparedEncodings"`
	PreparedHashes    map[string]string `json:"preparedHashes"`
	InternalPartyID   string            `json:"internalPartyId"`
}

// goldenPrepared are fixed prepared transactions, one per command kind.
func goldenPrepared() map[string]Prepared {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	ref := SettlementRef{Executor: "operator::1220aa", ID: "t_1"}
	base := Prepared{ID: "prep-1", ActAs: "alice::1220bb", CommandID: "cmd-1", PreparedAt: at, ExpiresAt: at.Add(10 * time.Minute), Inputs: []string{"0011", "0022"}}
	cmds := map[string]Command{
		"allocate":            Allocate{Settlement: ref, LegID: "maker-quote", Side: SideSend, Instrument: "USDCx", Amount: d("123.456789"), AllocateBefore: at.Add(time.Minute), SettleBefore: at.Add(11 * time.Minute)},
		"cancel-allocation":   CancelAllocation{Allocation: "0033"},
		"withdraw-allocation": WithdrawAllocation{Allocation: "0033"},
		"settle":              Settle{Settlement: ref, Legs: []Leg{{Sender: "a", Receiver: "b", Instrument: "CBTC", Amount: d("0.1")}}, Allocations: []string{"0044", "0055"}},
		"transfer":            Transfer{Receiver: "bob::1220cc", Instrument: "Amulet", Amount: d("100"), Reason: "withdraw"},
		"accept-transfer":     AcceptTransfer{Instruction: "0066"},
		"reject-transfer":     RejectTransfer{Instruction: "0066"},
		"withdraw-transfer":   WithdrawTransfer{Instruction: "0066"},
		"create-preapproval":  CreatePreapproval{},
		// The desk's operator on behalf of a hosted party (a Submit, never signed by a
		// party; its encoding is fixed all the same).
		"create-preapproval-receiver": CreatePreapproval{Receiver: "bob::1220cc"},
	}
	out := map[string]Prepared{}
	for k, c := range cmds {
		p := base
		p.Command = c
		out[k] = p
	}
	return out
}

func computeGolden() goldenVectors {
	k := testKey("golden")
	pub := k.Public().(ed25519.PublicKey)
	g := goldenVectors{
		PublicKey:         hex.EncodeToString(pub),
		PartyID:           PartyID("golden-maker", pub),
		PreparedEncodings: map[string]string{},
		PreparedHashes:    map[string]string{},
	}
	for _, tx := range OnboardingTopology("ledgersim", "golden-maker", pub) {
		g.TopologyHashes = append(g.TopologyHashes, hex.EncodeToString(tx.Hash))
	}
	for name, p := range goldenPrepared() {
		h := HashPrepared("ledgersim", p)
		g.PreparedEncodings[name] = hex.EncodeToString(EncodePrepared("ledgersim", p))
		g.PreparedHashes[name] = hex.EncodeToString(h[:])
	}
	l, err := New(Config{Clock: NewManualClock(t0), Seed: 1, Parties: []GenesisParty{{Hint: "operator"}}})
	if err != nil {
		panic(err)
	}
	g.InternalPartyID, _ = l.InternalParty("operator")
	return g
}

func TestGoldenVectors(t *testing.T) {
	path := filepath.Join("testdata", "golden.json")
	got := computeGolden()
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	var want goldenVectors
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("golden vectors changed (encoding change? bump EncodingVersion and rerun with -update):\n got %s\nwant %s", gb, wb)
	}
	// Independent check of the documented formulas for one vector each.
	pub, _ := hex.DecodeString(want.PublicKey)
	if want.PartyID != "golden-maker::"+Fingerprint(pub) {
		t.Fatal("party id formula")
	}
	if len(want.TopologyHashes) != 3 || want.TopologyHashes[0][:4] != "1220" || len(want.TopologyHashes[0]) != 68 {
		t.Fatal("topology hash shape")
	}
	for name, enc := range want.PreparedEncodings {
		raw, _ := hex.DecodeString(enc)
		sum := sha256.Sum256(append([]byte{0, 0, 0, 48}, raw...))
		if hex.EncodeToString(sum[:]) != want.PreparedHashes[name] {
			t.Fatalf("%s: hash is not SHA-256(int32BE(48) ‖ encoding)", name)
		}
	}
}
