package ledgersim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// contract is the internal form of a live contract.
type contract struct {
	kind ContractKind
	// sum is its contribution to the digest, computed lazily (summed says it is, and
	// that it is in the accumulator): see state.unsummed.
	sum    [32]byte
	summed bool
	live   bool // false once archived
	// ownerPos is the contract's place in its owner's list (ownerIndex): a holding in
	// holdingsByOwner, an allocation in allocsByOwner.
	ownerPos int
	h        *Holding
	ti       *TransferInstruction
	al       *Allocation
	pa       *Preapproval
}

type pendingOnboarding struct {
	hint    string
	pub     ed25519.PublicKey
	ob      Onboarding
	sum     [32]byte
	expires time.Time
}

type preparedRec struct {
	p        Prepared
	selected []string // the input holdings the command names, checked again at execute
	sum      [32]byte
}

type ownerInst struct{ owner, instrument string }
type legKey struct {
	settlement SettlementRef
	leg        string
}

// state is everything the digest covers. It is only touched under Ledger.mu.
type state struct {
	cfg     *Config
	counter uint64 // id counter
	offset  int64  // last update offset

	parties        map[string]*Party
	internalByHint map[string]string
	pending        map[string]*pendingOnboarding
	pendingExp     expiryHeap

	instruments     map[string]*Instrument
	instrumentOrder []string
	supply          map[string]money.Decimal

	contracts       map[string]*contract
	holdingsByOwner ownerIndex
	spendable       map[ownerInst]*holdingSet
	lockExp         expiryHeap
	inbox           map[string]map[string]struct{} // receiver → instruction cids
	outbox          map[string]map[string]struct{} // sender → instruction cids
	allocsByOwner   ownerIndex
	allocLeg        map[legKey]string
	preapprovals    map[string]string // receiver → cid
	reservoir       string            // the faucet reservoir's party id
	added           []InstrumentSpec  // instruments listed after genesis, in catalog order

	prepared map[string]*preparedRec
	prepExp  expiryHeap
	tomb     map[string]struct{}
	tombRing fifo
	// updates are the retained updates, oldest first, indexed by update id, change id
	// (act-as, command id) and prepared id (retained.go).
	updates *retainedUpdates
	// dedupShortened counts updates forgotten by count while still within the
	// deduplication window (not part of the state's digest or snapshot).
	dedupShortened uint64

	acc     digestAcc
	scratch sumScratch
	ubuf    Update      // commit's scratch update (ledger.go)
	plans   planScratch // reused plans (plans.go)
	// unsummed is a ring of the latest contracts created: a contract's digest
	// contribution is computed when it leaves the ring still live, or when the digest
	// is read (flushSums). Most contracts (change, locked holdings, allocations) are
	// archived within a trade or two and so never hashed; the accumulator plus the
	// contributions of the live contracts in the ring is always the exact digest.
	unsummed [sumWindow]*contract
	ringPos  int
}

// sumWindow is how many of the latest contracts may wait for their digest contribution.
const sumWindow = 1024

func newState(cfg *Config) *state {
	return &state{
		cfg:             cfg,
		parties:         map[string]*Party{},
		internalByHint:  map[string]string{},
		pending:         map[string]*pendingOnboarding{},
		instruments:     map[string]*Instrument{},
		supply:          map[string]money.Decimal{},
		contracts:       map[string]*contract{},
		holdingsByOwner: ownerIndex{},
		spendable:       map[ownerInst]*holdingSet{},
		inbox:           map[string]map[string]struct{}{},
		outbox:          map[string]map[string]struct{}{},
		allocsByOwner:   ownerIndex{},
		allocLeg:        map[legKey]string{},
		preapprovals:    map[string]string{},
		prepared:        map[string]*preparedRec{},
		tomb:            map[string]struct{}{},
		updates:         newRetainedUpdates(0, 0),
	}
}

// nextID returns 32 bytes derived from the seed, a domain tag and the id counter.
func (st *state) nextID(tag byte) [32]byte {
	st.counter++
	var b [17]byte
	binary.BigEndian.PutUint64(b[0:], st.cfg.Seed)
	binary.BigEndian.PutUint64(b[8:], st.counter)
	b[16] = tag
	return sha256.Sum256(b[:])
}

// hexID formats prefix + hex(raw) with a single allocation.
func hexID(prefix string, raw []byte) string {
	var buf [16 + 64]byte
	b := append(buf[:0], prefix...)
	return string(hex.AppendEncode(b, raw))
}

func (st *state) newCID() string {
	s := st.nextID('c')
	return hexID("00", s[:])
}

// newCIDAfter returns prefix + a new contract id in one string, and the id as its tail
// (one allocation for a contract id and a lock context naming it).
func (st *state) newCIDAfter(prefix string) (withPrefix, cid string) {
	s := st.nextID('c')
	withPrefix = hexID(prefix+"00", s[:])
	return withPrefix, withPrefix[len(prefix):]
}

func (st *state) newUpdateID() string {
	s := st.nextID('u')
	return hexID("1220", s[:])
}

