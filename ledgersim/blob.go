package ledgersim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math/bits"
	"slices"
	"strconv"
	"sync"

	"github.com/deskco/rfqdesk/internal/wire"
	"github.com/deskco/rfqdesk/money"
)

// The serialized prepared transaction (the blob Prepare hands out and Execute takes back).
//
// On Canton, PrepareSubmission answers with a PreparedTransaction, a protobuf of the
// transaction tree (every node with its template id, acting parties, stakeholders and
// full argument) and its metadata (submitter info, ledger effective time bounds, the
// input contracts as full instances with their created-event blobs, the disclosed
// contracts the token standard's factory needs), with the hash the party signs over it;
// ExecuteSubmission takes the PreparedTransaction back with the signatures, and keeps no
// prepared id of its own. A token-standard allocation is several kilobytes, most of it
// the input and disclosed contracts.
//
// ledgersim's blob carries the same parts, deterministically (blobVersion layout):
//
//	"LSPT" ‖ u8 blobVersion
//	‖ bytes header           EncodePrepared: the part whose hash the party signs
//	‖ bytes hash             SHA-256(int32BE(48) ‖ header), 32 bytes
//	‖ metadata               str participant ‖ str synchronizer ‖ str transaction uuid
//	                         ‖ time min ledger effective time (prepared at)
//	                         ‖ time max ledger effective time (expires at)
//	‖ nodes                  uvarint count, each: u8 kind ‖ str node id ‖ str template
//	                         ‖ str choice ‖ strs acting ‖ bytes argument
//	‖ input contracts        uvarint count, each: str cid ‖ str template ‖ strs signatories
//	                         ‖ uvarint created offset ‖ bytes arguments ‖ bytes created-event blob
//	‖ disclosed contracts    uvarint count, each: str cid ‖ str template ‖ bytes created-event blob
//	‖ 32 bytes authentication: HMAC-SHA-256 of everything before it, keyed by the ledger
//
// (str, strs and bytes are internal/wire's uvarint-length forms.) The contracts'
// created-event blobs stand for the serialized contract instances Canton carries (the
// Daml-LF value of the arguments and the contract's authentication data): their bytes are
// a keyed SHA-256 stream, of the sizes Splice's contracts have (blobSizes), because the
// desk never reads them and only their size and their integrity matter to it.
//
// Simplification: Canton's hash covers the nodes and the input contracts too, so a
// tampered blob fails the signature check. ledgersim's hash covers the header (command,
// act-as, inputs, ledger effective time and deadlines), as before, and the rest is
// authenticated by the ledger's own key instead: a tampered blob is refused just as
// clearly (ErrInvalid, "altered"), and the hashes every journal and party signed stay what
// they were.

// blobMagic leads every serialized prepared transaction.
const blobMagic = "LSPT"

// blobVersion is the layout version of the serialized prepared transaction.
const blobVersion byte = 1

// blobMACSize is the length of the authentication at the blob's end.
const blobMACSize = sha256.Size

// MaxPreparedBlob bounds a serialized prepared transaction: the ledger never makes a
// larger one (a Settle names at most 256 allocations and a Prepare at most 256 inputs),
// and a client may refuse anything beyond it unread.
const MaxPreparedBlob = 1 << 20

// Created-event blob sizes, as Splice's contracts serialize (approximately): an
// Amulet-style holding with its lock, the registry's rules (its fee and config
// schedule), the allocation and transfer factories, the open mining round.
const (
	blobSizeInput     = 640
	blobSizeRules     = 2048
	blobSizeFactory   = 512
	blobSizeRound     = 768
	blobSizeReference = 384 // an allocation or transfer instruction referenced by the command
)

// Node kinds of the transaction tree.
const (
	nodeExercise byte = 1
	nodeFetch    byte = 2
)

