package ledgersim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/deskco/rfqdesk/internal/wire"
	"github.com/deskco/rfqdesk/money"
)

// Hash purposes, as Canton prefixes them (a 4-byte big-endian integer hashed before the
// content, so that hashes of different kinds of data never collide). ENCODING.md
// describes every encoding these hashes cover.
const (
	// PurposeTopologyTransaction is Canton's HashPurpose for topology transaction
	// signatures (11).
	PurposeTopologyTransaction int32 = 11
	// PurposePublicKeyFingerprint is Canton's HashPurpose for a public key's fingerprint
	// (12), the hex a party id carries after "::".
	PurposePublicKeyFingerprint int32 = 12
	// PurposePreparedTransaction is the purpose of prepared-transaction hashes (48, the
	// value Canton's external-signing hashing scheme prefixes).
	PurposePreparedTransaction int32 = 48
)

// EncodingVersion is the version byte leading every canonical encoding.
const EncodingVersion byte = 1

// encoder writes the canonical encoding: big-endian integers, length-prefixed byte
// strings (uint32 length), counted lists (uint32 count), times as a presence byte plus
// int64 Unix nanoseconds, decimals as their minimal text.
//
// It is the project's encoding primitives (internal/wire) with the hash encodings' own
// forms of strings, lists, times and decimals, whose layout is a signing contract.
type encoder struct {
	wire.Encoder
	fps map[string][8]byte // id fingerprints of the digest encodings (digest.go)
}

