package ledgersim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func d(s string) money.Decimal { return money.MustParse(s) }

// testKey derives a deterministic Ed25519 key for a test party.
func testKey(name string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte("ledgersim test key " + name))
	return ed25519.NewKeyFromSeed(s[:])
}

func testConfig(profile Profile, clk Clock) Config {
	return Config{
		Profile: profile,
		Clock:   clk,
		Seed:    42,
		Instruments: []InstrumentSpec{
			{ID: "Amulet", Admin: "dso", Symbol: "cc", DisplaySymbol: "CC", Decimals: 10, Native: true},
			{ID: "USDCx", Admin: "circle", Symbol: "usdcx", DisplaySymbol: "USDCx", Decimals: 6}, // as the desk's catalog: trades still carry 10 digits
			{ID: "CBTC", Admin: "bitsafe", Symbol: "cbtc", DisplaySymbol: "cBTC", Decimals: 8},
		},
		Parties: []GenesisParty{
			{Hint: "operator"},
			{Hint: "fees", Preapproval: true},
			{Hint: "reservoir", Funding: []Funding{
				{Instrument: "Amulet", Amount: d("1000000")},
				{Instrument: "USDCx", Amount: d("1000000")},
				{Instrument: "CBTC", Amount: d("100")},
			}},
			{Hint: "house", Funding: []Funding{{Instrument: "USDCx", Amount: d("50000")}, {Instrument: "CBTC", Amount: d("2")}}, Preapproval: true},
		},
		Faucet: FaucetConfig{Reservoir: "reservoir", Drip: []Funding{
			{Instrument: "Amulet", Amount: d("100")},
			{Instrument: "USDCx", Amount: d("1000")},
			{Instrument: "CBTC", Amount: d("0.5")},
		}},
	}
}

type env struct {
	t        testing.TB
	l        *Ledger
	clk      *ManualClock
	keys     map[string]ed25519.PrivateKey
	op, fees string
	res      string
	house    string
	inputs   []Input
	seq      int
	// livePrep is the live prepared transaction of snapshotScenario.
	livePrep string
	// liveBlob is its serialized form, which the restored ledger must accept too.
	liveBlob []byte
}

func newEnv(t testing.TB, profile Profile) *env {
	t.Helper()
	return newEnvTuned(t, profile, nil)
}

// newEnvTuned is newEnv with the configuration adjusted by tune (nil: as it is); the env
// records the ledger's inputs.
func newEnvTuned(t testing.TB, profile Profile, tune func(*Config)) *env {
	t.Helper()
	e := &env{t: t, clk: NewManualClock(t0), keys: map[string]ed25519.PrivateKey{}}
	cfg := testConfig(profile, e.clk)
	cfg.Recorder = func(in Input) { e.inputs = append(e.inputs, in) }
	if tune != nil {
		tune(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.l = l
	e.op, _ = l.InternalParty("operator")
	e.fees, _ = l.InternalParty("fees")
	e.res, _ = l.InternalParty("reservoir")
	e.house, _ = l.InternalParty("house")
	return e
}

func (e *env) cmdID() string {
	e.seq++
	return fmt.Sprintf("cmd-%d", e.seq)
}

// external onboards an external party (with a preapproval where the profile needs one).
func (e *env) external(hint string) string {
	e.t.Helper()
	id := e.onboard(hint)
	if _, err := e.run(id, CreatePreapproval{}, e.cmdID()); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// onboard onboards an external party, without a preapproval.
func (e *env) onboard(hint string) string {
	e.t.Helper()
	k := testKey(hint)
	ob, err := e.l.OnboardExternal(hint, k.Public().(ed25519.PublicKey))
	if err != nil {
		e.t.Fatal(err)
	}
	sigs := make([][]byte, len(ob.Topology))
	for i, tx := range ob.Topology {
		sigs[i] = ed25519.Sign(k, tx.Hash)
	}
	if err := e.l.CompleteOnboarding(ob.PartyID, sigs); err != nil {
		e.t.Fatal(err)
	}
	e.keys[ob.PartyID] = k
	return ob.PartyID
}

// run executes cmd for party: prepare, sign and execute for an external party, submit
// for an internal one.
// A spending command that names no input holdings gets the party's free ones, largest
// first (named).
func (e *env) run(party string, cmd Command, cmdID string) (Update, error) {
	cmd = named(e.l, party, cmd)
	k, ok := e.keys[party]
	if !ok {
		return e.l.Submit(party, cmd, cmdID)
	}
	p, err := e.l.Prepare(party, cmd, cmdID)
	if err != nil {
		return Update{}, err
	}
	return e.l.Execute(p.Blob, ed25519.Sign(k, p.Hash[:]))
}

func (e *env) must(party string, cmd Command) Update {
	e.t.Helper()
	u, err := e.run(party, cmd, e.cmdID())
	if err != nil {
		e.t.Fatalf("%s %s: %v", party, cmd.Kind(), err)
	}
	return u
}

// fund sends amount of instrument from the reservoir to party and accepts it.
func (e *env) fund(party, instrument, amount string) {
	e.t.Helper()
	u := e.must(e.res, Transfer{Receiver: party, Instrument: instrument, Amount: d(amount)})
	e.must(party, AcceptTransfer{Instruction: u.TransferInstruction})
}

func (e *env) free(party, instrument string) money.Decimal {
	for _, b := range e.l.Balances(party) {
		if b.Instrument == instrument {
			return b.Free
		}
	}
	return money.Zero
}

func (e *env) locked(party, instrument string) money.Decimal {
	for _, b := range e.l.Balances(party) {
		if b.Instrument == instrument {
			return b.Locked
		}
	}
	return money.Zero
}

func (e *env) wantFree(party, instrument, want string) {
	e.t.Helper()
	if got := e.free(party, instrument); !got.Equal(d(want)) {
		e.t.Errorf("free %s of %s = %s, want %s", instrument, party, got, want)
	}
}

func (e *env) check() {
	e.t.Helper()
	if err := e.l.CheckInvariants(); err != nil {
		e.t.Fatal(err)
	}
}

func wantCat(t testing.TB, err error, c Category) {
	t.Helper()
	if c == CategoryNone {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want %s error, got nil", c)
	}
	if got := CategoryOf(err); got != c {
		t.Fatalf("want %s error, got %s: %v", c, got, err)
	}
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("error is not *Error: %v", err)
	}
}