// packageID is the 64-hex package id of a named Daml package, as template ids carry it.
func packageID(name string) string {
	s := sha256.Sum256([]byte("ledgersim package " + name))
	return hex.EncodeToString(s[:])
}

// Template ids of the contracts a prepared transaction names (made once: a template id
// is a package id and a qualified name, the same in every blob).
var (
	pkgHolding    = packageID("splice-api-token-holding-v1")
	pkgAllocation = packageID("splice-api-token-allocation-v1")
	pkgTransfer   = packageID("splice-api-token-transfer-instruction-v1")
	pkgAmulet     = packageID("splice-amulet")

	tplHolding             = pkgHolding + ":Splice.Api.Token.HoldingV1:Holding"
	tplAmulet              = pkgAmulet + ":Splice.Amulet:Amulet"
	tplAllocation          = pkgAllocation + ":Splice.Api.Token.AllocationV1:Allocation"
	tplTransferInstruction = pkgTransfer + ":Splice.Api.Token.TransferInstructionV1:TransferInstruction"
	tplPreapproval         = pkgAmulet + ":Splice.AmuletRules:TransferPreapproval"
	tplAllocationFactory   = pkgAllocation + ":Splice.Api.Token.AllocationInstructionV1:AllocationFactory"
	tplTransferFactory     = pkgTransfer + ":Splice.Api.Token.TransferInstructionV1:TransferFactory"
	tplAmuletRules         = pkgAmulet + ":Splice.AmuletRules:AmuletRules"
	tplOpenRound           = pkgAmulet + ":Splice.Round:OpenMiningRound"
)

func templateOf(kind ContractKind) string {
	switch kind {
	case ContractHolding:
		return tplAmulet
	case ContractAllocation:
		return tplAllocation
	case ContractTransferInstruction:
		return tplTransferInstruction
	case ContractPreapproval:
		return tplPreapproval
	}
	return tplHolding
}

// rootOf is the template and choice the command exercises at the root of its tree.
func rootOf(k CommandKind) (template, choice string) {
	switch k {
	case KindAllocate:
		return tplAllocationFactory, "AllocationFactory_Allocate"
	case KindCancelAllocation:
		return tplAllocation, "Allocation_Cancel"
	case KindWithdrawAllocation:
		return tplAllocation, "Allocation_Withdraw"
	case KindSettle:
		return tplAllocation, "Allocation_ExecuteTransfer"
	case KindTransfer:
		return tplTransferFactory, "TransferFactory_Transfer"
	case KindAcceptTransfer:
		return tplTransferInstruction, "TransferInstruction_Accept"
	case KindRejectTransfer:
		return tplTransferInstruction, "TransferInstruction_Reject"
	case KindWithdrawTransfer:
		return tplTransferInstruction, "TransferInstruction_Withdraw"
	}
	return tplAmuletRules, "AmuletRules_CreateTransferPreapproval"
}

// disclosure is a registry contract a command's factory or choice needs disclosed: its
// name (which derives its contract id), template and created-event blob size.
type disclosure struct {
	name, template string
	size           int
}

// Registry contracts disclosed to prepared transactions, as Splice's registry API hands
// them out.
var (
	discRules = disclosure{"amulet-rules", tplAmuletRules, blobSizeRules}
	discRound = disclosure{"open-round", tplOpenRound, blobSizeRound}
)

// disclosedFor lists the registry contracts a command needs disclosed.
func disclosedFor(k CommandKind) []disclosure {
	switch k {
	case KindAllocate, KindTransfer:
		tpl, _ := rootOf(k)
		return []disclosure{discRules, discRound, {"factory", tpl, blobSizeFactory}}
	case KindAcceptTransfer, KindRejectTransfer, KindWithdrawTransfer, KindSettle:
		return []disclosure{discRules, discRound}
	}
	return []disclosure{discRules}
}