func (st *state) newPreparedID() string {
	s := st.nextID('p')
	return hexID("prep-", s[:16])
}

// ---- sets ----

func addTo(m map[string]map[string]struct{}, k, v string) {
	s := m[k]
	if s == nil {
		s = map[string]struct{}{}
		m[k] = s
	}
	s[v] = struct{}{}
}

// ownerIndex lists the contracts of one kind per owner, in no particular order (every
// query sorts): a contract knows its place, so adding and removing are a slice append
// and a swap with the last, with no hashing of contract ids.
type ownerIndex map[string]*ownedList

type ownedList struct{ cs []*contract }

func (x ownerIndex) add(owner string, c *contract) {
	l := x[owner]
	if l == nil {
		l = &ownedList{}
		x[owner] = l
	}
	c.ownerPos = len(l.cs)
	l.cs = append(l.cs, c)
}

// remove takes c out of owner's list; an emptied list is kept (owners are parties).
func (x ownerIndex) remove(owner string, c *contract) {
	l := x[owner]
	if l == nil || c.ownerPos >= len(l.cs) || l.cs[c.ownerPos] != c {
		return
	}
	last := len(l.cs) - 1
	moved := l.cs[last]
	l.cs[c.ownerPos] = moved
	moved.ownerPos = c.ownerPos
	l.cs[last] = nil
	l.cs = l.cs[:last]
	if len(l.cs) == 0 && cap(l.cs) > 64 {
		l.cs = nil
	}
}

// has reports whether c is in owner's list.
func (x ownerIndex) has(owner string, c *contract) bool {
	l := x[owner]
	return l != nil && c.ownerPos < len(l.cs) && l.cs[c.ownerPos] == c
}

// of returns owner's contracts (read-only).
func (x ownerIndex) of(owner string) []*contract {
	if l := x[owner]; l != nil {
		return l.cs
	}
	return nil
}

// delFrom removes v from k's set. An emptied set is kept: keys are parties, and a party
// going from none to one live allocation or instruction and back is the common case.
func delFrom(m map[string]map[string]struct{}, k, v string) {
	if s := m[k]; s != nil {
		delete(s, v)
	}
}

// ---- contracts ----

func (st *state) addContract(c *contract, cid string) {
	c.live = true
	st.contracts[cid] = c
	slot := &st.unsummed[st.ringPos]
	if old := *slot; old != nil {
		st.sumContract(old)
	}
	*slot = c
	st.ringPos = (st.ringPos + 1) % sumWindow
	switch c.kind {
	case ContractHolding:
		h := c.h
		st.holdingsByOwner.add(h.Owner, c)
		if h.Lock == nil {
			st.spendableSet(h.Owner, h.Instrument).add(h)
		} else if !h.Lock.Expires.IsZero() {
			st.lockExp.push(expiry{at: h.Lock.Expires, id: cid})
		}
	default:
		st.indexParties(c, cid)
	}
}

// indexParties files a live contract other than a holding where its parties find it: a
// transfer instruction in its receiver's inbox and its sender's outbox, an allocation
// under its owner and its settlement leg, a preapproval under its receiver.
func (st *state) indexParties(c *contract, cid string) {
	switch c.kind {
	case ContractTransferInstruction:
		addTo(st.inbox, c.ti.Receiver, cid)
		addTo(st.outbox, c.ti.Sender, cid)
	case ContractAllocation:
		st.allocsByOwner.add(c.al.Owner, c)
		st.allocLeg[legKey{c.al.Settlement, c.al.LegID}] = cid
	case ContractPreapproval:
		st.preapprovals[c.pa.Receiver] = cid
	}
}

func (st *state) archive(cid string) {
	c := st.contracts[cid]
	if c == nil {
		return
	}
	delete(st.contracts, cid)
	c.live = false
	if c.summed {
		st.acc.sub(c.sum)
	}
	switch c.kind {
	case ContractHolding:
		h := c.h
		st.holdingsByOwner.remove(h.Owner, c)
		if s := st.spendable[ownerInst{h.Owner, h.Instrument}]; s != nil {
			s.remove(h)
			if s.size() == 0 && cap(s.hs) > 16 {
				// Kept (an owner spends its last holding and gets change back in the
				// same update), but without a large array.
				s.hs = nil
			}
		}
	case ContractTransferInstruction:
		delFrom(st.inbox, c.ti.Receiver, cid)
		delFrom(st.outbox, c.ti.Sender, cid)
	case ContractAllocation:
		st.allocsByOwner.remove(c.al.Owner, c)
		delete(st.allocLeg, legKey{c.al.Settlement, c.al.LegID})
	case ContractPreapproval:
		delete(st.preapprovals, c.pa.Receiver)
	}
}

// sumContract adds a live contract's digest contribution to the accumulator, once.
func (st *state) sumContract(c *contract) {
	if !c.live || c.summed {
		return
	}
	c.sum = contractSum(&st.scratch, c)
	c.summed = true
	st.acc.add(c.sum)
}

