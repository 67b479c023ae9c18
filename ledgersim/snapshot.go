package ledgersim

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deskco/rfqdesk/money"
)

// SnapshotVersion is the version of the snapshot encoding (ENCODING.md, "Snapshots").
// Restore refuses any other version.
const SnapshotVersion byte = 1

// snapshotMagic leads every snapshot, followed by SnapshotVersion.
const snapshotMagic = "ledgersim-snapshot"

// Kinds of contract in the snapshot encoding.
const (
	snapHolding     byte = 1
	snapInstruction byte = 2
	snapAllocation  byte = 3
	snapPreapproval byte = 4
)

// ErrSnapshot is matched (errors.Is) by every error of Restore: the snapshot is damaged,
// of another version, or was taken of a ledger with another genesis.
var ErrSnapshot = errors.New("ledgersim: unusable snapshot")

// Snapshot returns a deterministic, versioned encoding of the ledger's whole state
// (ENCODING.md, "Snapshots"): the same state always gives the same bytes. Restore
// rebuilds from it a ledger that, fed the inputs recorded after the snapshot, reaches
// the same states and Digests as this one. It is taken under the ledger's lock: no call
// takes effect while it runs.
func (l *Ledger) Snapshot() ([]byte, error) {
	b, _, err := l.SnapshotWith(nil)
	return b, err
}

// Exclusive runs fn while no call can change the ledger, and so while none is in its
// Recorder: what fn changes is seen whole by every later Recorder call and by none before.
func (l *Ledger) Exclusive(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fn()
}

// SnapshotWith is Snapshot that also calls mark (if not nil) under the same lock and
// returns its result. The Recorder runs under that lock too, so mark sees exactly the
// inputs the snapshot covers: a journal's last sequence number read by mark is the
// sequence number the snapshot corresponds to.
func (l *Ledger) SnapshotWith(mark func() uint64) ([]byte, uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.flushSums()
	var seq uint64
	if mark != nil {
		seq = mark()
	}
	b, err := l.encodeSnapshot()
	if err != nil {
		return nil, 0, fmt.Errorf("ledgersim: snapshot: %w", err)
	}
	return b, seq, nil
}

// genesisField is one named part of the configuration that decides the state: a
// snapshot carries them and Restore compares them with its Config.
type genesisField struct {
	name string
	enc  []byte
}

func genesisFields(c *Config) []genesisField {
	var out []genesisField
	field := func(name string, f func(w *snapWriter)) {
		var w snapWriter
		f(&w)
		out = append(out, genesisField{name, w.b})
	}
	field("profile", func(w *snapWriter) { w.str(string(c.Profile)) })
	field("seed", func(w *snapWriter) { w.uvarint(c.Seed) })
	field("ledger id", func(w *snapWriter) { w.str(c.LedgerID) })
	field("prepared lifetime", func(w *snapWriter) { w.varint(int64(c.PreparedLifetime)) })
	field("onboarding lifetime", func(w *snapWriter) { w.varint(int64(c.OnboardingLifetime)) })
	funding := func(w *snapWriter, fs []Funding) {
		w.uvarint(uint64(len(fs)))
		for _, f := range fs {
			w.str(f.Instrument)
			w.dec(f.Amount)
		}
	}
	field("instruments", func(w *snapWriter) {
		w.uvarint(uint64(len(c.Instruments)))
		for _, s := range c.Instruments {
			w.str(s.ID)
			w.str(s.Admin)
			w.str(s.Symbol)
			w.str(s.DisplaySymbol)
			w.uvarint(uint64(s.Decimals))
			w.boolean(s.Native)
		}
	})
	field("parties", func(w *snapWriter) {
		w.uvarint(uint64(len(c.Parties)))
		for _, p := range c.Parties {
			w.str(p.Hint)
			funding(w, p.Funding)
			w.boolean(p.Preapproval)
		}
	})
	field("faucet", func(w *snapWriter) {
		w.str(c.Faucet.Reservoir)
		funding(w, c.Faucet.Drip)
	})
	return out
}

