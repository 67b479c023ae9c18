package machine

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// t0 is the start of every scripted test.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// testConfig is a small catalog: cbtc at 100000 USD, usdcx at 1 USD, with a 25 bps base tier.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Seed = 42
	cfg.Operator = "operator::1220aa"
	cfg.FeeParty = "fees::1220bb"
	cfg.Reservoir = "reservoir::1220cc"
	cfg.Instruments = []Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("0.01"), RegistryID: "reg:cbtc"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("1000"), RegistryID: "reg:usdcx"},
		{Symbol: "cc", Display: "CC", Decimals: 10, USDPrice: money.MustParse("0.2"), Native: true, RegistryID: "reg:cc"},
	}
	cfg.FeeTiers = []FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}, {MinNotionalUSD: money.MustParse("100000"), FeeBps: 10}}
	cfg.House = []HouseParty{{Hint: "house-taker", PartyID: "house-taker::1220dd", Role: HouseTaker, KeyHash: keyHash("house-key")}}
	return cfg
}

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// fakeLedger answers ledger calls the way ledgersim would, without holdings: onboarding with
// real signature checks, prepares with a hash per command, executes that verify the party's
// signature. Failures are scripted with failNext.
type fakeLedger struct {
	keys     map[string]ed25519.PublicKey // party id → key
	topo     map[string][]byte            // party id → topology hash
	prepared map[string]preparedTx
	failures []scriptedFailure
	n        int
	// noBlob answers prepares with a prepared id only, as ledgers did before they
	// serialized the prepared transaction (the benchmark's "before").
	noBlob bool
	// offset counts the effects, as a ledger's offsets do; every answer reports it.
	offset int64
	// coins, when set, holds the free holdings of the parties whose coin selection a test
	// follows (coinsel_test.go), by party and registry id.
	coins map[string][]fakeCoin
}

type preparedTx struct {
	actAs  string
	hash   []byte
	cmd    *Command
	inputs []string // the input holdings it names (coinsel_test.go)
}

type scriptedFailure struct {
	match    func(LedgerCall) bool
	category string
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{keys: map[string]ed25519.PublicKey{}, topo: map[string][]byte{}, prepared: map[string]preparedTx{}}
}

// failNext makes the next call that matches fail with category.
func (f *fakeLedger) failNext(category string, match func(LedgerCall) bool) {
	f.failures = append(f.failures, scriptedFailure{match: match, category: category})
}

func (f *fakeLedger) cid() string {
	f.n++
	return fmt.Sprintf("00%04x", f.n)
}

func (f *fakeLedger) answer(c LedgerCall, now time.Time) LedgerResult {
	res := f.answerAt(c, now)
	if res.Failure == nil {
		res.Offset = f.offset
	}
	return res
}

func (f *fakeLedger) answerAt(c LedgerCall, now time.Time) LedgerResult {
	res := LedgerResult{CommandID: c.CommandID}
	for i, s := range f.failures {
		if s.match(c) {
			f.failures = append(f.failures[:i], f.failures[i+1:]...)
			res.Failure = &LedgerFailure{Category: s.category, Message: "scripted " + s.category}
			return res
		}
	}
	switch c.Op {
	case OpOnboard:
		// Canton's key fingerprint: SHA-256 over the hash purpose 12 (4 bytes, big-endian)
		// and the raw key.
		fp := sha256.Sum256(append([]byte{0, 0, 0, 12}, c.PublicKey...))
		res.PartyID = c.Hint + "::1220" + hex.EncodeToString(fp[:])
		h := sha256.Sum256([]byte("topology:" + res.PartyID))
		hash := append([]byte{0x12, 0x20}, h[:]...)
		f.keys[res.PartyID] = ed25519.PublicKey(c.PublicKey)
		f.topo[res.PartyID] = hash
		res.Topology = []TopologyTx{{Hash: hash, Description: "party to key mapping"}}
	case OpCompleteOnboarding:
		key := f.keys[c.PartyID]
		if len(c.Signatures) != 1 || !ed25519.Verify(key, f.topo[c.PartyID], c.Signatures[0]) {
			res.Failure = &LedgerFailure{Category: LedgerBadSignature, Message: "bad topology signature"}
		}
	case OpPrepare:
		if !f.selectCoins(c, &res) {
			break
		}
		h := sha256.Sum256([]byte("prepared:" + c.CommandID))
		res.PreparedID = "prep-" + c.CommandID
		res.Hash = h[:]
		res.ExpiresAt = now.Add(10 * time.Minute)
		if !f.noBlob {
			res.Prepared = fakeBlob(res.PreparedID, h[:])
		}
		f.prepared[res.PreparedID] = preparedTx{actAs: c.ActAs, hash: h[:], cmd: c.Command, inputs: res.Inputs}
	case OpExecute:
		p, ok := f.prepared[c.PreparedID]
		if !ok {
			res.Failure = &LedgerFailure{Category: LedgerNotFound, Message: "no such prepared transaction"}
			break
		}
		if !f.noBlob && !bytes.Equal(c.Prepared, fakeBlob(c.PreparedID, p.hash)) {
			// As the ledger: the execute hands back the blob the prepare answered.
			res.Failure = &LedgerFailure{Category: LedgerRejected, Message: "not the prepared transaction's blob"}
			break
		}
		if !ed25519.Verify(f.keys[p.actAs], p.hash, c.Signature) {
			res.Failure = &LedgerFailure{Category: LedgerBadSignature, Message: "bad signature"}
			break
		}
		if !f.spendCoins(p, &res) {
			break
		}
		f.effect(p.cmd, &res)
	case OpSubmit:
		f.effect(c.Command, &res)
	}
	return res
}