func (e *encoder) i64(v int64) { e.U64(uint64(v)) }
func (e *encoder) str(s string) {
	e.U32(uint32(len(s)))
	e.RawStr(s)
}
func (e *encoder) bytes(b []byte) {
	e.U32(uint32(len(b)))
	e.Raw(b)
}
func (e *encoder) strs(ss []string) {
	e.U32(uint32(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}
func (e *encoder) time(t time.Time) {
	if t.IsZero() {
		e.U8(0)
		return
	}
	e.U8(1)
	e.i64(t.UnixNano())
}

// dec writes d's minimal plain text (d.String()) as a str, formatted straight from the
// decimal's canonical binary form when its coefficient fits 64 bits (no allocation).
func (e *encoder) dec(d money.Decimal) {
	at := len(e.B)
	e.U32(0)
	e.B = appendDecText(e.B, d)
	binary.BigEndian.PutUint32(e.B[at:], uint32(len(e.B)-at-4))
}

// decParts reads the canonical binary form of d (money/binary.go: a uvarint header of
// zig-zag exponent << 2 | big << 1 | negative, then the coefficient as a uvarint): the
// reduced coefficient and exponent, ok false for a coefficient beyond 64 bits.
func decParts(d money.Decimal) (coeff uint64, exp int64, neg, ok bool) {
	var buf [24]byte
	b, err := d.AppendBinary(buf[:0])
	if err != nil {
		return 0, 0, false, false
	}
	h, n := binary.Uvarint(b)
	if n <= 0 || h&2 != 0 {
		return 0, 0, false, false
	}
	u := h >> 2
	coeff, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return 0, 0, false, false
	}
	return coeff, int64(u>>1) ^ -int64(u&1), h&1 != 0, true
}

// appendDecText appends the minimal plain text of d, exactly as d.String() writes it.
func appendDecText(b []byte, d money.Decimal) []byte {
	coeff, exp, neg, ok := decParts(d)
	if !ok || exp > 1000 || exp < -1000 {
		return append(b, d.String()...)
	}
	if neg && coeff != 0 {
		b = append(b, '-')
	}
	var digits [20]byte
	ds := strconv.AppendUint(digits[:0], coeff, 10)
	if exp >= 0 {
		b = append(b, ds...)
		if coeff != 0 {
			for range exp {
				b = append(b, '0')
			}
		}
		return b
	}
	frac := int(-exp)
	if len(ds) > frac {
		b = append(b, ds[:len(ds)-frac]...)
		b = append(b, '.')
		return append(b, ds[len(ds)-frac:]...)
	}
	b = append(b, '0', '.')
	for range frac - len(ds) {
		b = append(b, '0')
	}
	return append(b, ds...)
}

// fractionDigits is d.FractionDigits() read from the binary form when it can be.
func fractionDigits(d money.Decimal) int {
	if _, exp, _, ok := decParts(d); ok {
		if exp < 0 {
			return int(-exp)
		}
		return 0
	}
	return d.FractionDigits()
}

// Command tags in the canonical encoding.
const (
	tagAllocate           byte = 1
	tagCancelAllocation   byte = 2
	tagWithdrawAllocation byte = 3
	tagSettle             byte = 4
	tagTransfer           byte = 5
	tagAcceptTransfer     byte = 6
	tagRejectTransfer     byte = 7
	tagWithdrawTransfer   byte = 8
	tagCreatePreapproval  byte = 9
)

func (s SettlementRef) encode(e *encoder) {
	e.str(s.Executor)
	e.str(s.ID)
}

func (c Allocate) encode(e *encoder) {
	e.U8(tagAllocate)
	c.Settlement.encode(e)
	e.str(c.LegID)
	e.U8(byte(c.Side))
	e.str(c.Instrument)
	e.dec(c.Amount)
	e.time(c.AllocateBefore)
	e.time(c.SettleBefore)
}

func (c CancelAllocation) encode(e *encoder) {
	e.U8(tagCancelAllocation)
	e.str(c.Allocation)
}

func (c WithdrawAllocation) encode(e *encoder) {
	e.U8(tagWithdrawAllocation)
	e.str(c.Allocation)
}

func (c Settle) encode(e *encoder) {
	e.U8(tagSettle)
	c.Settlement.encode(e)
	e.U32(uint32(len(c.Legs)))
	for _, l := range c.Legs {
		e.str(l.Sender)
		e.str(l.Receiver)
		e.str(l.Instrument)
		e.dec(l.Amount)
	}
	e.strs(c.Allocations)
}

func (c Transfer) encode(e *encoder) {
	e.U8(tagTransfer)
	e.str(c.Receiver)
	e.str(c.Instrument)
	e.dec(c.Amount)
	e.time(c.ExecuteBefore)
	e.str(c.Reason)
}

func (c AcceptTransfer) encode(e *encoder) {
	e.U8(tagAcceptTransfer)
	e.str(c.Instruction)
}

func (c RejectTransfer) encode(e *encoder) {
	e.U8(tagRejectTransfer)
	e.str(c.Instruction)
}

func (c WithdrawTransfer) encode(e *encoder) {
	e.U8(tagWithdrawTransfer)
	e.str(c.Instruction)
}

func (c CreatePreapproval) encode(e *encoder) {
	e.U8(tagCreatePreapproval)
	e.str(c.Receiver)
}

// EncodePrepared returns the canonical encoding of a prepared transaction on the ledger
// named ledgerID (ENCODING.md): version, ledger id, prepared id, acting party, command
// id, command, input contract ids, prepared-at and expires-at times.
func EncodePrepared(ledgerID string, p Prepared) []byte {
	e := encoder{Encoder: wire.Encoder{B: make([]byte, 0, 512)}}
	encodePreparedTo(&e, ledgerID, &p)
	return e.B
}

func encodePreparedTo(e *encoder, ledgerID string, p *Prepared) {
	e.U8(EncodingVersion)
	e.str(ledgerID)
	e.str(p.ID)
	e.str(p.ActAs)
	e.str(p.CommandID)
	if p.Command == nil {
		e.U8(0)
	} else {
		p.Command.encode(e)
	}
	e.strs(p.Inputs)
	e.time(p.PreparedAt)
	e.time(p.ExpiresAt)
}

// HashPrepared returns the 32-byte hash a party signs to execute p:
// SHA-256(int32BE(PurposePreparedTransaction) ‖ EncodePrepared(ledgerID, p)).
func HashPrepared(ledgerID string, p Prepared) [32]byte {
	var e encoder
	return hashPreparedTo(&e, ledgerID, &p)
}

// hashPreparedTo is HashPrepared encoding into e's reused buffer.
func hashPreparedTo(e *encoder, ledgerID string, p *Prepared) [32]byte {
	e.B = binary.BigEndian.AppendUint32(e.B[:0], uint32(PurposePreparedTransaction))
	encodePreparedTo(e, ledgerID, p)
	return sha256.Sum256(e.B)
}

// TopologyHash returns Canton's 34-byte multihash of topology content:
// 0x12 0x20 ‖ SHA-256(int32BE(PurposeTopologyTransaction) ‖ content).
func TopologyHash(content []byte) []byte {
	h := sha256.New()
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], uint32(PurposeTopologyTransaction))
	h.Write(p[:])
	h.Write(content)
	out := make([]byte, 2, 34)
	out[0], out[1] = 0x12, 0x20
	return h.Sum(out)
}

