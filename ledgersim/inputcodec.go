package ledgersim

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/deskco/rfqdesk/internal/wire"
	"github.com/deskco/rfqdesk/money"
)

// The binary journal form of an Input (ENCODING.md, "Journal records"). A ledger journal
// record is either this form, whose first byte is InputBinaryVersion, or the JSON of the
// Input written before it (first byte '{'); DecodeInput reads both.
//
// Primitives: uvarints and zig-zag varints (minimal: an overlong varint is refused), str
// (uvarint length, then the bytes), time (varint seconds since the zero time, uvarint
// nanoseconds; read back in UTC), dec (money's canonical binary form) and id (a string
// that is one of the ledger's own ids goes in as its raw bytes). The decoder accepts only
// the bytes the encoder writes, so a record it accepts re-encodes to the same bytes.

// InputBinaryVersion is the version of the binary Input encoding and the first byte of
// every record in it. It is below 0x20 and not JSON whitespace, so it never starts a
// JSON record.
const InputBinaryVersion byte = 1

// ErrInputRecord matches every error DecodeInput returns for a record it cannot read.
var ErrInputRecord = errors.New("ledgersim: malformed input record")

// inputKinds numbers the input kinds in the binary form (index + 1; 0: the kind as text).
var inputKinds = [...]InputKind{InputOnboard, InputCompleteOnboarding, InputAllocateInternal,
	InputPrepare, InputExecute, InputSubmit, InputDelist, InputTick, InputListInstrument}

// The optional fields of an Input, one bit each in the record's field mask, in
// declaration order. A string field is present when non-empty, a slice or pointer when
// non-nil.
const (
	inHint = 1 << iota
	inPublicKey
	inPartyID
	inSignatures
	inActAs
	inCommandID
	inCommand
	inPreparedID
	inHash
	inSignature
	inInstrument
	inUpdateID
	inListing
	inAllFields = 1<<iota - 1
)

// The commands of a CommandEnvelope, one bit each in the envelope's mask, in
// declaration order.
const (
	envAllocate = 1 << iota
	envCancelAllocation
	envWithdrawAllocation
	envSettle
	envTransfer
	envAcceptTransfer
	envRejectTransfer
	envWithdrawTransfer
	envCreatePreapproval
	// envInputs is not a command: the envelope's Allocate or Transfer names its input
	// holdings (inputHoldingCids), written after every command's fields.
	envInputs
	envAllFields = 1<<iota - 1
)

// Forms of an id: any string as text, or one of the ledger's own ids as its raw bytes.
const (
	idFormText     = 0 // str
	idFormContract = 1 // "00" + 64 lower-case hex: 32 bytes
	idFormUpdate   = 2 // "1220" + 64 lower-case hex: 32 bytes
	idFormParty    = 3 // <hint> + "::1220" + 64 lower-case hex: str hint, 32 bytes
	idFormPrepared = 4 // "prep-" + 32 lower-case hex: 16 bytes
)

