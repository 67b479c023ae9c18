// Package model is an independent reference model of the desk's contract (SPEC.md, its
// completing decisions and the documented choices of docs/architecture.md), run in lockstep
// with the desk by the simulator: every input the desk applied is fed to the model with the
// desk's outputs, and every read with its answer, and the model says whether the contract
// allows them.
//
// It is written from the documents, not from machine/: plain maps and structs, the money
// formulas with math/big, decimals formatted by itself. It uses machine's data types only
// as vocabulary (inputs, outputs, DTOs, queries, the genesis configuration). Where the
// contract allows several answers (a ledger effect in flight, a deadline reached but not
// yet ticked) it accepts the allowed set and says why in a comment.
//
// What the model cannot know (a party's free holdings, whether the ledger accepts a
// command) it does not guess: a reply that waits on the ledger is judged against the set
// of answers the contract allows for a ledger outcome, and its body is checked in full.
package model

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Divergence is a disagreement between the desk and the contract, in the contract's terms.
type Divergence struct {
	Seq  uint64    // the desk input (0 for a read)
	At   time.Time // when
	What string    // the input or read, e.g. "POST /rfq by taker-1-abc123"
	Msg  string    // what the contract says and what the desk did
}

// Error renders the divergence.
func (d *Divergence) Error() string {
	if d.Seq != 0 {
		return fmt.Sprintf("contract divergence at input %d (%s, %s): %s", d.Seq, d.What, d.At.UTC().Format(time.RFC3339Nano), d.Msg)
	}
	return fmt.Sprintf("contract divergence on read (%s, %s): %s", d.What, d.At.UTC().Format(time.RFC3339Nano), d.Msg)
}

// Party is a party the model knows: a house party from the genesis, or a registered maker.
type Party struct {
	ID         string          `json:"id"`
	Hint       string          `json:"hint"`
	DeskSigned bool            `json:"deskSigned"`
	PublicKey  []byte          `json:"publicKey,omitempty"`
	Keys       map[string]bool `json:"keys"`    // valid API key hashes
	Online     int             `json:"online"`  // open sockets
	Trades     []string        `json:"trades"`  // settled trades, oldest first, bounded
	History    []History       `json:"history"` // history rows, oldest first, bounded
}

// History is a history row the contract determines.
type History struct {
	ID         string `json:"id"`
	RFQ        string `json:"rfq"`
	Kind       string `json:"kind"`
	QuoteCount int    `json:"quoteCount"`
	BestPrice  string `json:"bestPrice"` // "" when none
	Maker      string `json:"maker"`
	At         time.Time
}

// Socket is an open stream socket.
type Socket struct {
	Party   string `json:"party"`
	KeyHash string `json:"keyHash"`
	// CancelOnDisconnect is the socket's mark (?cancelOnDisconnect=true).
	CancelOnDisconnect bool `json:"cancelOnDisconnect,omitempty"`
}

// Registration is a pending register/start.
type Registration struct {
	PartyID   string    `json:"partyId"`
	Hint      string    `json:"hint"`
	PublicKey []byte    `json:"publicKey"`
	Expires   time.Time `json:"expires"`
	Completed bool      `json:"completed"`
}

// RFQ is an RFQ as the contract sees it.
type RFQ struct {
	ID        string    `json:"id"`
	Taker     string    `json:"taker"`
	Sell      bool      `json:"sell"`
	Qty       string    `json:"qty"`
	Base      string    `json:"base"`
	Quote     string    `json:"quote"`
	Deadline  time.Time `json:"deadline"`
	Invited   []string  `json:"invited"` // party ids
	FeeBps    int       `json:"feeBps"`
	Open      bool      `json:"open"`
	ClosedAt  time.Time `json:"closedAt"`
	Quotes    []string  `json:"quotes"`    // recorded quotes, oldest first
	Trades    []string  `json:"trades"`    // trades accepted on it
	Settling  string    `json:"settling"`  // the trade settling on it, once its accept was answered
	Accepting uint64    `json:"accepting"` // the accept request waiting on the ledger
	Declines  []Decline `json:"declines"`  // the invited makers' declines, by first decline
	// Notional is qty × usdPrice(base) at creation, truncated at 10 digits: what a fill on
	// it counts toward maker protection (protection.go).
	Notional string `json:"notional,omitempty"`
	// Forget is when the desk forgets the closed RFQ: its ten minutes of readability,
	// rounded up to the next whole second (docs/architecture.md, Deadlines and Ticks).
	Forget time.Time `json:"forget"`
}