// fakeBlob is the fake ledger's serialized prepared transaction: the id and hash, padded to
// an allocation's size (about 6 KB on ledgersim).
func fakeBlob(id string, hash []byte) []byte {
	b := append([]byte("blob:"+id+":"), hash...)
	return append(b, bytes.Repeat([]byte{0xb1}, 6<<10-len(b))...)
}

func (f *fakeLedger) effect(cmd *Command, res *LedgerResult) {
	f.offset++
	res.UpdateID = "1220" + f.cid()
	switch {
	case cmd.Allocate != nil:
		res.AllocationCID = f.cid()
	case cmd.Transfer != nil:
		res.InstructionCID = f.cid()
	case cmd.Settle != nil:
		for range cmd.Settle.Legs {
			res.Receipts = append(res.Receipts, f.cid())
		}
	}
}

// harness drives a Desk through inputs as the loop would, answering ledger calls with the
// fake ledger (at once when auto is set, otherwise when the test says so).
type harness struct {
	t       tb
	d       *Desk
	now     time.Time
	seq     uint64
	ledger  *fakeLedger
	auto    bool
	queued  []LedgerCall // calls not answered yet (manual mode)
	events  []Event      // every event, in order
	replies map[uint64]Reply
	closes  []SocketClose
	socket  uint64
	keys    map[string]ed25519.PrivateKey // party id → key
	// log, when not nil, records every envelope applied (for the benchmarks' replays).
	log *[]Envelope
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, testConfig())
}

// tb is what the harness needs of a test: *testing.T, or a rapid.T wrapped by rapidTB.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newHarnessWith(t tb, cfg Config) *harness {
	t.Helper()
	d, err := NewDesk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, d: d, now: t0, ledger: newFakeLedger(), auto: true,
		replies: map[uint64]Reply{}, keys: map[string]ed25519.PrivateKey{}}
}

// apply feeds one input and then, in auto mode, every ledger answer it leads to.
func (h *harness) apply(in Input) uint64 {
	h.t.Helper()
	h.seq++
	seq := h.seq
	h.collect(h.applyEnvelope(Envelope{Seq: seq, At: h.now, Input: in}))
	if h.auto {
		h.drain()
	}
	return seq
}

func (h *harness) collect(out Outputs) {
	for _, r := range out.Replies {
		if _, dup := h.replies[r.Seq]; dup {
			h.t.Fatalf("request %d answered twice", r.Seq)
		}
		h.replies[r.Seq] = r
	}
	h.events = append(h.events, out.Events...)
	h.closes = append(h.closes, out.Closes...)
	h.queued = append(h.queued, out.Calls...)
}

// answer feeds the fake ledger's answer to one call.
func (h *harness) answer(c LedgerCall) {
	h.seq++
	h.collect(h.applyEnvelope(Envelope{Seq: h.seq, At: h.now, Input: h.ledger.answer(c, h.now)}))
}

