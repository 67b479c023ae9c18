package ledgersim

import (
	"crypto/sha256"
	"encoding/binary"
)

// digestAcc is an incremental multiset hash of the state: the lane-wise sum (mod 2^64
// per lane) of the SHA-256 of every entity's canonical encoding. Adding an entity adds
// its hash, removing it subtracts it, so the digest costs O(1) per change and is
// independent of map order.
type digestAcc [4]uint64

func (a *digestAcc) add(s [32]byte) {
	for i := range a {
		a[i] += binary.BigEndian.Uint64(s[i*8:])
	}
}

func (a *digestAcc) sub(s [32]byte) {
	for i := range a {
		a[i] -= binary.BigEndian.Uint64(s[i*8:])
	}
}

// Entity tags of the digest encodings.
const (
	entParty       byte = 'P'
	entOnboarding  byte = 'O'
	entInstrument  byte = 'I'
	entContract    byte = 'C'
	entPrepared    byte = 'X'
	entUpdate      byte = 'U'
	digestVersion0 byte = 1
)

func entitySum(e *encoder) [32]byte { return sha256.Sum256(e.b) }

// sumScratch is a reusable encoding buffer of the write path (guarded by the ledger's
// lock); readers pass nil and get a fresh one.
type sumScratch struct{ e encoder }

func newEntity(s *sumScratch, tag byte) *encoder {
	if s == nil {
		s = &sumScratch{}
	}
	s.e.b = append(s.e.b[:0], digestVersion0, tag)
	return &s.e
}

func partySum(s *sumScratch, p *Party) [32]byte {
	e := newEntity(s, entParty)
	e.str(p.ID)
	e.str(p.Hint)
	e.bytes(p.PublicKey)
	e.boolean(p.External)
	return entitySum(e)
}

func pendingSum(s *sumScratch, p *pendingOnboarding) [32]byte {
	e := newEntity(s, entOnboarding)
	e.str(p.ob.PartyID)
	e.str(p.hint)
	e.bytes(p.pub)
	e.time(p.expires)
	return entitySum(e)
}

func instrumentSum(s *sumScratch, in *Instrument) [32]byte {
	e := newEntity(s, entInstrument)
	e.str(in.ID)
	e.str(in.Admin)
	e.str(in.Symbol)
	e.str(in.DisplaySymbol)
	e.u32(uint32(in.Decimals))
	e.boolean(in.Native)
	e.boolean(in.Listed)
	return entitySum(e)
}

func encodeLock(e *encoder, l *Lock) {
	if l == nil {
		e.u8(0)
		return
	}
	e.u8(1)
	e.strs(l.Holders)
	e.time(l.Expires)
	e.str(l.Context)
}

func contractSum(s *sumScratch, c *contract) [32]byte {
	e := newEntity(s, entContract)
	e.str(string(c.kind))
	switch c.kind {
	case ContractHolding:
		h := c.h
		e.str(h.CID)
		e.str(h.Owner)
		e.str(h.Instrument)
		e.str(h.Admin)
		e.dec(h.Amount)
		encodeLock(e, h.Lock)
		e.i64(h.CreatedOffset)
	case ContractTransferInstruction:
		t := c.ti
		e.str(t.CID)
		e.str(t.Sender)
		e.str(t.Receiver)
		e.str(t.Instrument)
		e.str(t.Admin)
		e.dec(t.Amount)
		e.time(t.ExecuteBefore)
		e.str(t.Reason)
		e.str(t.Locked)
		e.i64(t.CreatedOffset)
	case ContractAllocation:
		a := c.al
		e.str(a.CID)
		a.Settlement.encode(e)
		e.str(a.LegID)
		e.str(a.Owner)
		e.u8(byte(a.Side))
		e.str(a.Instrument)
		e.dec(a.Amount)
		e.time(a.AllocateBefore)
		e.time(a.SettleBefore)
		e.str(a.Locked)
		e.i64(a.CreatedOffset)
	case ContractPreapproval:
		e.str(c.pa.CID)
		e.str(c.pa.Receiver)
		e.str(c.pa.Provider)
		e.i64(c.pa.CreatedOffset)
	}
	return entitySum(e)
}

func preparedSum(s *sumScratch, p *Prepared) [32]byte {
	e := newEntity(s, entPrepared)
	e.b = append(e.b, p.Hash[:]...)
	e.str(p.ID)
	e.str(p.CommandID)
	return entitySum(e)
}

func updateSum(s *sumScratch, u *Update) [32]byte {
	e := newEntity(s, entUpdate)
	e.str(u.UpdateID)
	e.i64(u.Offset)
	e.str(u.CommandID)
	e.str(u.PreparedID)
	e.str(u.ActAs)
	e.str(string(u.Kind))
	e.time(u.RecordTime)
	e.strs(u.Created)
	e.strs(u.Archived)
	e.str(u.Allocation)
	e.str(u.TransferInstruction)
	e.str(u.Preapproval)
	e.strs(u.Receipts)
	e.strs(u.Released)
	return entitySum(e)
}

// digest folds the accumulator and the counters into the state digest.
func (st *state) digest() [32]byte {
	var b [8 + 32 + 16]byte
	copy(b[:], "lsdigest")
	for i, v := range st.acc {
		binary.BigEndian.PutUint64(b[8+i*8:], v)
	}
	binary.BigEndian.PutUint64(b[40:], st.counter)
	binary.BigEndian.PutUint64(b[48:], uint64(st.offset))
	return sha256.Sum256(b[:])
}
