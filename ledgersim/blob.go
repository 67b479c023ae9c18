package ledgersim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/deskco/rfqdesk/internal/wire"
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

// Template ids of the contracts a prepared transaction names.
var (
	pkgHolding    = packageID("splice-api-token-holding-v1")
	pkgAllocation = packageID("splice-api-token-allocation-v1")
	pkgTransfer   = packageID("splice-api-token-transfer-instruction-v1")
	pkgAmulet     = packageID("splice-amulet")
)

func templateOf(kind ContractKind) string {
	switch kind {
	case ContractHolding:
		return pkgAmulet + ":Splice.Amulet:Amulet"
	case ContractAllocation:
		return pkgAllocation + ":Splice.Api.Token.AllocationV1:Allocation"
	case ContractTransferInstruction:
		return pkgTransfer + ":Splice.Api.Token.TransferInstructionV1:TransferInstruction"
	case ContractPreapproval:
		return pkgAmulet + ":Splice.AmuletRules:TransferPreapproval"
	}
	return pkgHolding + ":Splice.Api.Token.HoldingV1:Holding"
}

// rootOf is the template and choice the command exercises at the root of its tree.
func rootOf(k CommandKind) (template, choice string) {
	switch k {
	case KindAllocate:
		return pkgAllocation + ":Splice.Api.Token.AllocationInstructionV1:AllocationFactory", "AllocationFactory_Allocate"
	case KindCancelAllocation:
		return templateOf(ContractAllocation), "Allocation_Cancel"
	case KindWithdrawAllocation:
		return templateOf(ContractAllocation), "Allocation_Withdraw"
	case KindSettle:
		return templateOf(ContractAllocation), "Allocation_ExecuteTransfer"
	case KindTransfer:
		return pkgTransfer + ":Splice.Api.Token.TransferInstructionV1:TransferFactory", "TransferFactory_Transfer"
	case KindAcceptTransfer:
		return templateOf(ContractTransferInstruction), "TransferInstruction_Accept"
	case KindRejectTransfer:
		return templateOf(ContractTransferInstruction), "TransferInstruction_Reject"
	case KindWithdrawTransfer:
		return templateOf(ContractTransferInstruction), "TransferInstruction_Withdraw"
	}
	return pkgAmulet + ":Splice.AmuletRules:AmuletRules", "AmuletRules_CreateTransferPreapproval"
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
	discRules = disclosure{"amulet-rules", pkgAmulet + ":Splice.AmuletRules:AmuletRules", blobSizeRules}
	discRound = disclosure{"open-round", pkgAmulet + ":Splice.Round:OpenMiningRound", blobSizeRound}
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

// stream appends n bytes of a SHA-256 stream keyed by key and label: the stand-in for a
// serialized contract instance.
func stream(b []byte, key []byte, label string, n int) []byte {
	var seed [sha256.Size]byte
	h := sha256.New()
	h.Write(key)
	h.Write([]byte(label))
	h.Sum(seed[:0])
	var blk [sha256.Size + 8]byte
	copy(blk[:], seed[:])
	for i := uint64(0); n > 0; i++ {
		binary.BigEndian.PutUint64(blk[sha256.Size:], i)
		s := sha256.Sum256(blk[:])
		take := min(n, len(s))
		b = append(b, s[:take]...)
		n -= take
	}
	return b
}

// contractArgs is the encoding of a live contract's arguments as the blob carries them,
// with its signatories.
func (st *state) contractArgs(cid string) (kind ContractKind, args []byte, signatories []string, created int64) {
	c := st.contracts[cid]
	if c == nil {
		return "", nil, nil, 0
	}
	var e wire.Encoder
	switch {
	case c.h != nil:
		h := c.h
		e.Str(h.Owner)
		e.Str(h.Instrument)
		e.Str(h.Admin)
		e.Str(h.Amount.String())
		e.Bool(h.Lock != nil)
		if h.Lock != nil {
			e.Strs(h.Lock.Holders)
			e.Time(h.Lock.Expires)
			e.Str(h.Lock.Context)
		}
		return c.kind, e.B, []string{h.Owner, h.Admin}, h.CreatedOffset
	case c.al != nil:
		a := c.al
		e.Str(a.Settlement.Executor)
		e.Str(a.Settlement.ID)
		e.Str(a.LegID)
		e.Str(a.Owner)
		e.U8(byte(a.Side))
		e.Str(a.Instrument)
		e.Str(a.Amount.String())
		e.Time(a.AllocateBefore)
		e.Time(a.SettleBefore)
		e.Str(a.Locked)
		return c.kind, e.B, []string{a.Owner, a.Settlement.Executor}, a.CreatedOffset
	case c.ti != nil:
		t := c.ti
		e.Str(t.Sender)
		e.Str(t.Receiver)
		e.Str(t.Instrument)
		e.Str(t.Admin)
		e.Str(t.Amount.String())
		e.Time(t.ExecuteBefore)
		e.Str(t.Reason)
		e.Str(t.Locked)
		return c.kind, e.B, []string{t.Sender, t.Admin}, t.CreatedOffset
	case c.pa != nil:
		e.Str(c.pa.Receiver)
		e.Str(c.pa.Provider)
		return c.kind, e.B, []string{c.pa.Provider}, c.pa.CreatedOffset
	}
	return c.kind, nil, nil, 0
}

// serialize builds p's blob from the state at prepare (its input contracts live).
func (l *Ledger) serialize(p *Prepared) []byte {
	st := l.st
	key := l.blobKey
	e := wire.Encoder{B: make([]byte, 0, l.blobSizeHint(p))}
	e.RawStr(blobMagic)
	e.U8(blobVersion)
	var he encoder
	encodePreparedTo(&he, l.cfg.LedgerID, p)
	e.Bytes(he.B)
	e.Bytes(p.Hash[:])
	// Metadata.
	e.Str("participant::" + l.cfg.LedgerID)
	sync := sha256.Sum256([]byte("synchronizer " + l.cfg.LedgerID))
	e.Str("global-domain::1220" + hex.EncodeToString(sync[:]))
	uuid := sha256.Sum256([]byte("transaction " + p.ID))
	e.Str(hex.EncodeToString(uuid[:16]))
	e.Time(p.PreparedAt)
	e.Time(p.ExpiresAt)
	// Nodes: the root exercise with the command as its argument, then a fetch or a
	// consuming exercise of every input.
	kind := p.Command.Kind()
	var ce encoder
	p.Command.encode(&ce)
	e.Uvarint(uint64(1 + len(p.Inputs)))
	tpl, choice := rootOf(kind)
	e.U8(nodeExercise)
	e.Str("0")
	e.Str(tpl)
	e.Str(choice)
	e.Strs([]string{p.ActAs})
	e.Bytes(ce.B)
	for i, cid := range p.Inputs {
		ck, _, _, _ := st.contractArgs(cid)
		e.U8(nodeFetch)
		e.Str(strconv.Itoa(i + 1))
		e.Str(templateOf(ck))
		e.Str("Archive")
		e.Strs([]string{p.ActAs})
		e.Bytes([]byte(cid))
	}
	// Input contracts, as full instances.
	e.Uvarint(uint64(len(p.Inputs)))
	for _, cid := range p.Inputs {
		ck, args, sigs, created := st.contractArgs(cid)
		e.Str(cid)
		e.Str(templateOf(ck))
		e.Strs(sigs)
		e.Uvarint(uint64(max(created, 0)))
		e.Bytes(args)
		size := blobSizeInput
		if ck != ContractHolding {
			size = blobSizeReference
		}
		e.Uvarint(uint64(size))
		e.B = stream(e.B, key, "contract "+cid, size)
	}
	// Disclosed contracts of the registry.
	ds := disclosedFor(kind)
	e.Uvarint(uint64(len(ds)))
	for _, d := range ds {
		id := sha256.Sum256([]byte(l.cfg.LedgerID + " disclosed " + d.name))
		e.Str("00" + hex.EncodeToString(id[:]))
		e.Str(d.template)
		e.Uvarint(uint64(d.size))
		e.B = stream(e.B, key, "disclosed "+d.name, d.size)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(e.B)
	return mac.Sum(e.B)
}

// blobSizeHint is about the size of p's blob, for one allocation.
func (l *Ledger) blobSizeHint(p *Prepared) int {
	return 1024 + len(p.Inputs)*(blobSizeInput+256) + blobSizeRules + blobSizeRound + blobSizeFactory + 512
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
	d := wire.NewDecoder(blob[len(blobMagic)+1:])
	header := d.Bytes()
	if d.Err() != nil {
		return ""
	}
	id, _ := headerPreparedID(header)
	return id
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
	mac := hmac.New(sha256.New, l.blobKey)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), tag) {
		return bad("altered since prepare, or not made by this ledger: its authentication does not verify")
	}
	d := wire.NewDecoder(body[len(blobMagic)+1:])
	header, hash := d.Bytes(), d.Bytes()
	if d.Err() != nil || len(hash) != 32 {
		return bad("malformed header")
	}
	var out openedBlob
	copy(out.hash[:], hash)
	var pe encoder
	pe.B = binary.BigEndian.AppendUint32(pe.B, uint32(PurposePreparedTransaction))
	pe.Raw(header)
	if sha256.Sum256(pe.B) != out.hash {
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
	var id string
	for range 2 {
		if len(h) < 4 {
			return "", false
		}
		n := binary.BigEndian.Uint32(h)
		if uint64(len(h)-4) < uint64(n) {
			return "", false
		}
		id, h = string(h[4:4+n]), h[4+n:]
	}
	return id, true
}