// Quote is a recorded quote (its POST /maker/quotes answered 200).
type Quote struct {
	ID         string    `json:"id"`
	RFQ        string    `json:"rfq"`
	Maker      string    `json:"maker"`
	Price      string    `json:"price"`
	ValidUntil time.Time `json:"validUntil"`
	CreatedAt  time.Time `json:"createdAt"` // when its POST /maker/quotes came
	Status     string    `json:"status"`    // pending, won, lost, revoked, cancelled, expired
	Anchored   bool      `json:"anchored"`
	Settling   bool      `json:"settling"`
	Anchors    []string  `json:"anchors"`
	Actions    []string  `json:"actions"`
	// Unsigned is set when one of its actions left the queue never signed: its allocations
	// can no longer all land, so it must never anchor.
	Unsigned bool `json:"unsigned"`
	// RevokeReason is "disconnect" for a quote revoked by cancel-on-disconnect.
	RevokeReason string `json:"revokeReason,omitempty"`
}

// Trade is an accepted trade (its accept answered 202).
type Trade struct {
	ID        string    `json:"id"`
	RFQ       string    `json:"rfq"`
	Quote     string    `json:"quote"`
	Taker     string    `json:"taker"`
	Maker     string    `json:"maker"`
	Status    string    `json:"status"` // settling, settled, failed
	Fee       string    `json:"fee"`
	SettledAt time.Time `json:"settledAt"`
	UpdateID  string    `json:"updateId"`
	Receipts  []string  `json:"receipts"`
}

// Action is a sign action waiting on a party's signature.
type Action struct {
	ID        string    `json:"id"`
	Party     string    `json:"party"`
	Purpose   string    `json:"purpose"`
	Hash      []byte    `json:"hash"`
	TradeID   string    `json:"tradeId"`
	ExpiresAt time.Time `json:"expiresAt"`
	Executed  bool      `json:"executed"` // an execute of it was accepted (executed or in flight)
	// Executing: an execute of it may be with the ledger (sent and not answered, or answered
	// in flight). The desk leaves such an action to the ledger's answer even past its expiry
	// (machine.expireAction; docs/api.md: 503 RETRY_LATER, "the desk keeps asking"), and a
	// lost answer is only re-issued by a restart, so its expiry is not judged at a Tick
	// until a definite answer says it is not executing.
	Executing bool   `json:"executing"`
	Symbol    string `json:"symbol"` // transfer-out: the instrument, when known
	Quote     string `json:"quote"`  // the quote whose allocation it is, if any
}

// Request is a command the desk has not answered yet.
type Request struct {
	Seq   uint64    `json:"seq"`
	Kind  string    `json:"kind"`
	Party string    `json:"party"`
	At    time.Time `json:"at"`
	// quote.submit
	RFQ        string    `json:"rfq,omitempty"`
	Price      string    `json:"price,omitempty"`
	ValidUntil time.Time `json:"validUntil"`
	// quote.accept
	Quote string `json:"quote,omitempty"`
	// register.start
	Hint      string `json:"hint,omitempty"`
	PublicKey []byte `json:"publicKey,omitempty"`
	// register.complete, key.rotate
	Registration string `json:"registration,omitempty"`
	NewKeyHash   string `json:"newKeyHash,omitempty"`
	// withdraw
	Symbol string `json:"symbol,omitempty"`
	// tx.execute
	Entries []string `json:"entries,omitempty"`
	Mine    []bool   `json:"mine,omitempty"` // entry i named a pending action of the caller then
	Batch   bool     `json:"batch,omitempty"`
}