// AppendBinary appends the binary journal form of the input to b (first byte
// InputBinaryVersion). Every field is kept: nil and empty slices apart, a nil Command
// apart from an empty envelope, times to the nanosecond. It fails for a time before year
// 1 or after maxRecordSeconds, and for an amount that is not a finite number.
func (in *Input) AppendBinary(b []byte) ([]byte, error) {
	e := inputEncoder{wire.Encoder{B: append(slices.Grow(b, in.sizeHint()), InputBinaryVersion)}}
	kind := 0
	for i, k := range inputKinds {
		if in.Kind == k {
			kind = i + 1
			break
		}
	}
	e.Uvarint(uint64(kind))
	if kind == 0 {
		e.Str(string(in.Kind))
	}
	e.Time(in.At)
	var mask uint64
	set := func(bit uint64, ok bool) {
		if ok {
			mask |= bit
		}
	}
	set(inHint, in.Hint != "")
	set(inPublicKey, in.PublicKey != nil)
	set(inPartyID, in.PartyID != "")
	set(inSignatures, in.Signatures != nil)
	set(inActAs, in.ActAs != "")
	set(inCommandID, in.CommandID != "")
	set(inCommand, in.Command != nil)
	set(inPreparedID, in.PreparedID != "")
	set(inHash, in.Hash != nil)
	set(inSignature, in.Signature != nil)
	set(inInstrument, in.Instrument != "")
	set(inUpdateID, in.UpdateID != "")
	set(inListing, in.Listing != nil)
	e.Uvarint(mask)
	if mask&inHint != 0 {
		e.Str(in.Hint)
	}
	if mask&inPublicKey != 0 {
		e.Str(string(in.PublicKey))
	}
	if mask&inPartyID != 0 {
		e.id(in.PartyID)
	}
	if mask&inSignatures != 0 {
		e.Uvarint(uint64(len(in.Signatures)))
		for _, s := range in.Signatures {
			e.Bytes(s)
		}
	}
	if mask&inActAs != 0 {
		e.id(in.ActAs)
	}
	if mask&inCommandID != 0 {
		e.Str(in.CommandID)
	}
	if mask&inCommand != 0 {
		e.envelope(in.Command)
	}
	if mask&inPreparedID != 0 {
		e.id(in.PreparedID)
	}
	if mask&inHash != 0 {
		e.Str(string(in.Hash))
	}
	if mask&inSignature != 0 {
		e.Str(string(in.Signature))
	}
	if mask&inInstrument != 0 {
		e.Str(in.Instrument)
	}
	if mask&inUpdateID != 0 {
		e.id(in.UpdateID)
	}
	if mask&inListing != 0 {
		e.listing(in.Listing)
	}
	if err := e.Err(); err != nil {
		return b, fmt.Errorf("ledgersim: encode %s input: %w", in.Kind, err)
	}
	return e.B, nil
}

// sizeHint bounds the length of the input's binary form from above (ids shrink, every
// length and count takes at most a few bytes), so that AppendBinary grows its buffer at
// most once.
func (in *Input) sizeHint() int {
	n := 40 + len(in.Kind) + len(in.Hint) + len(in.PublicKey) + len(in.PartyID) + len(in.ActAs) +
		len(in.CommandID) + len(in.PreparedID) + len(in.Hash) + len(in.Signature) + len(in.Instrument) + len(in.UpdateID)
	if li := in.Listing; li != nil {
		n += 60 + len(li.Spec.ID) + len(li.Spec.Admin) + len(li.Spec.Symbol) + len(li.Spec.DisplaySymbol)
	}
	for _, s := range in.Signatures {
		n += len(s) + 4
	}
	if c := in.Command; c != nil {
		n += 120 // the mask, the ids' form bytes, lengths, sides, amounts and times
		if a := c.Allocate; a != nil {
			n += len(a.Settlement.Executor) + len(a.Settlement.ID) + len(a.LegID) + len(a.Instrument) + 34*len(a.Inputs)
		}
		if s := c.Settle; s != nil {
			n += len(s.Settlement.Executor) + len(s.Settlement.ID)
			for _, l := range s.Legs {
				n += 32 + len(l.Sender) + len(l.Receiver) + len(l.Instrument)
			}
			for _, a := range s.Allocations {
				n += 4 + len(a)
			}
		}
		if t := c.Transfer; t != nil {
			n += len(t.Receiver) + len(t.Instrument) + len(t.Reason) + 34*len(t.Inputs)
		}
		if x := c.CancelAllocation; x != nil {
			n += len(x.Allocation)
		}
		if x := c.WithdrawAllocation; x != nil {
			n += len(x.Allocation)
		}
		if x := c.AcceptTransfer; x != nil {
			n += len(x.Instruction)
		}
		if x := c.RejectTransfer; x != nil {
			n += len(x.Instruction)
		}
		if x := c.WithdrawTransfer; x != nil {
			n += len(x.Instruction)
		}
		if x := c.CreatePreapproval; x != nil {
			n += len(x.Receiver)
		}
	}
	return n
}