// encodeSnapshot writes the state; called under the lock.
func (l *Ledger) encodeSnapshot() ([]byte, error) {
	st := l.st
	w := &snapWriter{b: make([]byte, 0, 4096+len(st.contracts)*200+len(st.updates)*300)}
	w.b = append(w.b, snapshotMagic...)
	w.u8(SnapshotVersion)

	gs := genesisFields(&l.cfg)
	w.uvarint(uint64(len(gs)))
	for _, g := range gs {
		w.str(g.name)
		w.bytes(g.enc)
	}

	w.time(l.now)
	w.uvarint(st.counter)
	w.varint(st.offset)
	for _, v := range st.acc {
		w.u64(v)
	}

	// Parties, by id.
	ids := make([]string, 0, len(st.parties))
	for id := range st.parties {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.uvarint(uint64(len(ids)))
	for _, id := range ids {
		p := st.parties[id]
		w.sym(p.ID)
		w.str(p.Hint)
		w.bytes(p.PublicKey)
		w.boolean(p.External)
	}

	// Pending onboardings, by party id, and their expiry heap as it is.
	ids = ids[:0]
	for id := range st.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.uvarint(uint64(len(ids)))
	for _, id := range ids {
		p := st.pending[id]
		w.str(p.hint)
		w.bytes(p.pub)
		w.time(p.expires)
	}
	writeHeap(w, st.pendingExp, true)

	// Instruments in catalog order: only Listed changes after genesis.
	w.uvarint(uint64(len(st.instrumentOrder)))
	for _, id := range st.instrumentOrder {
		w.sym(id)
		w.boolean(st.instruments[id].Listed)
	}

	// Live contracts, by contract id.
	cids := make([]string, 0, len(st.contracts))
	for cid := range st.contracts {
		cids = append(cids, cid)
	}
	sortIDs(cids)
	w.uvarint(uint64(len(cids)))
	for _, cid := range cids {
		if err := st.writeContract(w, cid, st.contracts[cid]); err != nil {
			return nil, err
		}
	}
	writeHeap(w, st.lockExp, false)

	// Live prepared transactions, by id, and their expiry heap as it is.
	ids = ids[:0]
	for id := range st.prepared {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.uvarint(uint64(len(ids)))
	for _, id := range ids {
		r := st.prepared[id]
		p := &r.p
		w.str(p.ID)
		w.b = append(w.b, p.Hash[:]...)
		w.sym(p.ActAs)
		if err := w.command(p.Command); err != nil {
			return nil, fmt.Errorf("prepared %s: %w", id, err)
		}
		w.str(p.CommandID)
		w.time(p.PreparedAt)
		w.time(p.ExpiresAt)
		w.cids(p.Inputs)
		w.cids(r.selected)
	}
	writeHeap(w, st.prepExp, false)

	// Tombstones of expired prepared transactions, oldest first.
	w.uvarint(uint64(st.tombRing.len()))
	for _, id := range st.tombRing.items[st.tombRing.head:] {
		w.cid(id)
	}

	// Retained updates, oldest first.
	w.uvarint(uint64(st.updRing.len()))
	for _, rec := range st.updRing.items[st.updRing.head:] {
		u := &rec.u
		w.cid(u.UpdateID)
		w.varint(u.Offset)
		w.str(u.CommandID)
		w.cid(u.PreparedID)
		w.sym(u.ActAs)
		w.sym(string(u.Kind))
		w.time(u.RecordTime)
		w.cids(u.Created)
		w.cids(u.Archived)
		w.cid(u.Allocation)
		w.cid(u.TransferInstruction)
		w.cid(u.Preapproval)
		w.cids(u.Receipts)
		w.cids(u.Released)
	}
	return w.b, nil
}

// sortIDs sorts ids as slices.Sort does, faster: by their first 8 bytes as a big-endian
// number (the same order as the bytes themselves), then by the whole id.
func sortIDs(ids []string) {
	type keyed struct {
		k  uint64
		id string
	}
	ks := make([]keyed, len(ids))
	for i, id := range ids {
		var b [8]byte
		copy(b[:], id)
		ks[i] = keyed{binary.BigEndian.Uint64(b[:]), id}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.k != b.k {
			if a.k < b.k {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	for i := range ks {
		ids[i] = ks[i].id
	}
}

// writeHeap writes an expiry heap entry by entry, in its array order, so that Restore
// rebuilds it exactly (stale entries included). Party ids are interned; other ids not.
func writeHeap(w *snapWriter, h expiryHeap, symIDs bool) {
	w.uvarint(uint64(len(h)))
	for _, e := range h {
		w.time(e.at)
		if symIDs {
			w.sym(e.id)
		} else {
			w.cid(e.id)
		}
	}
}

func (st *state) writeContract(w *snapWriter, cid string, c *contract) error {
	switch c.kind {
	case ContractHolding:
		h := c.h
		w.u8(snapHolding)
		w.cid(h.CID)
		w.sym(h.Owner)
		w.sym(h.Instrument)
		w.sym(h.Admin)
		w.dec(h.Amount)
		if h.Lock == nil {
			w.u8(0)
		} else {
			w.u8(1)
			w.symList(h.Lock.Holders)
			w.time(h.Lock.Expires)
			w.str(h.Lock.Context)
		}
		w.varint(h.CreatedOffset)
		// Whether the spendable index holds it: always for a free holding; for a locked
		// one once its lapse was applied (the lock expiry heap no longer holds it).
		w.boolean(st.isSpendable(h))
	case ContractTransferInstruction:
		t := c.ti
		w.u8(snapInstruction)
		w.cid(t.CID)
		w.sym(t.Sender)
		w.sym(t.Receiver)
		w.sym(t.Instrument)
		w.sym(t.Admin)
		w.dec(t.Amount)
		w.time(t.ExecuteBefore)
		w.str(t.Reason)
		w.cid(t.Locked)
		w.varint(t.CreatedOffset)
	case ContractAllocation:
		a := c.al
		w.u8(snapAllocation)
		w.cid(a.CID)
		w.sym(a.Settlement.Executor)
		w.str(a.Settlement.ID)
		w.str(a.LegID)
		w.sym(a.Owner)
		w.u8(byte(a.Side))
		w.sym(a.Instrument)
		w.dec(a.Amount)
		w.time(a.AllocateBefore)
		w.time(a.SettleBefore)
		w.cid(a.Locked)
		w.varint(a.CreatedOffset)
	case ContractPreapproval:
		p := c.pa
		w.u8(snapPreapproval)
		w.cid(p.CID)
		w.sym(p.Receiver)
		w.sym(p.Provider)
		w.varint(p.CreatedOffset)
	default:
		return fmt.Errorf("contract %s of unknown kind %q", cid, c.kind)
	}
	return nil
}

// isSpendable reports whether the spendable index holds h.
func (st *state) isSpendable(h *Holding) bool {
	if h.Lock == nil {
		return true
	}
	s := st.spendable[ownerInst{h.Owner, h.Instrument}]
	if s == nil {
		return false
	}
	return s.contains(h)
}

// Restore builds a ledger from a Snapshot. cfg supplies what is not state — Clock,
// FaultPlan, Sleep, Recorder, Limits — and its genesis fields (Profile, Seed, LedgerID,
// the lifetimes, Instruments, Parties, Faucet) must be those of the ledger that took the
// snapshot, or Restore refuses naming the field that differs. Restore checks the
// snapshot through: every digest contribution and every prepared transaction's hash is
// recomputed and must agree with the snapshot's digest. Every error matches ErrSnapshot.
func Restore(cfg Config, snapshot []byte) (*Ledger, error) {
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	l := &Ledger{cfg: c}
	l.st = newState(&l.cfg)
	if err := l.decodeSnapshot(snapshot); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	return l, nil
}

func (l *Ledger) decodeSnapshot(b []byte) error {
	if !bytes.HasPrefix(b, []byte(snapshotMagic)) {
		return errors.New("not a ledger snapshot")
	}
	r := &snapReader{b: b, off: len(snapshotMagic)}
	if v := r.u8(); r.err == nil && v != SnapshotVersion {
		return fmt.Errorf("snapshot version %d, this build reads version %d", v, SnapshotVersion)
	}
	if err := r.genesis(&l.cfg); err != nil {
		return err
	}
	st := l.st
	l.now = r.time()
	st.counter = r.uvarint()
	st.offset = r.varint()
	var acc digestAcc
	for i := range acc {
		acc[i] = r.u64()
	}

	// Parties.
	for n := r.count(); n > 0 && r.err == nil; n-- {
		p := &Party{ID: r.sym(), Hint: r.str(), PublicKey: ed25519.PublicKey(r.bytes()), External: r.boolean()}
		if r.err != nil {
			break
		}
		if len(p.PublicKey) != ed25519.PublicKeySize || PartyID(p.Hint, p.PublicKey) != p.ID {
			return fmt.Errorf("party %s: id does not match its hint and key", truncate(p.ID))
		}
		if _, dup := st.parties[p.ID]; dup {
			return fmt.Errorf("party %s listed twice", truncate(p.ID))
		}
		st.addParty(p)
		if !p.External {
			st.internalByHint[p.Hint] = p.ID
		}
	}

	// Pending onboardings.
	for n := r.count(); n > 0 && r.err == nil; n-- {
		p := &pendingOnboarding{hint: r.str(), pub: ed25519.PublicKey(r.bytes()), expires: r.time()}
		if r.err != nil {
			break
		}
		if len(p.pub) != ed25519.PublicKeySize || !validHint(p.hint) {
			return fmt.Errorf("pending onboarding %q: bad hint or key", truncate(p.hint))
		}
		p.ob = Onboarding{PartyID: PartyID(p.hint, p.pub), Topology: OnboardingTopology(l.cfg.LedgerID, p.hint, p.pub), ExpiresAt: p.expires}
		p.sum = pendingSum(&st.scratch, p)
		st.pending[p.ob.PartyID] = p
		st.acc.add(p.sum)
	}
	st.pendingExp = r.heap(true)

	// Instruments: the catalog of the genesis, with whether each is still listed.
	if n := r.count(); r.err == nil && n != len(l.cfg.Instruments) {
		return fmt.Errorf("snapshot has %d instruments, the genesis %d", n, len(l.cfg.Instruments))
	}
	for _, s := range l.cfg.Instruments {
		id, listed := r.sym(), r.boolean()
		if r.err != nil {
			break
		}
		if id != s.ID {
			return fmt.Errorf("instrument %q where the genesis has %q", truncate(id), s.ID)
		}
		admin, ok := st.internalByHint[s.Admin]
		if !ok {
			return fmt.Errorf("instrument %s: no internal party %q", s.ID, s.Admin)
		}
		in := &Instrument{ID: s.ID, Admin: admin, Symbol: s.Symbol, DisplaySymbol: s.DisplaySymbol,
			Decimals: s.Decimals, Native: s.Native, Listed: listed}
		st.instruments[s.ID] = in
		st.scratch.intern(s.ID)
		st.instrumentOrder = append(st.instrumentOrder, s.ID)
		st.supply[s.ID] = money.Zero
		st.acc.add(instrumentSum(&st.scratch, in))
	}
	for _, p := range l.cfg.Parties {
		for _, f := range p.Funding {
			st.supply[f.Instrument] = st.supply[f.Instrument].Add(f.Amount)
		}
	}
	if l.cfg.Faucet.Reservoir != "" {
		st.reservoir = st.internalByHint[l.cfg.Faucet.Reservoir]
	}

	// Contracts.
	var prev string
	n := r.count()
	st.contracts = make(map[string]*contract, n)
	for ; n > 0 && r.err == nil; n-- {
		cid, err := st.readContract(r)
		if err != nil {
			return err
		}
		if r.err == nil && cid <= prev {
			return fmt.Errorf("contract %s out of order", truncate(cid))
		}
		prev = cid
	}
	for _, s := range st.spendable {
		slices.SortFunc(s.hs, storageCmp) // back to front
	}
	st.lockExp = r.heap(false)

	// Prepared transactions.
	var e encoder
	for n := r.count(); n > 0 && r.err == nil; n-- {
		rec := &preparedRec{}
		p := &rec.p
		p.ID = r.str()
		if r.err == nil && len(r.b)-r.off < 32 {
			r.fail("unexpected end")
		}
		if r.err != nil {
			break
		}
		copy(p.Hash[:], r.b[r.off:])
		r.off += 32
		p.ActAs, p.Command, p.CommandID = r.sym(), r.command(), r.str()
		p.PreparedAt, p.ExpiresAt = r.time(), r.time()
		var arena []string
		p.Inputs = r.cids(&arena)
		rec.selected = r.cids(&arena)
		if r.err != nil {
			break
		}
		if hashPreparedTo(&e, l.cfg.LedgerID, p) != p.Hash {
			return fmt.Errorf("prepared transaction %s does not hash to its recorded hash", truncate(p.ID))
		}
		if _, dup := st.prepared[p.ID]; dup {
			return fmt.Errorf("prepared transaction %s listed twice", truncate(p.ID))
		}
		rec.sum = preparedSum(p)
		st.prepared[p.ID] = rec
		st.acc.add(rec.sum)
		for _, cid := range rec.selected {
			st.refs[cid]++
		}
	}
	st.prepExp = r.heap(false)

	// Tombstones.
	for n := r.count(); n > 0 && r.err == nil; n-- {
		id := r.cid()
		st.tomb[id] = struct{}{}
		st.tombRing.push(id)
	}

	// Retained updates, oldest first, with the indexes retain kept.
	n = r.count()
	st.updates = make(map[string]*updateRec, n)
	st.byCommand = make(map[string]*updateRec, n)
	st.byPrep = make(map[string]*updateRec, n)
	for ; n > 0 && r.err == nil; n-- {
		arena := make([]string, 0, 8) // the update's four lists share one array
		u := Update{UpdateID: r.cid(), Offset: r.varint(), CommandID: r.str(), PreparedID: r.cid(), ActAs: r.sym(),
			Kind: CommandKind(r.sym()), RecordTime: r.time(), Created: r.cids(&arena), Archived: r.cids(&arena),
			Allocation: r.cid(), TransferInstruction: r.cid(), Preapproval: r.cid(), Receipts: r.cids(&arena), Released: r.cids(&arena)}
		if r.err != nil {
			break
		}
		if _, dup := st.updates[u.UpdateID]; dup {
			return fmt.Errorf("update %s listed twice", truncate(u.UpdateID))
		}
		st.index(&updateRec{u: u, sum: updateSum(&st.scratch, &u)})
	}

	if r.err != nil {
		return r.err
	}
	if r.off != len(r.b) {
		return fmt.Errorf("%d bytes after the end of the snapshot", len(r.b)-r.off)
	}
	if st.acc != acc {
		return errors.New("the restored state does not have the snapshot's digest")
	}
	return nil
}

// genesis reads the snapshot's genesis fields and compares them with c's.
func (r *snapReader) genesis(c *Config) error {
	want := genesisFields(c)
	n := r.count()
	if r.err != nil {
		return r.err
	}
	if n != len(want) {
		return fmt.Errorf("snapshot has %d genesis fields, this build %d", n, len(want))
	}
	var differ []string
	for _, g := range want {
		name, enc := r.str(), r.raw()
		if r.err != nil {
			return r.err
		}
		if name != g.name {
			return fmt.Errorf("snapshot genesis field %q where this build has %q", truncate(name), g.name)
		}
		if !bytes.Equal(enc, g.enc) {
			differ = append(differ, name)
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("the snapshot was taken of a ledger with another genesis: %s differ(s) from the config", strings.Join(differ, ", "))
	}
	return nil
}

func (r *snapReader) heap(symIDs bool) expiryHeap {
	n := r.count()
	if n == 0 {
		return nil
	}
	h := make(expiryHeap, 0, n)
	for ; n > 0 && r.err == nil; n-- {
		e := expiry{at: r.time()}
		if symIDs {
			e.id = r.sym()
		} else {
			e.id = r.cid()
		}
		h = append(h, e)
	}
	for i := 1; i < len(h); i++ {
		if h.less(i, (i-1)/2) {
			r.fail("expiry heap out of order at entry %d", i)
			break
		}
	}
	return h
}

// readContract reads one contract and adds it to the state with its indexes.
func (st *state) readContract(r *snapReader) (string, error) {
	c := &contract{}
	var cid string
	spendable := false
	switch kind := r.u8(); kind {
	case snapHolding:
		h := &Holding{CID: r.cid(), Owner: r.sym(), Instrument: r.sym(), Admin: r.sym(), Amount: r.dec()}
		if r.boolean() {
			h.Lock = &Lock{Holders: r.symList(), Expires: r.time(), Context: r.str()}
		}
		h.CreatedOffset = r.varint()
		spendable = r.boolean()
		c.kind, c.h, cid = ContractHolding, h, h.CID
		if r.err == nil && h.Lock == nil && !spendable {
			return "", fmt.Errorf("free holding %s not spendable", truncate(cid))
		}
	case snapInstruction:
		t := &TransferInstruction{CID: r.cid(), Sender: r.sym(), Receiver: r.sym(), Instrument: r.sym(), Admin: r.sym(),
			Amount: r.dec(), ExecuteBefore: r.time(), Reason: r.str(), Locked: r.cid(), CreatedOffset: r.varint()}
		c.kind, c.ti, cid = ContractTransferInstruction, t, t.CID
	case snapAllocation:
		a := &Allocation{CID: r.cid(), Settlement: SettlementRef{Executor: r.sym(), ID: r.str()}, LegID: r.str(), Owner: r.sym(),
			Side: Side(r.u8()), Instrument: r.sym(), Amount: r.dec(), AllocateBefore: r.time(), SettleBefore: r.time(),
			Locked: r.cid(), CreatedOffset: r.varint()}
		c.kind, c.al, cid = ContractAllocation, a, a.CID
	case snapPreapproval:
		p := &Preapproval{CID: r.cid(), Receiver: r.sym(), Provider: r.sym(), CreatedOffset: r.varint()}
		c.kind, c.pa, cid = ContractPreapproval, p, p.CID
	default:
		r.fail("unknown contract kind %d", kind)
	}
	if r.err != nil {
		return "", nil
	}
	// addContract, without inserting into the spendable sets one by one (they are
	// sorted once at the end) and without pushing lock expiries (the heap is restored
	// as it was).
	c.sum, c.summed, c.live = contractSum(&st.scratch, c), true, true
	st.contracts[cid] = c
	st.acc.add(c.sum)
	switch c.kind {
	case ContractHolding:
		h := c.h
		st.holdingsByOwner.add(h.Owner, c)
		if spendable {
			s := st.spendableSet(h.Owner, h.Instrument)
			s.hs = append(s.hs, entryOf(h))
		}
	case ContractTransferInstruction:
		addTo(st.inbox, c.ti.Receiver, cid)
		addTo(st.outbox, c.ti.Sender, cid)
	case ContractAllocation:
		st.allocsByOwner.add(c.al.Owner, c)
		st.allocLeg[legKey{c.al.Settlement, c.al.LegID}] = cid
	case ContractPreapproval:
		st.preapprovals[c.pa.Receiver] = cid
	}
	return cid, nil
}
