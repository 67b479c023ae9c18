package ledgersim

import (
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// holdingSet keeps the spendable holdings of one (owner, instrument) in selection order
// (holdingLess: by amount, largest first, then by contract id), so coin selection never
// sorts and never depends on map order. The array holds them back to front (the first
// in selection order last), so that spending the largest holding and getting change
// back move only the end of the array, whatever small holdings pile up before it.
// New holdings wait in a short unsorted tail and are merged in batches
// (settle), so that a party receiving one holding per trade (the fee party) pays a
// binary search per holding and one pass over the array per batch, instead of moving the
// array on every insert.
type holdingSet struct {
	hs   []hEntry // sorted back to front: hs[len-1] comes first in selection order
	tail []hEntry // added since the last merge, unsorted, at most tailMax
}

// hEntry is a holding of a set with its amount as an integer key (amountKey) and a
// prefix of its contract id as an integer (cidKey), so that most comparisons are
// integer ones that never leave the array: holdings of equal amounts (a fee party's
// receipts) are ordered by contract id, and comparing the ids themselves would load
// each holding and its id's bytes.
type hEntry struct {
	key int64
	cid uint64
	h   *Holding
}

const tailMax = 32

// noKey marks an amount without an integer key: compared as decimals.
const noKey = math.MinInt64

// amountKey is amount × 10^10 (exact, as amounts carry at most 10 fractional digits)
// when it fits an int64, else noKey. It reads the canonical binary form of the
// decimal (money/binary.go): a uvarint header (zig-zag exponent << 2, big-coefficient
// and negative flags) and, for a small coefficient, the coefficient as a uvarint.
func amountKey(d money.Decimal) int64 {
	var buf [24]byte
	b, err := d.AppendBinary(buf[:0])
	if err != nil {
		return noKey
	}
	h, n := binary.Uvarint(b)
	if n <= 0 || h&3 != 0 { // negative or big coefficient
		return noKey
	}
	u := h >> 2
	exp := int64(u>>1) ^ -int64(u&1)
	coeff, m := binary.Uvarint(b[n:])
	if m <= 0 || coeff > math.MaxInt64 {
		return noKey
	}
	scale := exp + 10
	if scale < 0 || scale > 18 {
		return noKey
	}
	k := int64(coeff)
	for range scale {
		if k > math.MaxInt64/10 {
			return noKey
		}
		k *= 10
	}
	return k
}

// cidKey is bytes 2..9 of a contract id that starts with "00" (as every contract id
// the ledger makes does: "00" + 64 hex digits) read as a big-endian integer, else 0 (no
// key). Among ids with a key, a smaller key means a smaller id and equal keys say
// nothing: the ids are then compared as strings. A key is never 0 (s[2] is not 0).
func cidKey(s string) uint64 {
	if len(s) < 10 || s[0] != '0' || s[1] != '0' || s[2] == 0 {
		return 0
	}
	var k uint64
	for i := 2; i < 10; i++ {
		k = k<<8 | uint64(s[i])
	}
	return k
}

func entryOf(h *Holding) hEntry { return hEntry{key: amountKey(h.Amount), cid: cidKey(h.CID), h: h} }

// before reports whether a comes before b in selection order (holdingLess).
func (a hEntry) before(b hEntry) bool {
	if a.key == noKey || b.key == noKey {
		return holdingLess(a.h, b.h)
	}
	if a.key != b.key {
		return a.key > b.key
	}
	if a.cid != b.cid && a.cid != 0 && b.cid != 0 {
		return a.cid < b.cid
	}
	return a.h.CID < b.h.CID
}

func holdingLess(a, b *Holding) bool {
	if c := a.Amount.Cmp(b.Amount); c != 0 {
		return c > 0
	}
	return a.CID < b.CID
}

func holdingCmp(a, b *Holding) int {
	if holdingLess(a, b) {
		return -1
	}
	if holdingLess(b, a) {
		return 1
	}
	return 0
}

// storageCmp orders entries as the array holds them: back to front.
func storageCmp(a, b hEntry) int {
	switch {
	case b.before(a):
		return -1
	case a.before(b):
		return 1
	}
	return 0
}

// size is the number of holdings in the set.
func (s *holdingSet) size() int { return len(s.hs) + len(s.tail) }

// search returns where e is or belongs in the sorted part hs[:n].
func (s *holdingSet) search(e hEntry, n int) int {
	// sort.Search(n, func(i) { !e.before(s.hs[i]) }), without the closure.
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e.before(s.hs[m]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// contains reports whether the set holds h (read-only: safe under the read lock).
func (s *holdingSet) contains(h *Holding) bool {
	for _, t := range s.tail {
		if t.h == h {
			return true
		}
	}
	i := s.search(entryOf(h), len(s.hs))
	return i < len(s.hs) && s.hs[i].h == h
}

// add adds a holding the set cannot hold yet (a new contract).
func (s *holdingSet) add(h *Holding) {
	s.tail = append(s.tail, entryOf(h))
	if len(s.tail) >= tailMax {
		s.settle()
	}
}

// insert adds h unless the set holds it already.
func (s *holdingSet) insert(h *Holding) {
	for _, t := range s.tail {
		if t.h.CID == h.CID {
			return
		}
	}
	e := entryOf(h)
	if i := s.search(e, len(s.hs)); i < len(s.hs) && s.hs[i].h.CID == h.CID {
		return
	}
	s.tail = append(s.tail, e)
	if len(s.tail) >= tailMax {
		s.settle()
	}
}

func (s *holdingSet) remove(h *Holding) {
	for i, t := range s.tail {
		if t.h.CID == h.CID {
			last := len(s.tail) - 1
			s.tail[i] = s.tail[last]
			s.tail[last] = hEntry{}
			s.tail = s.tail[:last]
			return
		}
	}
	i := s.search(entryOf(h), len(s.hs))
	if i < len(s.hs) && s.hs[i].h.CID == h.CID {
		copy(s.hs[i:], s.hs[i+1:])
		s.hs[len(s.hs)-1] = hEntry{}
		s.hs = s.hs[:len(s.hs)-1]
	}
}

// settle merges the tail into the sorted array: the tail is sorted, then placed from the
// back, each element after a binary search among the elements not yet moved, so every
// element of the array moves at most once.
func (s *holdingSet) settle() {
	k := len(s.tail)
	if k == 0 {
		return
	}
	slices.SortFunc(s.tail, storageCmp)
	n := len(s.hs)
	s.hs = slices.Grow(s.hs, k)[:n+k]
	i := n // s.hs[:i] are the old elements not yet moved
	for j := k - 1; j >= 0; j-- {
		t := s.tail[j]
		p := s.search(t, i)
		copy(s.hs[p+j+1:], s.hs[p:i])
		s.hs[p+j] = t
		i = p
	}
	clear(s.tail)
	s.tail = s.tail[:0]
}

// cursor walks a set in selection order (largest first) without merging the tail into
// the array: it walks the array and the sorted tail together from their ends, so that
// coin selection, which mostly looks at the few largest holdings, moves nothing.
type cursor struct {
	s    *holdingSet
	i, j int
}

func (s *holdingSet) cursor() cursor {
	slices.SortFunc(s.tail, storageCmp)
	return cursor{s: s, i: len(s.hs) - 1, j: len(s.tail) - 1}
}

// next returns the next holding in selection order, or nil after the last.
func (c *cursor) next() *Holding {
	s := c.s
	switch {
	case c.i < 0 && c.j < 0:
		return nil
	case c.j < 0 || (c.i >= 0 && s.hs[c.i].before(s.tail[c.j])):
		c.i--
		return s.hs[c.i+1].h
	default:
		c.j--
		return s.tail[c.j+1].h
	}
}

// holdings returns every holding of the set, array then tail (read-only).
func (s *holdingSet) holdings() []*Holding {
	out := make([]*Holding, 0, s.size())
	for _, e := range s.hs {
		out = append(out, e.h)
	}
	for _, e := range s.tail {
		out = append(out, e.h)
	}
	return out
}

// namedHoldings checks the input holdings a command names (Allocate.Inputs,
// Transfer.Inputs), as Canton's token standard checks inputHoldingCids at submission:
// none named, more than Limits.MaxInputs or one named twice is invalid; one that is not a
// live holding is not found; one of another owner or instrument, or locked at now, is
// invalid; together they must cover amount, else insufficient funds. Nothing is
// reserved: two prepared transactions may name the same holding, and the second to
// execute meets ErrInactive.
func (st *state) namedHoldings(cids []string, owner, instrument string, amount money.Decimal, now time.Time) ([]*Holding, money.Decimal, error) {
	limit := st.cfg.Limits.MaxInputs
	switch {
	case len(cids) == 0:
		return nil, money.Zero, newErr(CategoryInvalid, "", "no input holdings named (inputHoldingCids) to cover %s %s", amount, instrument)
	case len(cids) > limit:
		return nil, money.Zero, shortfallErr(Shortfall{Owner: owner, Instrument: instrument, Free: money.Zero, Needed: amount, MaxInputs: limit},
			"%d input holdings named, more than the %d one command may spend", len(cids), limit)
	}
	out := st.plans.picked[:0]
	defer func() { st.plans.picked = out[:0] }()
	sum := money.Zero
	for i, cid := range cids {
		if slices.Contains(cids[:i], cid) {
			return nil, money.Zero, newErr(CategoryInvalid, "", "input holding %s named twice", truncate(cid))
		}
		h := st.holding(cid)
		switch {
		case h == nil:
			return nil, money.Zero, newErr(CategoryNotFound, "", "no live holding %s", truncate(cid))
		case h.Owner != owner:
			return nil, money.Zero, newErr(CategoryInvalid, "", "input holding %s is not %s's", truncate(cid), owner)
		case h.Instrument != instrument:
			return nil, money.Zero, newErr(CategoryInvalid, "", "input holding %s is %s, not %s", truncate(cid), h.Instrument, instrument)
		case !h.FreeAt(now):
			return nil, money.Zero, newErr(CategoryInvalid, "", "input holding %s is locked", truncate(cid))
		}
		out = append(out, h)
		sum = sum.Add(h.Amount)
	}
	if sum.Cmp(amount) < 0 {
		return nil, money.Zero, shortfallErr(Shortfall{Owner: owner, Instrument: instrument, Free: sum, Needed: amount},
			"the input holdings named hold %s %s, %s needed", sum, instrument, amount)
	}
	return out, sum, nil
}

// fixedHoldings re-checks the holdings a prepared transaction chose: each must still be
// live, the owner's, of the instrument and spendable at now; else ErrInactive (on Canton
// a holding that was spent or locked since is archived: locking replaces it by a locked one).
func (st *state) fixedHoldings(cids []string, owner, instrument string, amount money.Decimal, now time.Time) ([]*Holding, money.Decimal, error) {
	out := st.plans.picked[:0]
	defer func() { st.plans.picked = out[:0] }()
	sum := money.Zero
	for _, cid := range cids {
		h := st.holding(cid)
		if h == nil || h.Owner != owner || h.Instrument != instrument || !h.FreeAt(now) {
			return nil, money.Zero, newErr(CategoryInactive, "", "input holding %s was spent or locked since prepare", cid)
		}
		out = append(out, h)
		sum = sum.Add(h.Amount)
	}
	if sum.Cmp(amount) < 0 {
		return nil, money.Zero, newErr(CategoryInactive, "", "input holdings no longer cover %s", amount)
	}
	return out, sum, nil
}

// view returns a copy of h with its catalog symbols filled in.
func (st *state) viewHolding(h *Holding) Holding {
	c := *h
	c.Lock = h.Lock.clone()
	c.Symbol, c.DisplaySymbol = st.symbols(h.Instrument)
	return c
}

// symbols returns an instrument's catalog and display symbols, or its raw registry id
// twice when it left the catalog (or was never in it).
func (st *state) symbols(instrument string) (string, string) {
	if in := st.instruments[instrument]; in != nil && in.Listed {
		return in.Symbol, in.DisplaySymbol
	}
	return instrument, instrument
}