// DecodeInput reads one ledger journal record: the binary form (first byte
// InputBinaryVersion) or the JSON form journals held before it. Every error matches
// ErrInputRecord. Decoding never panics, and allocates in proportion to the record's
// length whatever its bytes claim.
func DecodeInput(rec []byte) (Input, error) {
	var in Input
	if len(rec) == 0 {
		return in, fmt.Errorf("%w: empty record", ErrInputRecord)
	}
	switch c := rec[0]; {
	case c == InputBinaryVersion:
		err := in.decodeBinary(rec)
		return in, err
	case c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r':
		return in, fmt.Errorf("%w: binary version %d, this build reads %d", ErrInputRecord, c, InputBinaryVersion)
	}
	return decodeJSONInput(rec)
}

// decodeJSONInput reads the JSON form (apart, so that DecodeInput's Input stays on the
// stack for the binary form).
func decodeJSONInput(rec []byte) (Input, error) {
	var in Input
	if err := json.Unmarshal(rec, &in); err != nil {
		return Input{}, fmt.Errorf("%w: JSON: %w", ErrInputRecord, err)
	}
	return in, nil
}

func (in *Input) decodeBinary(rec []byte) error {
	d := inputDecoder{*wire.NewDecoder(rec)}
	d.Skip(1) // the version
	if kind := d.Uvarint(); kind == 0 {
		k := d.Str()
		for _, known := range inputKinds {
			if InputKind(k) == known {
				d.fail("the known kind %q written as text", k)
			}
		}
		in.Kind = InputKind(k)
	} else if kind <= uint64(len(inputKinds)) {
		in.Kind = inputKinds[kind-1]
	} else {
		d.fail("unknown input kind %d", kind)
	}
	in.At = d.Time()
	mask := d.Uvarint()
	if mask&^inAllFields != 0 {
		d.fail("unknown fields %#x", mask&^inAllFields)
	}
	if mask&inHint != 0 {
		in.Hint = d.nonEmptyStr()
	}
	if mask&inPublicKey != 0 {
		in.PublicKey = d.bytes()
	}
	if mask&inPartyID != 0 {
		in.PartyID = d.nonEmptyID()
	}
	if mask&inSignatures != 0 {
		n := d.Count()
		in.Signatures = make([][]byte, n)
		for i := range in.Signatures {
			in.Signatures[i] = d.Bytes()
		}
	}
	if mask&inActAs != 0 {
		in.ActAs = d.nonEmptyID()
	}
	if mask&inCommandID != 0 {
		in.CommandID = d.nonEmptyStr()
	}
	if mask&inCommand != 0 {
		in.Command = d.envelope()
	}
	if mask&inPreparedID != 0 {
		in.PreparedID = d.nonEmptyID()
	}
	if mask&inHash != 0 {
		in.Hash = d.bytes()
	}
	if mask&inSignature != 0 {
		in.Signature = d.bytes()
	}
	if mask&inInstrument != 0 {
		in.Instrument = d.nonEmptyStr()
	}
	if mask&inUpdateID != 0 {
		in.UpdateID = d.nonEmptyID()
	}
	if mask&inListing != 0 {
		in.Listing = d.listing()
	}
	if d.Err() == nil && d.Left() != 0 {
		d.fail("%d bytes after the input", d.Left())
	}
	if err := d.Err(); err != nil {
		*in = Input{}
		return fmt.Errorf("%w: %w", ErrInputRecord, err)
	}
	return nil
}

// inputEncoder writes the binary Input form with the project's encoding primitives
// (internal/wire), adding the ledger's compact ids; the first error sticks.
type inputEncoder struct {
	wire.Encoder
}

// idForm classifies s by shape: the form it would be written in if its hex digits are
// lower-case hex, where they start and (party ids) where its hint ends.
func idForm(s string) (form byte, hexAt, hintEnd int) {
	switch {
	case len(s) == 66 && s[:2] == "00":
		return idFormContract, 2, 0
	case len(s) == 68 && s[:4] == "1220":
		return idFormUpdate, 4, 0
	case len(s) == 37 && s[:5] == "prep-":
		return idFormPrepared, 5, 0
	case len(s) >= 70 && s[len(s)-70:len(s)-64] == "::1220":
		return idFormParty, len(s) - 64, len(s) - 70
	}
	return idFormText, 0, 0
}