// Challenge is a key-rotation challenge handed out.
type Challenge struct {
	Party   string    `json:"party"`
	Expires time.Time `json:"expires"`
}

// state is everything the model remembers; it is what MarshalBinary encodes.
type state struct {
	Cfg        machine.Config           `json:"cfg"`
	Now        time.Time                `json:"now"`
	Parties    map[string]*Party        `json:"parties"`
	Keys       map[string]string        `json:"keys"`  // key hash → party id
	Hints      map[string]string        `json:"hints"` // hint → party id
	Sockets    map[uint64]*Socket       `json:"sockets"`
	Regs       map[string]*Registration `json:"regs"`
	Challenges map[string]*Challenge    `json:"challenges"`
	RFQs       map[string]*RFQ          `json:"rfqs"`
	Quotes     map[string]*Quote        `json:"quotes"`
	Trades     map[string]*Trade        `json:"trades"`
	Actions    map[string]*Action       `json:"actions"`
	Reqs       map[uint64]*Request      `json:"reqs"`
	Withdraws  map[string]uint64        `json:"withdraws"` // party|symbol → the withdraw request preparing it
	// OrphanWithdraws are party|symbol slots whose withdraw request a restart undid: the
	// desk carries the prepare on under its command id and answers nobody, so the slot may
	// still be taken (a second withdrawal refused) until a withdrawal there goes through.
	OrphanWithdraws map[string]bool `json:"orphanWithdraws,omitempty"`
	// FaucetNext is when each party may draw the faucet again: set when a draw goes out
	// (SPEC: the cooldown starts only when something went out; the desk holds it while the
	// transfers are out), dropped when the draw's answer sent nothing. A restart that cuts
	// a draw off keeps it: nobody waits for the answer that could have dropped it.
	FaucetNext map[string]time.Time `json:"faucetNext,omitempty"`
	// MaybeKeys are the new keys of register/complete requests a restart orphaned: the
	// desk carries the registration on without an answer, so the key may start working at
	// any time. Key hash → registration id; the first answer that accepts it confirms it.
	MaybeKeys map[string]string `json:"maybeKeys"`
	// Due is every deadline the model watches, a min-heap by time: a Tick pops those at or
	// before it and checks that each fired (or still applies), so that a Tick costs what
	// is due rather than a scan of the state.
	Due dueHeap `json:"due"`
	// Scores are the makers' scorecard facts, by maker party id, oldest first (scorecard.go).
	Scores map[string][]ScoreFact `json:"scores,omitempty"`
	// Protections are the makers' protections (protection.go), by party id.
	Protections map[string]*Protection `json:"protections,omitempty"`
	// Streams are every party's frame numbering and retained window (resume.go).
	Streams map[string]*Stream `json:"streams,omitempty"`
	// Idem are the Idempotency-Key records by scope and key, IdemBySeq the unanswered
	// ones by request (idempotency.go).
	Idem      map[string]map[string]*IdemRec `json:"idem,omitempty"`
	IdemBySeq map[uint64]string              `json:"idemBySeq,omitempty"`
	// Tickets are the unredeemed stream tickets by hash (streamticket.go).
	Tickets map[string]*Ticket `json:"tickets,omitempty"`
}

// Model is the reference model. It is not safe for concurrent use.
type Model struct {
	st state
	// derived from st.Cfg, rebuilt by init
	tiers  []tier
	usd    map[string]*big.Rat // symbol → USD price
	minUSD *big.Rat
	byReg  map[string]int // registry id → catalog index
	// byParty indexes the retained RFQs by taker and invited maker (derived from st.RFQs,
	// built on first use, kept in step where an RFQ is created or forgotten).
	byParty map[string]map[string]*RFQ
	// statsGen counts the changes to each maker's scorecard facts; statsRows caches the
	// makerStats rows and statsScratch is their latencies' buffer (scorecard_stats.go).
	statsGen     map[string]uint64
	statsRows    map[string]statsRow
	statsScratch []int64
}