// preparedKinds are the kinds of command a party prepares.
var preparedKinds = []CommandKind{KindAllocate, KindCancelAllocation, KindWithdrawAllocation, KindSettle,
	KindTransfer, KindAcceptTransfer, KindRejectTransfer, KindWithdrawTransfer, KindCreatePreapproval}

// blobKey is the ledger's key authenticating the blobs it serializes: it derives from the
// seed and the ledger id, so a restarted or replayed ledger accepts the blobs it made
// before.
func blobKey(c *Config) []byte {
	var e wire.Encoder
	e.RawStr("ledgersim prepared-transaction key")
	e.U64(c.Seed)
	e.Str(c.LedgerID)
	k := sha256.Sum256(e.B)
	return k[:]
}

// blobKit is what a ledger serializes and authenticates its blobs with, all fixed by its
// configuration and made once (New, Restore): the key, the metadata strings, the
// disclosed registry contracts (the same bytes in every blob of the ledger: their ids,
// templates and created-event blobs), and keyed HMACs to reuse. Safe for concurrent use.
type blobKit struct {
	key          []byte
	participant  string
	synchronizer string
	// disclosed is each kind's disclosed-contracts section (count and entries), whose
	// entries the kinds share.
	disclosed map[CommandKind][][]byte
	macs      sync.Pool // of *blobMAC
}

// blobMAC is a keyed HMAC-SHA-256 with its output and open's scratch, reused through
// blobKit.macs.
type blobMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
	buf []byte
}

// maxKeptScratch bounds a reused blob buffer kept between calls: a larger one (a Settle
// of many allocations) is let go.
const maxKeptScratch = 64 << 10

func newBlobKit(c *Config) *blobKit {
	k := &blobKit{key: blobKey(c), disclosed: map[CommandKind][][]byte{}}
	k.participant = "participant::" + c.LedgerID
	syn := sha256.Sum256([]byte("synchronizer " + c.LedgerID))
	k.synchronizer = "global-domain::1220" + hex.EncodeToString(syn[:])
	entries := map[disclosure][]byte{}
	for _, kind := range preparedKinds {
		ds := disclosedFor(kind)
		sec := make([][]byte, 0, 1+len(ds))
		sec = append(sec, binary.AppendUvarint(nil, uint64(len(ds))))
		for _, d := range ds {
			ent, ok := entries[d]
			if !ok {
				ent = k.appendDisclosed(nil, c.LedgerID, d)
				entries[d] = ent
			}
			sec = append(sec, ent)
		}
		k.disclosed[kind] = sec
	}
	return k
}

// appendDisclosed appends a disclosed contract's entry: str cid ‖ str template ‖ bytes
// created-event blob.
func (k *blobKit) appendDisclosed(b []byte, ledgerID string, d disclosure) []byte {
	e := wire.Encoder{B: b}
	id := sha256.Sum256([]byte(ledgerID + " disclosed " + d.name))
	e.Uvarint(2 + 2*sha256.Size)
	e.B = append(e.B, "00"...)
	e.B = hex.AppendEncode(e.B, id[:])
	e.Str(d.template)
	e.Uvarint(uint64(d.size))
	return appendStream(e.B, k.key, "disclosed ", d.name, d.size)
}

// mac returns a keyed HMAC, reset; put hands it back.
func (k *blobKit) mac() *blobMAC {
	if m, ok := k.macs.Get().(*blobMAC); ok {
		m.h.Reset()
		return m
	}
	return &blobMAC{h: hmac.New(sha256.New, k.key)}
}

func (k *blobKit) put(m *blobMAC) {
	if cap(m.buf) > maxKeptScratch {
		m.buf = nil
	}
	k.macs.Put(m)
}