// id writes a string that is often one of the ledger's ids (parties, contracts,
// updates, prepared transactions) in half its length when it is: the form byte, then
// (party ids) the hint and the raw bytes of the hex digits; else as text.
func (e *inputEncoder) id(s string) {
	form, at, hintEnd := idForm(s)
	if form != idFormText {
		start := len(e.B)
		e.B = append(e.B, form)
		if form == idFormParty {
			e.Str(s[:hintEnd])
		}
		var bad byte
		for i := at; i < len(s); i += 2 {
			hi, lo := hexVal[s[i]], hexVal[s[i+1]]
			bad |= hi | lo
			e.B = append(e.B, hi<<4|lo)
		}
		if bad <= 15 {
			return
		}
		e.B = e.B[:start] // not lower-case hex after all
	}
	e.B = append(e.B, idFormText)
	e.Str(s)
}

// isID reports whether s would be written in a compact form.
func isID(s string) bool {
	form, at, _ := idForm(s)
	if form == idFormText {
		return false
	}
	for i := at; i < len(s); i++ {
		if hexVal[s[i]] > 15 {
			return false
		}
	}
	return true
}

func (e *inputEncoder) ids(ss []string) {
	e.Len(len(ss), ss == nil)
	for _, s := range ss {
		e.id(s)
	}
}

func (e *inputEncoder) ref(r SettlementRef) {
	e.id(r.Executor)
	e.Str(r.ID)
}

// envelope writes a command envelope: the mask of the commands it holds, then each.
func (e *inputEncoder) envelope(c *CommandEnvelope) {
	var mask uint64
	set := func(bit uint64, ok bool) {
		if ok {
			mask |= bit
		}
	}
	set(envAllocate, c.Allocate != nil)
	set(envCancelAllocation, c.CancelAllocation != nil)
	set(envWithdrawAllocation, c.WithdrawAllocation != nil)
	set(envSettle, c.Settle != nil)
	set(envTransfer, c.Transfer != nil)
	set(envAcceptTransfer, c.AcceptTransfer != nil)
	set(envRejectTransfer, c.RejectTransfer != nil)
	set(envWithdrawTransfer, c.WithdrawTransfer != nil)
	set(envCreatePreapproval, c.CreatePreapproval != nil)
	set(envInputs, (c.Allocate != nil && c.Allocate.Inputs != nil) || (c.Transfer != nil && c.Transfer.Inputs != nil))
	e.Uvarint(mask)
	if a := c.Allocate; a != nil {
		e.ref(a.Settlement)
		e.Str(a.LegID)
		e.U8(byte(a.Side))
		e.Str(a.Instrument)
		a.Amount.Encode(&e.Encoder)
		e.Time(a.AllocateBefore)
		e.Time(a.SettleBefore)
	}
	if a := c.CancelAllocation; a != nil {
		e.id(a.Allocation)
	}
	if a := c.WithdrawAllocation; a != nil {
		e.id(a.Allocation)
	}
	if s := c.Settle; s != nil {
		e.ref(s.Settlement)
		e.Len(len(s.Legs), s.Legs == nil)
		for _, l := range s.Legs {
			e.id(l.Sender)
			e.id(l.Receiver)
			e.Str(l.Instrument)
			l.Amount.Encode(&e.Encoder)
		}
		e.ids(s.Allocations)
	}
	if t := c.Transfer; t != nil {
		e.id(t.Receiver)
		e.Str(t.Instrument)
		t.Amount.Encode(&e.Encoder)
		e.Time(t.ExecuteBefore)
		e.Str(t.Reason)
	}
	if t := c.AcceptTransfer; t != nil {
		e.id(t.Instruction)
	}
	if t := c.RejectTransfer; t != nil {
		e.id(t.Instruction)
	}
	if t := c.WithdrawTransfer; t != nil {
		e.id(t.Instruction)
	}
	if p := c.CreatePreapproval; p != nil {
		e.id(p.Receiver)
	}
	if mask&envInputs != 0 {
		if a := c.Allocate; a != nil {
			e.ids(a.Inputs)
		}
		if t := c.Transfer; t != nil {
			e.ids(t.Inputs)
		}
	}
}

