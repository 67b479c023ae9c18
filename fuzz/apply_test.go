package fuzz

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// applyConfig is a small desk: two instruments and one house taker.
func applyConfig() machine.Config {
	cfg := machine.DefaultConfig()
	cfg.Seed = 1
	cfg.Operator, cfg.FeeParty, cfg.Reservoir = "operator::1220aa", "fees::1220bb", "reservoir::1220cc"
	cfg.Instruments = []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("0.1"), RegistryID: "reg:cbtc"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("100"), RegistryID: "reg:usdcx"},
	}
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}}
	sum := sha256.Sum256([]byte("house"))
	cfg.House = []machine.HouseParty{{Hint: "house", PartyID: "house::1220dd", Role: machine.HouseTaker, KeyHash: hex.EncodeToString(sum[:])}}
	return cfg
}

// applySequence draws a sequence of arbitrary inputs, commands and forged ledger results
// alike, with ids taken from what the desk emitted so far or made up, and applies them:
// Apply never panics, every reply has an HTTP status, and the state survives a snapshot.
func applySequence(t *rapid.T) {
	d, err := machine.NewDesk(applyConfig())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("house"))
	house := machine.Req{KeyHash: hex.EncodeToString(sum[:])}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string // ids and command ids the desk emitted
	pick := func(label string) string {
		if len(ids) > 0 && rapid.Bool().Draw(t, label+"Known") {
			return ids[rapid.IntRange(0, len(ids)-1).Draw(t, label)]
		}
		return rapid.StringMatching(`[a-z_0-9]{0,12}`).Draw(t, label)
	}
	amount := func(label string) money.Decimal {
		return money.MustParse(rapid.StringMatching(`[0-9]{1,6}(\.[0-9]{1,10})?`).Draw(t, label))
	}
	for seq := uint64(1); seq <= uint64(rapid.IntRange(1, 60).Draw(t, "n")); seq++ {
		var in machine.Input
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0:
			in = machine.Tick{}
			now = now.Add(time.Duration(rapid.IntRange(0, 3600).Draw(t, "dt")) * time.Second)
		case 1:
			in = machine.SocketOpened{Socket: seq, KeyHash: house.KeyHash}
		case 2:
			in = machine.CreateRFQ{Req: house, Direction: machine.Sell, Qty: amount("qty"), Base: "cbtc", Quote: "usdcx",
				InvitedMakers: []string{pick("maker")}, TTLSeconds: int64(rapid.IntRange(0, 4000).Draw(t, "ttl"))}
		case 3:
			in = machine.SubmitQuote{Req: house, RFQID: pick("rfq"), Price: amount("price")}
		case 4:
			in = machine.AcceptQuote{Req: house, QuoteID: pick("quote")}
		case 5:
			in = machine.ExecuteActions{Req: house, Entries: []machine.SignedAction{{ActionID: pick("action"), Signature: make([]byte, 64)}}, Batch: rapid.Bool().Draw(t, "batch")}
		case 6:
			res := machine.LedgerResult{CommandID: pick("command"), PreparedID: pick("prepared"), AllocationCID: pick("cid"), Hash: make([]byte, 32)}
			if rapid.Bool().Draw(t, "fails") {
				res.Failure = &machine.LedgerFailure{Category: rapid.SampledFrom([]string{machine.LedgerContention, machine.LedgerUnknownOutcome,
					machine.LedgerRejected, machine.LedgerExpired, machine.LedgerInsufficientFunds, machine.LedgerNotFound}).Draw(t, "category")}
			}
			in = res
		case 7:
			in = machine.RegisterStart{DisplayName: rapid.StringMatching(`[A-Za-z ]{0,10}`).Draw(t, "name"), PublicKey: make([]byte, 32)}
		case 8:
			in = rapid.SampledFrom([]machine.Input{machine.Checkpoint{Digest: "ab"}, machine.CheckpointMark{},
				machine.CheckpointDigest{Mark: seq, Digest: "cd"}}).Draw(t, "checkpoint")
		default:
			in = machine.Boot{}
		}
		out := machine.Apply(d, machine.Envelope{Seq: seq, At: now, Input: in})
		for _, r := range out.Replies {
			if r.Status < 200 || r.Status > 599 || (r.Err != nil && r.Err.Status != r.Status) {
				t.Fatalf("reply %+v", r)
			}
		}
		for _, c := range out.Calls {
			ids = append(ids, c.CommandID)
		}
		for _, e := range out.Events {
			if p, ok := e.Payload.(machine.RfqDTO); ok {
				ids = append(ids, p.RfqID)
			}
			if p, ok := e.Payload.(machine.SignActionDTO); ok {
				ids = append(ids, p.ID)
			}
		}
	}
	snap, err := d.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	back, err := machine.Restore(snap)
	if err != nil {
		t.Fatal(err)
	}
	d1, err1 := d.Digest()
	d2, err2 := back.Digest()
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Fatalf("the state does not survive a snapshot: %v %v", err1, err2)
	}
}

// FuzzApply drives Apply over arbitrary input sequences (see applySequence).
func FuzzApply(f *testing.F) { f.Fuzz(rapid.MakeFuzz(applySequence)) }

// TestApplySequences runs the same property with rapid's own budget in every `make test`.
func TestApplySequences(t *testing.T) { rapid.Check(t, applySequence) }