// flushSums brings every pending contribution into the accumulator, which is then the
// exact digest of the state. It runs before the accumulator is read (Digest, Snapshot,
// CheckInvariants); callers holding only the read lock serialize it with sumMu.
func (st *state) flushSums() {
	for i, c := range st.unsummed {
		if c != nil {
			st.sumContract(c)
			st.unsummed[i] = nil
		}
	}
}

func (st *state) spendableSet(owner, instrument string) *holdingSet {
	k := ownerInst{owner, instrument}
	s := st.spendable[k]
	if s == nil {
		s = &holdingSet{}
		st.spendable[k] = s
	}
	return s
}

func (st *state) holding(cid string) *Holding {
	if c := st.contracts[cid]; c != nil && c.kind == ContractHolding {
		return c.h
	}
	return nil
}

// advance applies everything the passage of time to now does: lapsed locks make their
// holdings spendable, expired prepared transactions and onboardings are forgotten. It
// runs only inside recorded inputs, at the input's time, so replay repeats it exactly.
func (st *state) advance(now time.Time) {
	for st.lockExp.Len() > 0 && !now.Before(st.lockExp.peek().at) {
		e := st.lockExp.pop()
		if h := st.holding(e.id); h != nil && h.Lock != nil && h.Lock.Expires.Equal(e.at) {
			st.spendableSet(h.Owner, h.Instrument).insert(h)
		}
	}
	for st.prepExp.Len() > 0 && !now.Before(st.prepExp.peek().at) {
		e := st.prepExp.pop()
		if r := st.prepared[e.id]; r != nil {
			st.dropPrepared(r)
			st.tombstone(e.id)
		}
	}
	for st.pendingExp.Len() > 0 && !now.Before(st.pendingExp.peek().at) {
		e := st.pendingExp.pop()
		if p := st.pending[e.id]; p != nil && p.expires.Equal(e.at) {
			st.acc.sub(p.sum)
			delete(st.pending, e.id)
		}
	}
	// Updates past the deduplication window (the ring is in record-time order).
	if w := st.cfg.DedupWindow; w > 0 {
		for st.updates.len() > 0 && !now.Before(st.updates.oldest().recordTime().Add(w)) {
			st.forget()
		}
	}
}

func (st *state) dropPrepared(r *preparedRec) {
	delete(st.prepared, r.p.ID)
	st.acc.sub(r.sum)
}

func (st *state) tombstone(id string) {
	st.tomb[id] = struct{}{}
	st.tombRing.push(id)
	for st.tombRing.len() > st.cfg.Limits.MaxPrepared {
		delete(st.tomb, st.tombRing.pop())
	}
}

// retain stores a copy of an update for Update() and deduplication, forgetting the
// oldest beyond the limit.
func (st *state) retain(u *Update) {
	st.index(u, updateSum(&st.scratch, u))
	for st.updates.len() > st.cfg.Limits.MaxRetainedUpdates {
		old := st.updates.oldest()
		if w := st.cfg.DedupWindow; w > 0 && u.RecordTime.Before(old.recordTime().Add(w)) {
			st.dedupShortened++
		}
		st.forget()
	}
}

// forget drops the oldest retained update from the digest and the indexes.
func (st *state) forget() {
	old := st.updates.pop()
	st.acc.sub(old.sum)
}

// index adds a retained update, whose digest contribution is sum, to the digest, the
// indexes and the ring (retain, Restore).
func (st *state) index(u *Update, sum [32]byte) {
	st.acc.add(sum)
	st.updates.push(u, sum)
}

// doneUpdate returns the retained update of actAs's command id, if it took effect.
func (st *state) doneUpdate(actAs, commandID string) (*Update, bool) {
	seq, ok := st.updates.byChange(actAs, commandID)
	if !ok {
		return nil, false
	}
	u := st.updates.update(seq)
	return &u, true
}

// ---- helpers ----

// expiry is an entry of an expiry heap, ordered by time then id.
type expiry struct {
	at time.Time
	id string
}

// expiryHeap is a binary min-heap of expiries (typed, so a push boxes nothing).
type expiryHeap []expiry

func (h expiryHeap) less(i, j int) bool {
	if c := h[i].at.Compare(h[j].at); c != 0 {
		return c < 0
	}
	return h[i].id < h[j].id
}

// Len is the number of entries.
func (h expiryHeap) Len() int { return len(h) }

func (h *expiryHeap) push(e expiry) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *expiryHeap) pop() expiry {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q[n] = expiry{}
	q = q[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

func (h expiryHeap) peek() expiry { return h[0] }

// fifo is a bounded-use queue of strings.
type fifo struct {
	items []string
	head  int
}

func (f *fifo) push(s string) { f.items = append(f.items, s) }
func (f *fifo) len() int      { return len(f.items) - f.head }
func (f *fifo) pop() string {
	s := f.items[f.head]
	f.items[f.head] = ""
	f.head++
	if f.head > 1024 && f.head*2 > len(f.items) {
		f.items = append([]string(nil), f.items[f.head:]...)
		f.head = 0
	}
	return s
}