// inputDecoder reads what inputEncoder writes. The first error sticks, and every read
// after it returns a zero value. Lengths are checked against the bytes left before
// anything is allocated.
type inputDecoder struct {
	wire.Decoder
}

// fail records a malformed-record error at the current offset.
func (d *inputDecoder) fail(format string, args ...any) { d.Failf(format, args...) }

// nonEmptyStr reads a string whose field-mask bit says it is not empty.
func (d *inputDecoder) nonEmptyStr() string {
	s := d.Str()
	if s == "" {
		d.fail("an empty string marked present")
	}
	return s
}

// bytes reads a non-nil byte slice (a copy).
func (d *inputDecoder) bytes() []byte {
	p := d.raw(d.Uvarint())
	if d.Err() != nil {
		return nil
	}
	return append([]byte{}, p...)
}

// raw returns the next n bytes, without copying.
func (d *inputDecoder) raw(n uint64) []byte {
	if n > uint64(d.Left()) {
		d.Fail(wire.ErrTruncated)
		return nil
	}
	return d.Raw(int(n))
}

func (d *inputDecoder) id() string {
	form := d.U8()
	var hint, prefix string
	size := 32
	switch form {
	case idFormText:
		s := d.Str()
		if isID(s) && d.Err() == nil {
			d.fail("id %q written as text", s)
		}
		return s
	case idFormContract:
		prefix = "00"
	case idFormUpdate:
		prefix = "1220"
	case idFormPrepared:
		prefix, size = "prep-", 16
	case idFormParty:
		hint, prefix = d.Str(), "::1220"
	default:
		d.fail("unknown id form %d", form)
		return ""
	}
	p := d.raw(uint64(size))
	if d.Err() != nil {
		return ""
	}
	var buf [128]byte // the id is built here, and copied once into its string
	b := buf[:0]
	if n := len(hint) + len(prefix) + 2*size; n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = append(append(b, hint...), prefix...)
	return string(hex.AppendEncode(b, p))
}

// nonEmptyID reads an id whose field-mask bit says it is not empty.
func (d *inputDecoder) nonEmptyID() string {
	s := d.id()
	if s == "" {
		d.fail("an empty id marked present")
	}
	return s
}

func (d *inputDecoder) ids() []string {
	n, isNil := d.Len()
	if isNil {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.id()
	}
	return out
}

func (d *inputDecoder) ref() SettlementRef {
	return SettlementRef{Executor: d.id(), ID: d.Str()}
}

func (d *inputDecoder) envelope() *CommandEnvelope {
	mask := d.Uvarint()
	if mask&^envAllFields != 0 {
		d.fail("unknown commands %#x", mask&^envAllFields)
		return nil
	}
	// The common case, one command, takes one allocation for the envelope and the command.
	switch mask {
	case envAllocate:
		return envelope(d.allocate(), false)
	case envCancelAllocation:
		return envelope(CancelAllocation{Allocation: d.id()}, false)
	case envWithdrawAllocation:
		return envelope(WithdrawAllocation{Allocation: d.id()}, false)
	case envSettle:
		return envelope(d.settle(), false)
	case envTransfer:
		return envelope(d.transfer(), false)
	case envAcceptTransfer:
		return envelope(AcceptTransfer{Instruction: d.id()}, false)
	case envRejectTransfer:
		return envelope(RejectTransfer{Instruction: d.id()}, false)
	case envWithdrawTransfer:
		return envelope(WithdrawTransfer{Instruction: d.id()}, false)
	case envCreatePreapproval:
		return envelope(CreatePreapproval{Receiver: d.id()}, false)
	}
	c := &CommandEnvelope{}
	if mask&envAllocate != 0 {
		a := d.allocate()
		c.Allocate = &a
	}
	if mask&envCancelAllocation != 0 {
		c.CancelAllocation = &CancelAllocation{Allocation: d.id()}
	}
	if mask&envWithdrawAllocation != 0 {
		c.WithdrawAllocation = &WithdrawAllocation{Allocation: d.id()}
	}
	if mask&envSettle != 0 {
		s := d.settle()
		c.Settle = &s
	}
	if mask&envTransfer != 0 {
		t := d.transfer()
		c.Transfer = &t
	}
	if mask&envAcceptTransfer != 0 {
		c.AcceptTransfer = &AcceptTransfer{Instruction: d.id()}
	}
	if mask&envRejectTransfer != 0 {
		c.RejectTransfer = &RejectTransfer{Instruction: d.id()}
	}
	if mask&envWithdrawTransfer != 0 {
		c.WithdrawTransfer = &WithdrawTransfer{Instruction: d.id()}
	}
	if mask&envCreatePreapproval != 0 {
		c.CreatePreapproval = &CreatePreapproval{Receiver: d.id()}
	}
	if mask&envInputs != 0 {
		d.inputs(c)
	}
	return c
}