// rfqsOf returns the retained RFQs the party takes or is invited to.
func (m *Model) rfqsOf(party string) map[string]*RFQ {
	if m.byParty == nil {
		m.byParty = map[string]map[string]*RFQ{}
		for _, r := range m.st.RFQs {
			m.index(r, true)
		}
	}
	return m.byParty[party]
}

// index files (or, add false, unfiles) an RFQ under its parties.
func (m *Model) index(r *RFQ, add bool) {
	if m.byParty == nil {
		return
	}
	for _, p := range append([]string{r.Taker}, r.Invited...) {
		if add {
			if m.byParty[p] == nil {
				m.byParty[p] = map[string]*RFQ{}
			}
			m.byParty[p][r.ID] = r
		} else {
			delete(m.byParty[p], r.ID)
		}
	}
}

// New builds the model at the desk's genesis configuration.
func New(cfg machine.Config) (*Model, error) {
	m := &Model{st: state{
		Cfg: cfg, Parties: map[string]*Party{}, Keys: map[string]string{}, Hints: map[string]string{},
		Sockets: map[uint64]*Socket{}, Regs: map[string]*Registration{}, Challenges: map[string]*Challenge{},
		RFQs: map[string]*RFQ{}, Quotes: map[string]*Quote{}, Trades: map[string]*Trade{},
		Actions: map[string]*Action{}, Reqs: map[uint64]*Request{}, Withdraws: map[string]uint64{},
		MaybeKeys: map[string]string{}, OrphanWithdraws: map[string]bool{},
		FaucetNext: map[string]time.Time{},
	}}
	if err := m.init(); err != nil {
		return nil, err
	}
	for _, h := range cfg.House {
		if h.PartyID == "" || h.Hint == "" {
			return nil, fmt.Errorf("model: house party %+q lacks an id or a hint", h.Hint)
		}
		p := &Party{ID: h.PartyID, Hint: h.Hint, DeskSigned: true, Keys: map[string]bool{}}
		if h.KeyHash != "" {
			p.Keys[h.KeyHash] = true
			m.st.Keys[h.KeyHash] = p.ID
		}
		m.st.Parties[p.ID] = p
		m.st.Hints[p.Hint] = p.ID
	}
	return m, nil
}

// init derives the parsed configuration.
func (m *Model) init() error {
	cfg := &m.st.Cfg
	m.tiers = nil
	for _, t := range cfg.FeeTiers {
		v, err := parseDec(t.MinNotionalUSD.String())
		if err != nil {
			return fmt.Errorf("model: fee tier: %w", err)
		}
		m.tiers = append(m.tiers, tier{Min: v, Bps: t.FeeBps})
	}
	m.usd = map[string]*big.Rat{}
	m.byReg = map[string]int{}
	for i, in := range cfg.Instruments {
		v, err := parseDec(in.USDPrice.String())
		if err != nil {
			return fmt.Errorf("model: USD price of %s: %w", in.Symbol, err)
		}
		m.usd[in.Symbol] = v
		m.byReg[in.RegistryID] = i
	}
	v, err := parseDec(cfg.MinNotionalUSD.String())
	if err != nil {
		return fmt.Errorf("model: minimum notional: %w", err)
	}
	m.minUSD = v
	return nil
}

