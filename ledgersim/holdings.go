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

// smallestCovering returns the holding of at least amount that no live prepared
// transaction chose (refs) and that comes last in selection order among those: the
// smallest single holding that covers amount, or nil. It is what walking the cursor until
// the holdings fall below amount finds, at the cost of a binary search and a look at the
// few holdings just above amount: a party that received thousands of holdings larger
// than what it spends no longer pays a walk over all of them. The tail is sorted first, as
// the cursor sorts it.
func (s *holdingSet) smallestCovering(amount money.Decimal, refs map[string]int) *Holding {
	slices.SortFunc(s.tail, storageCmp)
	key := amountKey(amount)
	covers := func(e hEntry) bool {
		if e.key != noKey && key != noKey {
			return e.key >= key
		}
		return e.h.Amount.Cmp(amount) >= 0
	}
	// The array ascends in amount from index 0 (selection order runs from its end), so
	// the covering holdings are a suffix, and the first free one in it is the last in
	// selection order.
	lo, hi := 0, len(s.hs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if covers(s.hs[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	var best *hEntry
	for i := lo; i < len(s.hs); i++ {
		if refs[s.hs[i].h.CID] == 0 {
			best = &s.hs[i]
			break
		}
	}
	// The tail is sorted the same way: its first free covering entry is its last in
	// selection order. Of the two candidates the later in selection order wins.
	for i := range s.tail {
		if e := &s.tail[i]; covers(*e) && refs[e.h.CID] == 0 {
			if best == nil || best.before(*e) {
				best = e
			}
			break
		}
	}
	if best == nil {
		return nil
	}
	return best.h
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

// selectHoldings chooses spendable holdings of owner in instrument covering amount.
// Holdings chosen by other live prepared transactions are avoided while others suffice,
// so two quotes of one maker do not contend needlessly. Among the others it takes the
// smallest single holding that covers the amount, else the largest first.
func (st *state) selectHoldings(owner, instrument string, amount money.Decimal) ([]*Holding, money.Decimal, error) {
	s := st.spendable[ownerInst{owner, instrument}]
	if s == nil || s.size() == 0 {
		return nil, money.Zero, shortfallErr(Shortfall{Owner: owner, Instrument: instrument, Free: money.Zero, Needed: amount},
			"%s holds no free %s (needs %s)", owner, instrument, amount)
	}
	// Smallest single unreferenced holding that covers the amount.
	best := s.smallestCovering(amount, st.refs)
	out := st.plans.picked[:0] // kept by the one plan alive (plans.go)
	defer func() { st.plans.picked = out[:0] }()
	if best != nil {
		out = append(out, best)
		return out, best.Amount, nil
	}
	limit := st.cfg.Limits.MaxInputs
	sum := money.Zero
	take := func(referenced bool) bool {
		for cur := s.cursor(); ; {
			h := cur.next()
			if h == nil {
				break
			}
			if (st.refs[h.CID] > 0) != referenced {
				continue
			}
			if len(out) == limit {
				return false
			}
			out = append(out, h)
			sum = sum.Add(h.Amount)
			if sum.Cmp(amount) >= 0 {
				return true
			}
		}
		return false
	}
	if take(false) || take(true) {
		return out, sum, nil
	}
	if len(out) == limit {
		return nil, money.Zero, shortfallErr(Shortfall{Owner: owner, Instrument: instrument, Free: sum, Needed: amount, MaxInputs: limit},
			"%s needs more than %d holdings of %s to cover %s", owner, limit, instrument, amount)
	}
	return nil, money.Zero, shortfallErr(Shortfall{Owner: owner, Instrument: instrument, Free: sum, Needed: amount},
		"%s has %s free %s, needs %s", owner, sum, instrument, amount)
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