// inputs reads the input holdings of the envelope's Allocate and Transfer (the
// envInputs bit), refusing the bit where the encoder would not set it.
func (d *inputDecoder) inputs(c *CommandEnvelope) {
	if c.Allocate == nil && c.Transfer == nil {
		d.fail("input holdings without an allocate or a transfer")
		return
	}
	some := false
	if c.Allocate != nil {
		c.Allocate.Inputs = d.ids()
		some = some || c.Allocate.Inputs != nil
	}
	if c.Transfer != nil {
		c.Transfer.Inputs = d.ids()
		some = some || c.Transfer.Inputs != nil
	}
	if !some {
		d.fail("input holdings bit set with no input holdings")
	}
}

func (d *inputDecoder) allocate() Allocate {
	return Allocate{Settlement: d.ref(), LegID: d.Str(), Side: Side(d.U8()), Instrument: d.Str(),
		Amount: money.ReadDecimal(&d.Decoder), AllocateBefore: d.Time(), SettleBefore: d.Time()}
}

func (d *inputDecoder) settle() Settle {
	s := Settle{Settlement: d.ref()}
	if n, isNil := d.Len(); !isNil {
		s.Legs = make([]Leg, n)
		for i := range s.Legs {
			s.Legs[i] = Leg{Sender: d.id(), Receiver: d.id(), Instrument: d.Str(), Amount: money.ReadDecimal(&d.Decoder)}
		}
	}
	s.Allocations = d.ids()
	return s
}

func (d *inputDecoder) transfer() Transfer {
	return Transfer{Receiver: d.id(), Instrument: d.Str(), Amount: money.ReadDecimal(&d.Decoder), ExecuteBefore: d.Time(), Reason: d.Str()}
}

// listing writes a Listing: str id, str admin, str symbol, str display symbol, uvarint
// decimals, bool native, dec reservoir.
func (e *inputEncoder) listing(li *Listing) {
	s := &li.Spec
	e.Str(s.ID)
	e.Str(s.Admin)
	e.Str(s.Symbol)
	e.Str(s.DisplaySymbol)
	if s.Decimals < 0 || s.Decimals > money.MaxFractionDigits {
		e.Fail(fmt.Errorf("decimals %d outside 0..%d", s.Decimals, money.MaxFractionDigits))
		return
	}
	e.Uvarint(uint64(s.Decimals))
	e.Bool(s.Native)
	li.Reservoir.Encode(&e.Encoder)
}

func (d *inputDecoder) listing() *Listing {
	li := &Listing{Spec: InstrumentSpec{ID: d.Str(), Admin: d.Str(), Symbol: d.Str(), DisplaySymbol: d.Str()}}
	dec := d.Uvarint()
	if dec > money.MaxFractionDigits {
		d.fail("listing decimals %d above %d", dec, money.MaxFractionDigits)
	}
	li.Spec.Decimals = int(min(dec, money.MaxFractionDigits))
	li.Spec.Native = d.Bool()
	li.Reservoir = money.ReadDecimal(&d.Decoder)
	return li
}