// Clone returns an independent copy: a deep copy of the state, by hand, as the simulator
// takes one at every durable point it may roll back to (encoding and decoding the state
// cost ten times more). Byte slices the model never changes in place (keys, hashes) and
// the configuration are shared.
func (m *Model) Clone() *Model {
	st := m.st
	st.Parties = cloneMap(m.st.Parties, func(p *Party) *Party {
		c := *p
		c.Keys = cloneMap(p.Keys, func(b bool) bool { return b })
		c.Trades = slices.Clone(p.Trades)
		c.History = slices.Clone(p.History)
		return &c
	})
	same := func(s string) string { return s }
	st.Keys = cloneMap(m.st.Keys, same)
	st.Hints = cloneMap(m.st.Hints, same)
	st.MaybeKeys = cloneMap(m.st.MaybeKeys, same)
	st.Sockets = make(map[uint64]*Socket, len(m.st.Sockets))
	for k, v := range m.st.Sockets {
		c := *v
		st.Sockets[k] = &c
	}
	st.Regs = cloneMap(m.st.Regs, func(r *Registration) *Registration { c := *r; return &c })
	st.Challenges = cloneMap(m.st.Challenges, func(r *Challenge) *Challenge { c := *r; return &c })
	st.RFQs = cloneMap(m.st.RFQs, func(r *RFQ) *RFQ {
		c := *r
		c.Quotes, c.Trades, c.Declines = slices.Clone(r.Quotes), slices.Clone(r.Trades), slices.Clone(r.Declines)
		return &c
	})
	st.Quotes = cloneMap(m.st.Quotes, func(q *Quote) *Quote {
		c := *q
		c.Anchors, c.Actions = slices.Clone(q.Anchors), slices.Clone(q.Actions)
		return &c
	})
	st.Trades = cloneMap(m.st.Trades, func(t *Trade) *Trade { c := *t; return &c })
	st.Actions = cloneMap(m.st.Actions, func(x *Action) *Action { c := *x; return &c })
	st.Reqs = make(map[uint64]*Request, len(m.st.Reqs))
	for k, v := range m.st.Reqs {
		c := *v
		c.Entries, c.Mine = slices.Clone(v.Entries), slices.Clone(v.Mine)
		st.Reqs[k] = &c
	}
	st.Withdraws = make(map[string]uint64, len(m.st.Withdraws))
	for k, v := range m.st.Withdraws {
		st.Withdraws[k] = v
	}
	st.OrphanWithdraws = make(map[string]bool, len(m.st.OrphanWithdraws))
	for k, v := range m.st.OrphanWithdraws {
		st.OrphanWithdraws[k] = v
	}
	st.FaucetNext = maps.Clone(m.st.FaucetNext)
	st.Due = slices.Clone(m.st.Due)
	st.Scores = cloneScores(m.st.Scores)
	st.Protections = cloneProtections(m.st.Protections)
	st.Streams = cloneStreams(m.st.Streams)
	st.Idem = make(map[string]map[string]*IdemRec, len(m.st.Idem))
	for scope, recs := range m.st.Idem {
		st.Idem[scope] = cloneMap(recs, func(r *IdemRec) *IdemRec { c := *r; return &c })
	}
	st.IdemBySeq = maps.Clone(m.st.IdemBySeq)
	st.Tickets = cloneMap(m.st.Tickets, func(t *Ticket) *Ticket { c := *t; return &c })
	return &Model{st: st, tiers: m.tiers, usd: m.usd, minUSD: m.minUSD, byReg: m.byReg}
}

func cloneMap[V any](src map[string]V, cp func(V) V) map[string]V {
	out := make(map[string]V, len(src))
	for k, v := range src {
		out[k] = cp(v)
	}
	return out
}

// MarshalBinary encodes the model's state.
func (m *Model) MarshalBinary() ([]byte, error) {
	b, err := json.Marshal(&m.st)
	if err != nil {
		return nil, fmt.Errorf("model: encode: %w", err)
	}
	return b, nil
}

// Restore decodes a model MarshalBinary encoded.
func Restore(b []byte) (*Model, error) {
	m := &Model{}
	if err := json.Unmarshal(b, &m.st); err != nil {
		return nil, fmt.Errorf("model: decode: %w", err)
	}
	for _, mp := range []bool{m.st.Parties == nil, m.st.RFQs == nil, m.st.Reqs == nil} {
		if mp {
			return nil, fmt.Errorf("model: decode: state lacks its tables")
		}
	}
	if m.st.OrphanWithdraws == nil {
		m.st.OrphanWithdraws = map[string]bool{}
	}
	if m.st.MaybeKeys == nil {
		m.st.MaybeKeys = map[string]string{}
	}
	if m.st.FaucetNext == nil {
		m.st.FaucetNext = map[string]time.Time{}
	}
	if err := m.init(); err != nil {
		return nil, err
	}
	return m, nil
}

