package ledgersim

import (
	"time"

	"github.com/deskco/rfqdesk/money"
)

// plan is a command interpreted against the state: everything validated, every value
// computed. commit cannot fail; it only assigns ids and moves contracts.
type plan interface {
	// inputs are every contract the command consumes: referenced contracts, then the
	// holdings chosen by coin selection.
	inputs() []string
	// chosen are the holdings chosen by coin selection.
	chosen() []string
	commit(t *tx)
}

// checker interprets commands. With fixed set it re-checks a prepared transaction at
// execution: a missing input contract is inactive, and the input holdings named at
// prepare are checked again.
type checker struct {
	st       *state
	actAs    string
	now      time.Time
	fixed    bool
	selected []string
}

func (c *checker) check(cmd Command) (plan, error) {
	switch v := cmd.(type) {
	case Allocate:
		return c.allocate(v)
	case CancelAllocation:
		return c.releaseAllocation(v.Allocation, false)
	case WithdrawAllocation:
		return c.releaseAllocation(v.Allocation, true)
	case Settle:
		return c.settle(v)
	case Transfer:
		return c.transfer(v)
	case AcceptTransfer:
		return c.acceptTransfer(v)
	case RejectTransfer:
		return c.endTransfer(v.Instruction, false)
	case WithdrawTransfer:
		return c.endTransfer(v.Instruction, true)
	case CreatePreapproval:
		return c.preapproval(v)
	}
	return nil, newErr(CategoryInvalid, "", "unknown command %T", cmd)
}

// missing is the error for a referenced contract that is not live.
func (c *checker) missing(what, cid string) error {
	if c.fixed {
		return newErr(CategoryInactive, "", "%s %s was archived since prepare", what, cid)
	}
	return newErr(CategoryNotFound, "", "no live %s %s", what, cid)
}

func (c *checker) instrument(id string) (*Instrument, error) {
	in := c.st.instruments[id]
	if in == nil {
		return nil, newErr(CategoryNotFound, "", "unknown instrument %q", id)
	}
	return in, nil
}

func (c *checker) party(id, role string) error {
	if _, ok := c.st.parties[id]; !ok {
		return newErr(CategoryNotFound, "", "unknown %s party %q", role, id)
	}
	return nil
}

// delivery checks what a movement delivers (a settlement leg, a transfer): a known
// receiver, a known instrument and an amount it can carry; it returns the instrument.
func (c *checker) delivery(receiver, instrument string, amount money.Decimal) (*Instrument, error) {
	if err := c.party(receiver, "receiver"); err != nil {
		return nil, err
	}
	in, err := c.instrument(instrument)
	if err != nil {
		return nil, err
	}
	return in, checkAmount(in, amount)
}

// checkAmount validates an amount of an instrument: positive, with at most
// money.MaxFractionDigits fractional digits whatever the instrument's Decimals (catalog
// metadata for rendering, SPEC.md; a trade's amounts carry up to 10 digits).
func checkAmount(in *Instrument, a money.Decimal) error {
	if a.Sign() <= 0 {
		return newErr(CategoryInvalid, "", "amount %s of %s must be positive", a, in.ID)
	}
	if fractionDigits(a) > money.MaxFractionDigits {
		return newErr(CategoryInvalid, "", "amount %s of %s has more than %d fractional digits", a, in.ID, money.MaxFractionDigits)
	}
	return nil
}

// pick checks the input holdings a command names (named): at execution the ones its
// prepare accepted are re-checked (spent since: ErrInactive).
func (c *checker) pick(owner, instrument string, amount money.Decimal, named []string) ([]*Holding, money.Decimal, error) {
	if c.fixed {
		return c.st.fixedHoldings(c.selected, owner, instrument, amount, c.now)
	}
	return c.st.namedHoldings(named, owner, instrument, amount, c.now)
}

func cidsOf(hs []*Holding) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.CID
	}
	return out
}

func validID(s string) bool { return s != "" && len(s) <= maxIDLen }

// tx collects the effects of one update.
type tx struct {
	st  *state
	u   *Update
	off int64
}

func (t *tx) newCID() string { return t.st.newCID() }

func (t *tx) add(c *contract, cid string) {
	t.st.addContract(c, cid)
	t.u.Created = append(t.u.Created, cid)
}