// applyEnvelope applies one envelope, recording it when the harness keeps a log.
func (h *harness) applyEnvelope(e Envelope) Outputs {
	if h.log != nil {
		*h.log = append(*h.log, e)
	}
	return Apply(h.d, e)
}

// flush answers every queued call (manual mode), including calls those answers cause.
func (h *harness) flush() { h.drain() }

// drain is flush that returns the calls it answered, in the order sent.
func (h *harness) drain() []LedgerCall {
	var sent []LedgerCall
	for len(h.queued) > 0 {
		c := h.queued[0]
		h.queued = h.queued[1:]
		sent = append(sent, c)
		h.answer(c)
	}
	return sent
}

// advance moves the clock and ticks.
func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.apply(Tick{})
}

// reply returns the answer to request seq, failing the test if there is none yet.
func (h *harness) reply(seq uint64) Reply {
	h.t.Helper()
	r, ok := h.replies[seq]
	if !ok {
		h.t.Fatalf("request %d has no reply yet", seq)
	}
	return r
}

// ok returns the body of a successful answer of the given status.
func (h *harness) ok(seq uint64, status int) any {
	h.t.Helper()
	r := h.reply(seq)
	if r.Err != nil || r.Status != status {
		h.t.Fatalf("request %d: got %d %+v, want %d", seq, r.Status, r.Err, status)
	}
	return r.Body
}

// refused asserts that request seq was refused with status and code.
func (h *harness) refused(seq uint64, status int, code string) {
	h.t.Helper()
	r := h.reply(seq)
	if r.Err == nil || r.Status != status || r.Err.Code != code {
		h.t.Fatalf("request %d: got %d %+v, want %d %q", seq, r.Status, r.Err, status, code)
	}
}

// register runs the whole self-registration of a maker and opens its stream; it returns
// the party id and the API key.
func (h *harness) register(name string) (string, string) {
	h.t.Helper()
	pub, priv, _ := ed25519.GenerateKey(deterministicReader(name))
	start := h.ok(h.apply(RegisterStart{DisplayName: name, PublicKey: pub}), 200).(RegisterStartDTO)
	sigs := make([][]byte, len(start.Topology))
	for i, tx := range start.Topology {
		sigs[i] = ed25519.Sign(priv, tx.Hash)
	}
	key := "mk_" + name
	done := h.ok(h.apply(RegisterComplete{RegistrationID: start.RegistrationID, Signatures: sigs, NewKeyHash: keyHash(key)}), 200).(RegisterCompleteDTO)
	h.keys[done.PartyID] = priv
	return done.PartyID, key
}

// connect opens a stream socket with key and returns its id.
func (h *harness) connect(key string) uint64 {
	h.socket++
	h.apply(SocketOpened{Socket: h.socket, KeyHash: keyHash(key)})
	return h.socket
}

// sign signs every given action with the party's key and executes them in one batch.
func (h *harness) sign(party, key string, actions []SignActionDTO) uint64 {
	h.t.Helper()
	entries := make([]SignedAction, len(actions))
	for i, x := range actions {
		entries[i] = SignedAction{ActionID: x.ID, Signature: ed25519.Sign(h.keys[party], x.Hash)}
	}
	return h.apply(ExecuteActions{Req: Req{KeyHash: keyHash(key)}, Entries: entries, Batch: true})
}

// eventsFor returns the types of the events sent to party since index from.
func (h *harness) eventsFor(party string, from int) []string {
	var out []string
	for _, e := range h.events[from:] {
		if e.Party == party {
			out = append(out, e.Type)
		}
	}
	return out
}

// read runs a query as the party with key.
func (h *harness) read(key string, q Query) Reply {
	return Read(h.d, h.now, keyHash(key), q)
}

// deterministicReader gives ed25519.GenerateKey a reproducible seed from a name.
type deterministicReader string

func (r deterministicReader) Read(p []byte) (int, error) {
	seed := sha256.Sum256([]byte(r))
	for i := range p {
		p[i] = seed[i%32]
	}
	return len(p), nil
}

// mustJSON renders v for comparisons.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func joined(s []string) string { return strings.Join(s, ",") }
