package ledgersim

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/deskco/rfqdesk/internal/wire"
	"slices"
	"strings"

	"github.com/deskco/rfqdesk/money"
)

// SnapshotVersion is the version of the snapshot encoding (ENCODING.md, "Snapshots").
// Version 3 added the instruments listed after genesis; version 4 has version 3's layout
// with party ids carrying Canton's key fingerprint (Fingerprint); version 5 has version
// 4's layout, taken of a ledger whose transfers and allocations name their input
// holdings (Allocate.Inputs): the journal records after an earlier snapshot are of
// commands that named none, which today's ledger refuses, so Restore reads only version 5.
// (Version 4's layout would restore: a prepared transaction's selected holdings become
// the names its command carries, withInputs.)
const SnapshotVersion byte = 5

// snapshotLedgerChose is the last version of a ledger that chose input holdings itself.
const snapshotLedgerChose byte = 4

// snapshotOldFingerprint is the last version whose party ids carried the SHA-256 of
// the raw key alone, named when such a snapshot is refused.
const snapshotOldFingerprint byte = 3

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
		out = append(out, genesisField{name, w.B})
	}
	field("profile", func(w *snapWriter) { w.Str(string(c.Profile)) })
	field("seed", func(w *snapWriter) { w.Uvarint(c.Seed) })
	field("ledger id", func(w *snapWriter) { w.Str(c.LedgerID) })
	field("prepared lifetime", func(w *snapWriter) { w.Varint(int64(c.PreparedLifetime)) })
	field("onboarding lifetime", func(w *snapWriter) { w.Varint(int64(c.OnboardingLifetime)) })
	funding := func(w *snapWriter, fs []Funding) {
		w.Uvarint(uint64(len(fs)))
		for _, f := range fs {
			w.Str(f.Instrument)
			w.dec(f.Amount)
		}
	}
	field("instruments", func(w *snapWriter) {
		w.Uvarint(uint64(len(c.Instruments)))
		for _, s := range c.Instruments {
			w.Str(s.ID)
			w.Str(s.Admin)
			w.Str(s.Symbol)
			w.Str(s.DisplaySymbol)
			w.Uvarint(uint64(s.Decimals))
			w.Bool(s.Native)
		}
	})
	field("parties", func(w *snapWriter) {
		w.Uvarint(uint64(len(c.Parties)))
		for _, p := range c.Parties {
			w.Str(p.Hint)
			funding(w, p.Funding)
			w.Bool(p.Preapproval)
		}
	})
	field("faucet", func(w *snapWriter) {
		w.Str(c.Faucet.Reservoir)
		funding(w, c.Faucet.Drip)
	})
	return out
}