// appendStream appends n bytes of a SHA-256 stream keyed by key and the label prefix ‖
// name: the stand-in for a serialized contract instance. Block i of the stream is
// SHA-256(seed ‖ u64BE(i)), seed = SHA-256(key ‖ label).
func appendStream(b []byte, key []byte, prefix, name string, n int) []byte {
	var lb [128]byte
	label := append(append(append(lb[:0], key...), prefix...), name...)
	var blk [sha256.Size + 8]byte
	seed := sha256.Sum256(label)
	copy(blk[:], seed[:])
	b = slices.Grow(b, n)
	for i := uint64(0); n > 0; i++ {
		binary.BigEndian.PutUint64(blk[sha256.Size:], i)
		s := sha256.Sum256(blk[:])
		take := min(n, len(s))
		b = append(b, s[:take]...)
		n -= take
	}
	return b
}

// contractArgsTo appends the encoding of a live contract's arguments, as the blob
// carries them, to e and returns the contract's kind, its signatories and its creation
// offset; ok is false (nothing appended) for a contract without arguments.
func (st *state) contractArgsTo(e *wire.Encoder, cid string) (kind ContractKind, sigs [2]string, nsigs int, created int64, ok bool) {
	c := st.contracts[cid]
	if c == nil {
		return "", sigs, 0, 0, false
	}
	switch {
	case c.h != nil:
		h := c.h
		e.Str(h.Owner)
		e.Str(h.Instrument)
		e.Str(h.Admin)
		e.B = appendDecStr(e.B, h.Amount)
		e.Bool(h.Lock != nil)
		if h.Lock != nil {
			e.Strs(h.Lock.Holders)
			e.Time(h.Lock.Expires)
			e.Str(h.Lock.Context)
		}
		return c.kind, [2]string{h.Owner, h.Admin}, 2, h.CreatedOffset, true
	case c.al != nil:
		a := c.al
		e.Str(a.Settlement.Executor)
		e.Str(a.Settlement.ID)
		e.Str(a.LegID)
		e.Str(a.Owner)
		e.U8(byte(a.Side))
		e.Str(a.Instrument)
		e.B = appendDecStr(e.B, a.Amount)
		e.Time(a.AllocateBefore)
		e.Time(a.SettleBefore)
		e.Str(a.Locked)
		return c.kind, [2]string{a.Owner, a.Settlement.Executor}, 2, a.CreatedOffset, true
	case c.ti != nil:
		t := c.ti
		e.Str(t.Sender)
		e.Str(t.Receiver)
		e.Str(t.Instrument)
		e.Str(t.Admin)
		e.B = appendDecStr(e.B, t.Amount)
		e.Time(t.ExecuteBefore)
		e.Str(t.Reason)
		e.Str(t.Locked)
		return c.kind, [2]string{t.Sender, t.Admin}, 2, t.CreatedOffset, true
	case c.pa != nil:
		e.Str(c.pa.Receiver)
		e.Str(c.pa.Provider)
		return c.kind, [2]string{c.pa.Provider}, 1, c.pa.CreatedOffset, true
	}
	return c.kind, sigs, 0, 0, false
}

// appendDecStr appends d's minimal plain text (d.String()) as a wire str.
func appendDecStr(b []byte, d money.Decimal) []byte {
	var tb [48]byte
	t := appendDecText(tb[:0], d)
	b = binary.AppendUvarint(b, uint64(len(t)))
	return append(b, t...)
}

// contractKind is the kind of a contract ("" when it is not live).
func (st *state) contractKind(cid string) ContractKind {
	if c := st.contracts[cid]; c != nil {
		return c.kind
	}
	return ""
}

// blobScratch is serialize's reused buffers (under Ledger.mu): the blob is built in body
// and copied out at its exact size; part holds a length-prefixed part (the header, the
// command, a contract's arguments) while it is measured.
type blobScratch struct {
	body wire.Encoder
	part encoder
}