// Fingerprint returns Canton's fingerprint of an Ed25519 public key as a party id carries
// it: the hex of the multihash 0x12 0x20 ‖ SHA-256(int32BE(PurposePublicKeyFingerprint) ‖
// the raw 32-byte key), so "1220" and 64 hex digits. Canton forms it so
// (crypto/CryptoKeys.scala, Fingerprint.create: Hash.digest(HashPurpose.PublicKeyFingerprint,
// key bytes, Sha256)); ENCODING.md, "Party ids".
func Fingerprint(pub ed25519.PublicKey) string {
	h := sha256.New()
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], uint32(PurposePublicKeyFingerprint))
	h.Write(p[:])
	h.Write(pub)
	var sum [sha256.Size]byte
	return "1220" + hex.EncodeToString(h.Sum(sum[:0]))
}

// PartyID returns the party id of a hint and a public key: "<hint>::" + Fingerprint(pub).
func PartyID(hint string, pub ed25519.PublicKey) string {
	return hint + "::" + Fingerprint(pub)
}

// Topology transaction kinds of an external party's onboarding, in signing order.
const (
	topoNamespaceDelegation byte = 1
	topoPartyToKeyMapping   byte = 2
	topoPartyToParticipant  byte = 3
)

var topologyDescriptions = map[byte]string{
	topoNamespaceDelegation: "NamespaceDelegation: root certificate of the party's namespace, signed by its key",
	topoPartyToKeyMapping:   "PartyToKeyMapping: the party's Ed25519 signing key (threshold 1)",
	topoPartyToParticipant:  "PartyToParticipant: the party is hosted on the desk's participant with confirmation rights",
}

// topologyContent is the canonical encoding of one onboarding topology transaction.
func topologyContent(ledgerID string, kind byte, hint string, pub ed25519.PublicKey) []byte {
	e := encoder{Encoder: wire.Encoder{B: make([]byte, 0, 256)}}
	e.U8(EncodingVersion)
	e.str(ledgerID)
	e.U8(kind)
	e.U32(1) // serial: the first version of each mapping
	e.str(PartyID(hint, pub))
	e.str(Fingerprint(pub))
	switch kind {
	case topoNamespaceDelegation, topoPartyToKeyMapping:
		e.str("ed25519")
		e.bytes(pub)
	case topoPartyToParticipant:
		e.str("participant::" + ledgerID)
		e.str("confirmation")
	}
	return e.B
}

// OnboardingTopology returns the topology transactions an external party signs to be
// allocated on the ledger named ledgerID: their 34-byte hashes and descriptions.
func OnboardingTopology(ledgerID, hint string, pub ed25519.PublicKey) []TopologyTx {
	kinds := []byte{topoNamespaceDelegation, topoPartyToKeyMapping, topoPartyToParticipant}
	out := make([]TopologyTx, len(kinds))
	for i, k := range kinds {
		out[i] = TopologyTx{Hash: TopologyHash(topologyContent(ledgerID, k, hint, pub)), Description: topologyDescriptions[k]}
	}
	return out
}
