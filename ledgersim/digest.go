package ledgersim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
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
	entUpdate      byte = 'U'
	digestVersion0 byte = 2
)

func entitySum(e *encoder) [32]byte { return sha256.Sum256(e.B) }

// sumScratch is the reusable encoding buffer of the write path and the fingerprint
// cache of parties and instruments (guarded by the ledger's lock); readers pass nil and
// get a fresh buffer and uncached (equal) fingerprints.
type sumScratch struct {
	e   encoder
	fps map[string][8]byte
}

func newEntity(s *sumScratch, tag byte) *encoder {
	if s == nil {
		s = &sumScratch{}
	}
	s.e.B = append(s.e.B[:0], digestVersion0, tag)
	s.e.fps = s.fps
	return &s.e
}

// intern caches the fingerprint of a long-lived id (a party or an instrument).
func (s *sumScratch) intern(id string) {
	if s.fps == nil {
		s.fps = map[string][8]byte{}
	}
	s.fps[id] = hashFP(id)
}

func hashFP(id string) [8]byte {
	h := sha256.Sum256([]byte(id))
	return [8]byte(h[:8])
}

// idFP is the 8-byte fingerprint an id enters the digest encodings with: for a contract
// id ("00" + 64 hex) or an update id ("1220" + 64 hex), the first 8 of its 32 random
// bytes; for a party or an instrument, the first 8 bytes of the SHA-256 of the id,
// computed once (fps); for any other string the same, computed on the spot. The
// digest is a check value, and 64 bits tell the ids of one ledger apart.
func idFP(fps map[string][8]byte, id string) [8]byte {
	var out [8]byte
	var hexPart string
	switch {
	case len(id) == 66 && id[:2] == "00":
		hexPart = id[2:18]
	case len(id) == 68 && id[:4] == "1220":
		hexPart = id[4:20]
	}
	if hexPart != "" {
		if _, err := hex.Decode(out[:], []byte(hexPart)); err == nil {
			return out
		}
	}
	if f, ok := fps[id]; ok {
		return f
	}
	return hashFP(id)
}

// id appends an id's fingerprint; "" is eight zero bytes.
func (e *encoder) id(s string) {
	if s == "" {
		e.B = append(e.B, 0, 0, 0, 0, 0, 0, 0, 0)
		return
	}
	f := idFP(e.fps, s)
	e.Raw(f[:])
}

func (e *encoder) ids(ss []string) {
	e.U32(uint32(len(ss)))
	for _, s := range ss {
		e.id(s)
	}
}

func partySum(s *sumScratch, p *Party) [32]byte {
	e := newEntity(s, entParty)
	e.str(p.ID)
	e.str(p.Hint)
	e.bytes(p.PublicKey)
	e.Bool(p.External)
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
	e.U32(uint32(in.Decimals))
	e.Bool(in.Native)
	e.Bool(in.Listed)
	return entitySum(e)
}

// Lock contexts in the digest encoding.
const (
	lockOther      byte = 0
	lockAllocation byte = 1
	lockTransfer   byte = 2
)

func encodeLock(e *encoder, l *Lock) {
	if l == nil {
		e.U8(0)
		return
	}
	e.U8(1)
	e.ids(l.Holders)
	e.time(l.Expires)
	switch {
	case strings.HasPrefix(l.Context, "allocation "):
		e.U8(lockAllocation)
		e.id(l.Context[len("allocation "):])
	case strings.HasPrefix(l.Context, "transfer "):
		e.U8(lockTransfer)
		e.id(l.Context[len("transfer "):])
	default:
		e.U8(lockOther)
		e.str(l.Context)
	}
}

// Contract kinds in the digest encoding.
var contractKindTags = map[ContractKind]byte{
	ContractHolding: 1, ContractTransferInstruction: 2, ContractAllocation: 3, ContractPreapproval: 4,
}

// contractSum is a contract's digest contribution: SHA-256 of a compact record whose ids
// are 8-byte fingerprints (idFP), so that a contract costs two or three SHA-256 blocks.
func contractSum(s *sumScratch, c *contract) [32]byte {
	e := newEntity(s, entContract)
	e.U8(contractKindTags[c.kind])
	switch c.kind {
	case ContractHolding:
		h := c.h
		e.id(h.CID)
		e.id(h.Owner)
		e.id(h.Instrument)
		e.id(h.Admin)
		e.dec(h.Amount)
		encodeLock(e, h.Lock)
		e.i64(h.CreatedOffset)
	case ContractTransferInstruction:
		t := c.ti
		e.id(t.CID)
		e.id(t.Sender)
		e.id(t.Receiver)
		e.id(t.Instrument)
		e.id(t.Admin)
		e.dec(t.Amount)
		e.time(t.ExecuteBefore)
		e.str(t.Reason)
		e.id(t.Locked)
		e.i64(t.CreatedOffset)
	case ContractAllocation:
		a := c.al
		e.id(a.CID)
		e.id(a.Settlement.Executor)
		e.str(a.Settlement.ID)
		e.str(a.LegID)
		e.id(a.Owner)
		e.U8(byte(a.Side))
		e.id(a.Instrument)
		e.dec(a.Amount)
		e.time(a.AllocateBefore)
		e.time(a.SettleBefore)
		e.id(a.Locked)
		e.i64(a.CreatedOffset)
	case ContractPreapproval:
		e.id(c.pa.CID)
		e.id(c.pa.Receiver)
		e.id(c.pa.Provider)
		e.i64(c.pa.CreatedOffset)
	}
	return entitySum(e)
}

// preparedSum is a live prepared transaction's digest contribution: its hash, which
// already covers the ledger id, prepared id, acting party, command id, command, inputs
// and times (ENCODING.md), so no further hashing is needed.
func preparedSum(p *Prepared) [32]byte { return p.Hash }

// updateSum is a retained update's digest contribution, with ids as fingerprints.
func updateSum(s *sumScratch, u *Update) [32]byte {
	e := newEntity(s, entUpdate)
	e.id(u.UpdateID)
	e.i64(u.Offset)
	e.str(u.CommandID)
	e.str(u.PreparedID)
	e.id(u.ActAs)
	e.str(string(u.Kind))
	e.time(u.RecordTime)
	e.ids(u.Created)
	e.ids(u.Archived)
	e.id(u.Allocation)
	e.id(u.TransferInstruction)
	e.id(u.Preapproval)
	e.ids(u.Receipts)
	e.ids(u.Released)
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