// serialize builds p's blob from the state at prepare (its input contracts live), under
// the lock: its own parts in the ledger's reused buffer, then copied with the ledger's
// disclosed contracts into one allocation of the blob's exact size, the authentication
// appended.
func (l *Ledger) serialize(p *Prepared) []byte {
	st := l.st
	k := l.blob
	sc := &l.blobBuf
	e, pe := &sc.body, &sc.part
	e.B = append(e.B[:0], blobMagic...)
	e.U8(blobVersion)
	pe.B = pe.B[:0]
	encodePreparedTo(pe, l.cfg.LedgerID, p)
	e.Bytes(pe.B)
	e.Bytes(p.Hash[:])
	// Metadata.
	e.Str(k.participant)
	e.Str(k.synchronizer)
	var lb [128]byte
	uuid := sha256.Sum256(append(append(lb[:0], "transaction "...), p.ID...))
	e.Uvarint(2 * 16)
	e.B = hex.AppendEncode(e.B, uuid[:16])
	e.Time(p.PreparedAt)
	e.Time(p.ExpiresAt)
	// Nodes: the root exercise with the command as its argument, then a fetch or a
	// consuming exercise of every input.
	kind := p.Command.Kind()
	pe.B = pe.B[:0]
	p.Command.encode(pe)
	e.Uvarint(uint64(1 + len(p.Inputs)))
	tpl, choice := rootOf(kind)
	e.U8(nodeExercise)
	e.Str("0")
	e.Str(tpl)
	e.Str(choice)
	actAs := [1]string{p.ActAs}
	e.Strs(actAs[:])
	e.Bytes(pe.B)
	for i, cid := range p.Inputs {
		e.U8(nodeFetch)
		var nb [20]byte
		n := strconv.AppendInt(nb[:0], int64(i+1), 10)
		e.Uvarint(uint64(len(n)))
		e.B = append(e.B, n...)
		e.Str(templateOf(st.contractKind(cid)))
		e.Str("Archive")
		e.Strs(actAs[:])
		e.Uvarint(uint64(len(cid)) + 1) // the cid as bytes
		e.B = append(e.B, cid...)
	}
	// Input contracts, as full instances.
	e.Uvarint(uint64(len(p.Inputs)))
	for _, cid := range p.Inputs {
		pe.B = pe.B[:0]
		ck, sigs, nsigs, created, ok := st.contractArgsTo(&pe.Encoder, cid)
		e.Str(cid)
		e.Str(templateOf(ck))
		if nsigs == 0 {
			e.Strs(nil)
		} else {
			e.Strs(sigs[:nsigs])
		}
		e.Uvarint(uint64(max(created, 0)))
		if ok {
			e.Bytes(pe.B)
		} else {
			e.Bytes(nil)
		}
		size := blobSizeInput
		if ck != ContractHolding {
			size = blobSizeReference
		}
		e.Uvarint(uint64(size))
		e.B = appendStream(e.B, k.key, "contract ", cid, size)
	}
	// Disclosed contracts of the registry: the ledger's, copied straight into the blob.
	sec, ok := k.disclosed[kind]
	if !ok {
		ds := disclosedFor(kind)
		sec = [][]byte{binary.AppendUvarint(nil, uint64(len(ds)))}
		for _, d := range ds {
			sec = append(sec, k.appendDisclosed(nil, l.cfg.LedgerID, d))
		}
	}
	n := len(e.B)
	for _, part := range sec {
		n += len(part)
	}
	out := make([]byte, 0, n+blobMACSize)
	out = append(out, e.B...)
	for _, part := range sec {
		out = append(out, part...)
	}
	if cap(e.B) > maxKeptScratch {
		e.B = nil
	}
	if cap(pe.B) > maxKeptScratch {
		pe.B = nil
	}
	m := k.mac()
	m.h.Write(out)
	out = m.h.Sum(out)
	k.put(m)
	return out
}

// openedBlob is what Execute reads from a blob before it looks the transaction up.
type openedBlob struct {
	id   string
	hash [32]byte
}

