package node_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// TestReplayOlderJournal: a journal whose first half a version-1 desk wrote (JSON records,
// checkpoints over the state's JSON) and whose second half a current desk wrote replays
// with every checkpoint verified, from genesis and from an old JSON snapshot alike.
func TestReplayOlderJournal(t *testing.T) {
	cfg := journalTestConfig()
	shadow, err := machine.NewDesk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	genesis, err := node.EncodeDeskGenesis(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := journal.NewMemLog(true)
	recs := [][]byte{genesis}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	v1 := func(env machine.Envelope) []byte {
		body, err := json.Marshal(env.Input)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := json.Marshal(map[string]any{"v": 1, "seq": env.Seq, "at": env.At, "kind": env.Input.Kind(), "input": json.RawMessage(body)})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	var jsonSnapSeq uint64
	var jsonSnap []byte
	add := func(version int, in machine.Input) {
		at = at.Add(1500 * time.Millisecond)
		env := machine.Envelope{Seq: uint64(len(recs) + 1), At: at, Input: in}
		if version == 1 {
			recs = append(recs, v1(env))
		} else {
			rec, err := machine.EncodeEnvelope(env)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
		machine.Apply(shadow, env)
	}
	const key = houseKey
	inputs := []machine.Input{
		machine.SocketOpened{Socket: 1, KeyHash: key},
		machine.FaucetDraw{Req: machine.Req{KeyHash: key}},
		machine.CreateRFQ{Req: machine.Req{KeyHash: key}, Direction: machine.Buy, Qty: money.MustParse("0.5"), Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{"nobody"}, TTLSeconds: 30},
		machine.Tick{},
		machine.SocketClosed{Socket: 1},
	}
	for _, version := range []int{1, 2} {
		for _, in := range inputs {
			add(version, in)
		}
		if version == 1 {
			sum, err := shadow.LegacyDigest()
			if err != nil {
				t.Fatal(err)
			}
			add(1, machine.Checkpoint{Digest: hex.EncodeToString(sum[:])})
			jsonSnapSeq = uint64(len(recs))
			if jsonSnap, err = json.Marshal(shadow); err != nil { // a snapshot as version-1 desks saved it
				t.Fatal(err)
			}
		} else {
			sum, err := shadow.Digest()
			if err != nil {
				t.Fatal(err)
			}
			add(2, machine.Checkpoint{Digest: hex.EncodeToString(sum[:])})
		}
	}
	if _, err := log.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	want, _ := shadow.Digest()

	desk, rec, err := node.ReplayDesk(log, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := desk.Digest(); got != want || rec.Checkpoints != 2 || rec.DigestMismatch != 0 {
		t.Fatalf("from genesis: %+v, digest match %v", rec, got == want)
	}

	if err := log.SaveSnapshot(jsonSnapSeq, jsonSnap); err != nil {
		t.Fatal(err)
	}
	desk, rec, err = node.ReplayDesk(log, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := desk.Digest(); got != want || rec.SnapshotSeq != jsonSnapSeq || rec.Checkpoints != 1 || rec.DigestMismatch != 0 {
		t.Fatalf("from the JSON snapshot: %+v, digest match %v", rec, got == want)
	}
}

// houseKey is the API key hash of journalTestConfig's house taker, a party without
// registration whose inputs the desk accepts.
const houseKey = "1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a7988"

// journalTestConfig is the desk configuration of the tests that write journals by hand:
// its ledger parties are made up (no ledger is involved), and its house taker can draw
// the faucet and ask for quotes with houseKey.
func journalTestConfig() machine.Config {
	cfg := machine.DefaultConfig()
	cfg.Seed, cfg.Operator, cfg.FeeParty, cfg.Reservoir = 7, "operator::1220aa", "fees::1220bb", "reservoir::1220cc"
	cfg.Instruments = []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("0.01"), RegistryID: "reg:cbtc"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("1000"), RegistryID: "reg:usdcx"},
		{Symbol: "cc", Display: "CC", Decimals: 10, USDPrice: money.MustParse("0.2"), Native: true, RegistryID: "reg:cc"},
	}
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}}
	cfg.House = []machine.HouseParty{{Hint: "house-taker", PartyID: "house-taker::1220dd", Role: machine.HouseTaker, KeyHash: houseKey}}
	return cfg
}