func (t *tx) archive(cid string) {
	if _, ok := t.st.contracts[cid]; ok {
		t.st.archive(cid)
		t.u.Archived = append(t.u.Archived, cid)
	}
}

// holdingBlock and lockedBlock allocate a holding contract in one piece: the contract,
// the holding and, for a locked one, its lock and its one holder.
type holdingBlock struct {
	c contract
	h Holding
}

type lockedBlock struct {
	holdingBlock
	l       Lock
	holders [1]string
}

// createHolding creates a free holding (a new contract id when cid is "").
func (t *tx) createHolding(cid, owner string, in *Instrument, amount money.Decimal) string {
	if cid == "" {
		cid = t.newCID()
	}
	b := &holdingBlock{}
	t.addHolding(b, cid, owner, in, amount, nil)
	return cid
}

// createLocked creates the holding cid locked for holder until expires (zero: never),
// for context ("allocation <cid>", "transfer <cid>").
func (t *tx) createLocked(cid, owner string, in *Instrument, amount money.Decimal, holder string, expires time.Time, context string) {
	b := &lockedBlock{}
	b.holders[0] = holder
	b.l = Lock{Holders: b.holders[:], Expires: expires, Context: context}
	t.addHolding(&b.holdingBlock, cid, owner, in, amount, &b.l)
}

func (t *tx) addHolding(b *holdingBlock, cid, owner string, in *Instrument, amount money.Decimal, lock *Lock) {
	b.h = Holding{CID: cid, Owner: owner, Instrument: in.ID, Admin: in.Admin, Amount: amount, Lock: lock, CreatedOffset: t.off}
	b.c = contract{kind: ContractHolding, h: &b.h}
	t.add(&b.c, cid)
}

// spend is the part of a plan that locks an amount of the acting party's holdings (a send
// allocation, a transfer): the holdings picked to cover it, their sum, and their ids.
type spend struct {
	holdings []*Holding
	sum      money.Decimal
	cids     []string
}

// inputs and chosen are the same slice (the prepared transaction keeps it twice and
// never writes to it).
func (s *spend) inputs() []string {
	if s.cids == nil {
		s.cids = cidsOf(s.holdings)
	}
	return s.cids
}

func (s *spend) chosen() []string { return s.inputs() }

// lock archives the picked holdings of owner and creates the holding lockedCID of amount
// of in, locked for holder until expires with the lock context, and owner's change.
func (s *spend) lock(t *tx, lockedCID, owner string, in *Instrument, amount money.Decimal, holder string, expires time.Time, context string) {
	for _, h := range s.holdings {
		t.archive(h.CID)
	}
	t.createLocked(lockedCID, owner, in, amount, holder, expires, context)
	if change := s.sum.Sub(amount); change.Sign() > 0 {
		t.createHolding("", owner, in, change)
	}
}

// unlock is the part of a plan that ends a contract which locked a holding (an
// allocation, a transfer instruction): its inputs are the contract, and the holding while
// it is still locked for the contract.
type unlock struct {
	cid, locked string
	stillLocked bool
}

// unlock is the unlock of contract cid, which locked the holding locked with the context
// prefix + cid.
func (c *checker) unlock(cid, locked, prefix string) unlock {
	return unlock{cid: cid, locked: locked, stillLocked: lockedFor(c.st.holding(locked), prefix, cid)}
}

func (u *unlock) inputs() []string {
	if u.stillLocked {
		return []string{u.cid, u.locked}
	}
	return []string{u.cid}
}

func (u *unlock) chosen() []string { return nil }

// lockedFor reports whether h is a live holding locked with the context prefix + cid
// ("allocation <cid>", "transfer <cid>"), without building that string.
func lockedFor(h *Holding, prefix, cid string) bool {
	if h == nil || h.Lock == nil {
		return false
	}
	c := h.Lock.Context
	return len(c) == len(prefix)+len(cid) && c[:len(prefix)] == prefix && c[len(prefix):] == cid
}

// release unlocks the holding cid if it is still locked for prefix + owner (the contract
// that locked it): it is archived and an equal free holding is created for its owner.
func (t *tx) release(cid, prefix, owner string) {
	h := t.st.holding(cid)
	if !lockedFor(h, prefix, owner) {
		return
	}
	in := t.st.instruments[h.Instrument]
	owner, amount := h.Owner, h.Amount
	t.archive(cid)
	t.u.Released = append(t.u.Released, t.createHolding("", owner, in, amount))
}