// preparedIDOf reads the prepared id a blob names, without authenticating it ("" when
// malformed): for the fault plan's CallInfo.
func preparedIDOf(blob []byte) string {
	if len(blob) < len(blobMagic)+1 || string(blob[:len(blobMagic)]) != blobMagic {
		return ""
	}
	rest := blob[len(blobMagic)+1:]
	header, ok := cutBytes(&rest)
	if !ok {
		return ""
	}
	id, _ := headerPreparedID(header)
	return id
}

// cutBytes reads an internal/wire bytes value (uvarint length+1, 0 for nil, then the
// bytes) from the front of *b, as wire.Decoder.Bytes reads it (a minimal uvarint, the
// length within what is left) but without copying, and advances *b past it; ok is false
// when it is malformed.
func cutBytes(b *[]byte) (v []byte, ok bool) {
	n, k := binary.Uvarint(*b)
	if k <= 0 || k != (bits.Len64(n|1)+6)/7 || (n > 0 && n-1 > uint64(len(*b)-k)) {
		return nil, false
	}
	if n == 0 {
		*b = (*b)[k:]
		return nil, true
	}
	v, *b = (*b)[k:k+int(n-1)], (*b)[k+int(n-1):]
	return v, true
}

// open checks a blob: its layout, its authentication by this ledger's key, and that its
// hash is the hash of its header; it returns the prepared id and hash it names. Every
// refusal is ErrInvalid saying what is wrong.
func (l *Ledger) open(blob []byte) (openedBlob, error) {
	bad := func(format string, args ...any) (openedBlob, error) {
		return openedBlob{}, newErr(CategoryInvalid, "", "prepared transaction: "+format, args...)
	}
	if len(blob) == 0 {
		return bad("empty; hand back the blob Prepare returned")
	}
	if len(blob) > MaxPreparedBlob {
		return bad("%d bytes, more than the %d a prepared transaction may have", len(blob), MaxPreparedBlob)
	}
	if len(blob) < len(blobMagic)+1+blobMACSize || string(blob[:len(blobMagic)]) != blobMagic {
		return bad("not a serialized prepared transaction of this ledger")
	}
	if v := blob[len(blobMagic)]; v != blobVersion {
		return bad("layout version %d; this ledger reads version %d", v, blobVersion)
	}
	body, tag := blob[:len(blob)-blobMACSize], blob[len(blob)-blobMACSize:]
	m := l.blob.mac()
	defer l.blob.put(m)
	m.h.Write(body)
	if !hmac.Equal(m.h.Sum(m.sum[:0]), tag) {
		return bad("altered since prepare, or not made by this ledger: its authentication does not verify")
	}
	rest := body[len(blobMagic)+1:]
	header, ok := cutBytes(&rest)
	hash, ok2 := cutBytes(&rest)
	if !ok || !ok2 || len(hash) != 32 {
		return bad("malformed header")
	}
	var out openedBlob
	copy(out.hash[:], hash)
	m.buf = binary.BigEndian.AppendUint32(m.buf[:0], uint32(PurposePreparedTransaction))
	m.buf = append(m.buf, header...)
	if sha256.Sum256(m.buf) != out.hash {
		return bad("its hash is not the hash of its header")
	}
	id, ok := headerPreparedID(header)
	if !ok {
		return bad("malformed header")
	}
	out.id = id
	return out, nil
}

// headerPreparedID reads the prepared id from an EncodePrepared header: u8 version ‖ str
// ledgerID ‖ str preparedID (u32-length strings).
func headerPreparedID(h []byte) (string, bool) {
	if len(h) < 1 || h[0] != EncodingVersion {
		return "", false
	}
	h = h[1:]
	var id []byte
	for range 2 {
		if len(h) < 4 {
			return "", false
		}
		n := binary.BigEndian.Uint32(h)
		if uint64(len(h)-4) < uint64(n) {
			return "", false
		}
		id, h = h[4:4+n], h[4+n:]
	}
	return string(id), true
}