// encodeSnapshot writes the state; called under the lock.
func (l *Ledger) encodeSnapshot() ([]byte, error) {
	st := l.st
	w := &snapWriter{Encoder: wire.Encoder{B: make([]byte, 0, 4096+len(st.contracts)*200+st.updates.len()*300)}}
	w.RawStr(snapshotMagic)
	w.U8(SnapshotVersion)

	gs := genesisFields(&l.cfg)
	w.Uvarint(uint64(len(gs)))
	for _, g := range gs {
		w.Str(g.name)
		w.Bytes(g.enc)
	}

	w.Time(l.now)
	w.Uvarint(st.counter)
	w.Varint(st.offset)
	for _, v := range st.acc {
		w.U64(v)
	}

	// Parties, by id.
	ids := make([]string, 0, len(st.parties))
	for id := range st.parties {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		p := st.parties[id]
		w.sym(p.ID)
		w.Str(p.Hint)
		w.Bytes(p.PublicKey)
		w.Bool(p.External)
	}

	// Pending onboardings, by party id, and their expiry heap as it is.
	ids = ids[:0]
	for id := range st.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		p := st.pending[id]
		w.Str(p.hint)
		w.Bytes(p.pub)
		w.Time(p.expires)
	}
	writeHeap(w, st.pendingExp, true)

	// Instruments of the genesis in catalog order: only Listed changes after genesis.
	genesisN := len(st.instrumentOrder) - len(st.added)
	w.Uvarint(uint64(genesisN))
	for _, id := range st.instrumentOrder[:genesisN] {
		w.sym(id)
		w.Bool(st.instruments[id].Listed)
	}
	// Instruments listed after genesis (version 3), in catalog order, with their supply.
	w.Uvarint(uint64(len(st.added)))
	for _, s := range st.added {
		w.sym(s.ID)
		w.Str(s.Admin)
		w.Str(s.Symbol)
		w.Str(s.DisplaySymbol)
		w.Uvarint(uint64(s.Decimals))
		w.Bool(s.Native)
		w.Bool(st.instruments[s.ID].Listed)
		w.dec(st.supply[s.ID])
	}

	// Live contracts, by contract id.
	cids := make([]string, 0, len(st.contracts))
	for cid := range st.contracts {
		cids = append(cids, cid)
	}
	sortIDs(cids)
	w.Uvarint(uint64(len(cids)))
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
	w.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		r := st.prepared[id]
		p := &r.p
		w.Str(p.ID)
		w.Raw(p.Hash[:])
		w.sym(p.ActAs)
		if err := w.command(p.Command); err != nil {
			return nil, fmt.Errorf("prepared %s: %w", id, err)
		}
		w.Str(p.CommandID)
		w.Time(p.PreparedAt)
		w.Time(p.ExpiresAt)
		w.cids(p.Inputs)
		w.cids(r.selected)
	}
	writeHeap(w, st.prepExp, false)

	// Tombstones of expired prepared transactions, oldest first.
	w.Uvarint(uint64(st.tombRing.len()))
	for _, id := range st.tombRing.items[st.tombRing.head:] {
		w.cid(id)
	}

	// Retained updates, oldest first.
	w.Uvarint(uint64(st.updates.len()))
	slots, _ := st.updates.live()
	for i := range slots {
		st.updates.writeSnapshot(w, &slots[i])
	}
	if err := w.Err(); err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return w.B, nil
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
	w.Uvarint(uint64(len(h)))
	for _, e := range h {
		w.Time(e.at)
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
		w.U8(snapHolding)
		w.cid(h.CID)
		w.sym(h.Owner)
		w.sym(h.Instrument)
		w.sym(h.Admin)
		w.dec(h.Amount)
		if h.Lock == nil {
			w.U8(0)
		} else {
			w.U8(1)
			w.symList(h.Lock.Holders)
			w.Time(h.Lock.Expires)
			w.Str(h.Lock.Context)
		}
		w.Varint(h.CreatedOffset)
		// Whether the spendable index holds it: always for a free holding; for a locked
		// one once its lapse was applied (the lock expiry heap no longer holds it).
		w.Bool(st.isSpendable(h))
	case ContractTransferInstruction:
		t := c.ti
		w.U8(snapInstruction)
		w.cid(t.CID)
		w.sym(t.Sender)
		w.sym(t.Receiver)
		w.sym(t.Instrument)
		w.sym(t.Admin)
		w.dec(t.Amount)
		w.Time(t.ExecuteBefore)
		w.Str(t.Reason)
		w.cid(t.Locked)
		w.Varint(t.CreatedOffset)
	case ContractAllocation:
		a := c.al
		w.U8(snapAllocation)
		w.cid(a.CID)
		w.sym(a.Settlement.Executor)
		w.Str(a.Settlement.ID)
		w.Str(a.LegID)
		w.sym(a.Owner)
		w.U8(byte(a.Side))
		w.sym(a.Instrument)
		w.dec(a.Amount)
		w.Time(a.AllocateBefore)
		w.Time(a.SettleBefore)
		w.cid(a.Locked)
		w.Varint(a.CreatedOffset)
	case ContractPreapproval:
		p := c.pa
		w.U8(snapPreapproval)
		w.cid(p.CID)
		w.sym(p.Receiver)
		w.sym(p.Provider)
		w.Varint(p.CreatedOffset)
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
	l.blob = newBlobKit(&l.cfg)
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
	r := &snapReader{Decoder: *wire.NewDecoder(b[len(snapshotMagic):])}
	version := r.U8()
	if r.Err() == nil && version != SnapshotVersion {
		if version == snapshotLedgerChose {
			return fmt.Errorf("snapshot version %d, this build reads only version %d: its ledger chose the input holdings of transfers and allocations, which commands now name", version, SnapshotVersion)
		}
		if version <= snapshotOldFingerprint {
			return fmt.Errorf("snapshot version %d, this build reads only version %d: its party ids carry the SHA-256 of the raw key, not Canton's fingerprint", version, SnapshotVersion)
		}
		return fmt.Errorf("snapshot version %d, this build reads only version %d", version, SnapshotVersion)
	}
	if err := r.genesis(&l.cfg); err != nil {
		return err
	}
	st := l.st
	l.now = r.Time()
	st.counter = r.Uvarint()
	st.offset = r.Varint()
	var acc digestAcc
	for i := range acc {
		acc[i] = r.U64()
	}

	// Parties.
	for n := r.Count(); n > 0 && r.Err() == nil; n-- {
		p := &Party{ID: r.sym(), Hint: r.Str(), PublicKey: ed25519.PublicKey(r.Bytes()), External: r.Bool()}
		if r.Err() != nil {
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
	for n := r.Count(); n > 0 && r.Err() == nil; n-- {
		p := &pendingOnboarding{hint: r.Str(), pub: ed25519.PublicKey(r.Bytes()), expires: r.Time()}
		if r.Err() != nil {
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
	if n := r.Count(); r.Err() == nil && n != len(l.cfg.Instruments) {
		return fmt.Errorf("snapshot has %d instruments, the genesis %d", n, len(l.cfg.Instruments))
	}
	for _, s := range l.cfg.Instruments {
		id, listed := r.sym(), r.Bool()
		if r.Err() != nil {
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
		st.catalog(in)
		st.supply[s.ID] = money.Zero
	}
	for _, p := range l.cfg.Parties {
		for _, f := range p.Funding {
			st.supply[f.Instrument] = st.supply[f.Instrument].Add(f.Amount)
		}
	}
	if l.cfg.Faucet.Reservoir != "" {
		st.reservoir = st.internalByHint[l.cfg.Faucet.Reservoir]
	}
	if err := l.readAdded(r); err != nil {
		return err
	}

	// Contracts.
	var prev string
	n := r.Count()
	st.contracts = make(map[string]*contract, n)
	for ; n > 0 && r.Err() == nil; n-- {
		cid, err := st.readContract(r)
		if err != nil {
			return err
		}
		if r.Err() == nil && cid <= prev {
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
	for n := r.Count(); n > 0 && r.Err() == nil; n-- {
		rec := &preparedRec{}
		p := &rec.p
		p.ID = r.Str()
		copy(p.Hash[:], r.Raw(32))
		if r.Err() != nil {
			break
		}
		p.ActAs, p.Command, p.CommandID = r.sym(), r.command(), r.Str()
		p.PreparedAt, p.ExpiresAt = r.Time(), r.Time()
		var arena []string
		p.Inputs = r.cids(&arena)
		rec.selected = r.cids(&arena)
		if r.Err() != nil {
			break
		}
		// The command's named input holdings are its selected ones (the snapshot keeps
		// them once): restored into the command, so an Allocate or Transfer comes back
		// as it was prepared. A snapshot of a ledger that chose the holdings itself
		// (before commands named them) reads the same: its choice becomes the names.
		p.Command = withInputs(p.Command, rec.selected)
		if hashPreparedTo(&e, l.cfg.LedgerID, p) != p.Hash {
			return fmt.Errorf("prepared transaction %s does not hash to its recorded hash", truncate(p.ID))
		}
		if _, dup := st.prepared[p.ID]; dup {
			return fmt.Errorf("prepared transaction %s listed twice", truncate(p.ID))
		}
		rec.sum = preparedSum(p)
		st.prepared[p.ID] = rec
		st.acc.add(rec.sum)
	}
	st.prepExp = r.heap(false)

	// Tombstones.
	for n := r.Count(); n > 0 && r.Err() == nil; n-- {
		id := r.cid()
		st.tomb[id] = struct{}{}
		st.tombRing.push(id)
	}

	// Retained updates, oldest first, with the indexes retain kept.
	n = r.Count()
	// The updates are the snapshot's last section, and their retained encoding is about
	// as long as the snapshot's (the same 32-byte ids, a party interned).
	st.updates = newRetainedUpdates(n, r.Left()+r.Left()/8)
	var arena []string // the update's four lists share one array (retained copies them)
	for ; n > 0 && r.Err() == nil; n-- {
		arena = arena[:0]
		u := Update{UpdateID: r.cid(), Offset: r.Varint(), CommandID: r.Str(), PreparedID: r.cid(), ActAs: r.sym(),
			Kind: CommandKind(r.sym()), RecordTime: r.Time(), Created: r.cids(&arena), Archived: r.cids(&arena),
			Allocation: r.cid(), TransferInstruction: r.cid(), Preapproval: r.cid(), Receipts: r.cids(&arena), Released: r.cids(&arena)}
		if r.Err() != nil {
			break
		}
		if _, dup := st.updates.byUpdateID(u.UpdateID); dup {
			return fmt.Errorf("update %s listed twice", truncate(u.UpdateID))
		}
		st.index(&u, updateSum(&st.scratch, &u))
	}

	if r.Err() != nil {
		return r.Err()
	}
	if r.Left() != 0 {
		return fmt.Errorf("%d bytes after the end of the snapshot", r.Left())
	}
	if st.acc != acc {
		return errors.New("the restored state does not have the snapshot's digest")
	}
	return nil
}

// genesis reads the snapshot's genesis fields and compares them with c's.
func (r *snapReader) genesis(c *Config) error {
	want := genesisFields(c)
	n := r.Count()
	if r.Err() != nil {
		return r.Err()
	}
	if n != len(want) {
		return fmt.Errorf("snapshot has %d genesis fields, this build %d", n, len(want))
	}
	var differ []string
	for _, g := range want {
		name, enc := r.Str(), r.Bytes()
		if r.Err() != nil {
			return r.Err()
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
	n := r.Count()
	if n == 0 {
		return nil
	}
	h := make(expiryHeap, 0, n)
	for ; n > 0 && r.Err() == nil; n-- {
		e := expiry{at: r.Time()}
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
	switch kind := r.U8(); kind {
	case snapHolding:
		h := &Holding{CID: r.cid(), Owner: r.sym(), Instrument: r.sym(), Admin: r.sym(), Amount: r.dec()}
		if r.Bool() {
			h.Lock = &Lock{Holders: r.symList(), Expires: r.Time(), Context: r.Str()}
		}
		h.CreatedOffset = r.Varint()
		spendable = r.Bool()
		c.kind, c.h, cid = ContractHolding, h, h.CID
		if r.Err() == nil && h.Lock == nil && !spendable {
			return "", fmt.Errorf("free holding %s not spendable", truncate(cid))
		}
	case snapInstruction:
		t := &TransferInstruction{CID: r.cid(), Sender: r.sym(), Receiver: r.sym(), Instrument: r.sym(), Admin: r.sym(),
			Amount: r.dec(), ExecuteBefore: r.Time(), Reason: r.Str(), Locked: r.cid(), CreatedOffset: r.Varint()}
		c.kind, c.ti, cid = ContractTransferInstruction, t, t.CID
	case snapAllocation:
		a := &Allocation{CID: r.cid(), Settlement: SettlementRef{Executor: r.sym(), ID: r.Str()}, LegID: r.Str(), Owner: r.sym(),
			Side: Side(r.U8()), Instrument: r.sym(), Amount: r.dec(), AllocateBefore: r.Time(), SettleBefore: r.Time(),
			Locked: r.cid(), CreatedOffset: r.Varint()}
		c.kind, c.al, cid = ContractAllocation, a, a.CID
	case snapPreapproval:
		p := &Preapproval{CID: r.cid(), Receiver: r.sym(), Provider: r.sym(), CreatedOffset: r.Varint()}
		c.kind, c.pa, cid = ContractPreapproval, p, p.CID
	default:
		r.fail("unknown contract kind %d", kind)
	}
	if r.Err() != nil {
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
	default:
		st.indexParties(c, cid)
	}
	return cid, nil
}

// readAdded reads the instruments listed after genesis (snapshot version 3).
func (l *Ledger) readAdded(r *snapReader) error {
	st := l.st
	for n := r.Count(); n > 0 && r.Err() == nil; n-- {
		s := InstrumentSpec{ID: r.sym(), Admin: r.Str(), Symbol: r.Str(), DisplaySymbol: r.Str()}
		dec := r.Uvarint()
		s.Native = r.Bool()
		listed := r.Bool()
		supply := r.dec()
		if r.Err() != nil {
			break
		}
		if dec > money.MaxFractionDigits || !validID(s.ID) || s.Symbol == "" || s.DisplaySymbol == "" {
			return fmt.Errorf("instrument %q listed after genesis: bad id, symbol or decimals", truncate(s.ID))
		}
		s.Decimals = int(dec)
		if _, dup := st.instruments[s.ID]; dup {
			return fmt.Errorf("instrument %q listed twice", truncate(s.ID))
		}
		admin, ok := st.internalByHint[s.Admin]
		if !ok {
			return fmt.Errorf("instrument %s: no internal party %q", truncate(s.ID), truncate(s.Admin))
		}
		if supply.Sign() < 0 {
			return fmt.Errorf("instrument %s: negative supply", truncate(s.ID))
		}
		st.addInstrument(&Instrument{ID: s.ID, Admin: admin, Symbol: s.Symbol, DisplaySymbol: s.DisplaySymbol,
			Decimals: s.Decimals, Native: s.Native, Listed: listed}, s)
		st.supply[s.ID] = supply
	}
	return r.Err()
}

// withInputs is c with its input holdings set to cids when it is an Allocate or a
// Transfer that spends (cids not empty); any other command is returned as is.
func withInputs(c Command, cids []string) Command {
	if len(cids) == 0 {
		return c
	}
	switch v := c.(type) {
	case Allocate:
		v.Inputs = cloneIDs(cids)
		return v
	case Transfer:
		v.Inputs = cloneIDs(cids)
		return v
	}
	return c
}