// ---- helpers ----

func (m *Model) party(id string) *Party { return m.st.Parties[id] }

func (m *Model) byKey(keyHash string) *Party {
	if keyHash == "" {
		return nil
	}
	return m.st.Parties[m.st.Keys[keyHash]]
}

// resolve is byKey for an answer that shows whether the desk took the key (accepted):
// a key of an orphaned registration becomes its party's once the desk accepts it.
func (m *Model) resolve(keyHash string, accepted bool) *Party {
	if p := m.byKey(keyHash); p != nil || !accepted {
		return p
	}
	regID, ok := m.st.MaybeKeys[keyHash]
	if !ok {
		return nil
	}
	reg := m.st.Regs[regID]
	if reg == nil {
		return nil
	}
	delete(m.st.MaybeKeys, keyHash)
	reg.Completed = true
	p := &Party{ID: reg.PartyID, Hint: reg.Hint, PublicKey: reg.PublicKey, Keys: map[string]bool{keyHash: true}}
	m.st.Parties[p.ID] = p
	m.st.Hints[p.Hint] = p.ID
	m.st.Keys[keyHash] = p.ID
	return p
}

func (m *Model) hintOf(id string) string {
	if p := m.st.Parties[id]; p != nil {
		return p.Hint
	}
	return id
}

// instrument resolves a client's symbol: the catalog symbol in any case, else a display
// form that names exactly one instrument (SPEC, Rules on identifiers).
func (m *Model) instrument(sym string) (machine.Instrument, bool) {
	lower := strings.ToLower(sym)
	for _, in := range m.st.Cfg.Instruments {
		if in.Symbol == lower {
			return in, true
		}
	}
	n, found := 0, machine.Instrument{}
	for _, in := range m.st.Cfg.Instruments {
		if strings.ToLower(in.Display) == lower {
			n++
			found = in
		}
	}
	return found, n == 1
}

// wireTime is the wire's form of a timestamp, written here from SPEC (ISO-8601 UTC,
// milliseconds as the desk documents).
func wireTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// sameTime compares a wire timestamp with the model's at the wire's millisecond.
func sameTime(a machine.WireTime, b time.Time) bool {
	return time.Time(a).Truncate(time.Millisecond).Equal(b.Truncate(time.Millisecond))
}

func decStr(d interface{ String() string }) string { return d.String() }

func sortedStrings(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

// housekeepingAt rounds a forget-only deadline up to the next whole second, as
// docs/architecture.md documents.
func housekeepingAt(t time.Time) time.Time {
	if r := t.Truncate(time.Second); r.Before(t) {
		return r.Add(time.Second)
	}
	return t
}

func appendBounded[T any](s []T, v T, limit int) []T {
	s = append(s, v)
	if limit > 0 && len(s) > limit {
		s = append([]T(nil), s[len(s)-limit:]...)
	}
	return s
}

// Deadline kinds the model watches.
const (
	dueRFQ    = "rfq.deadline"
	dueForget = "rfq.forget"
	dueQuote  = "quote.validUntil"
	dueAction = "action.expiry"
	dueChal   = "challenge"
)

// Due is one deadline: when, what kind, which entity.
type Due struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	ID   string    `json:"id"`
}

// dueHeap orders deadlines by time, then kind and id (a total order: a Tick's checks run
// in the same order on every replay).
type dueHeap []Due

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if !h[i].At.Equal(h[j].At) {
		return h[i].At.Before(h[j].At)
	}
	if h[i].Kind != h[j].Kind {
		return h[i].Kind < h[j].Kind
	}
	return h[i].ID < h[j].ID
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push adds an element (heap.Interface).
func (h *dueHeap) Push(x any) { *h = append(*h, x.(Due)) }

// Pop removes the last element (heap.Interface).
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// watch adds a deadline.
func (m *Model) watch(at time.Time, kind, id string) {
	heap.Push(&m.st.Due, Due{At: at, Kind: kind, ID: id})
}
