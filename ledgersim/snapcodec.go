package ledgersim

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// snapWriter writes the snapshot encoding (ENCODING.md, "Snapshots"): unsigned varints,
// zig-zag signed varints, length-prefixed strings, and party and instrument ids interned
// on first use so that each is written once.
type snapWriter struct {
	b    []byte
	syms map[string]uint64 // interned id → its index + 1
}

func (w *snapWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *snapWriter) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *snapWriter) u8(v byte)        { w.b = append(w.b, v) }
func (w *snapWriter) u64(v uint64)     { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *snapWriter) boolean(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}
func (w *snapWriter) str(s string) {
	w.uvarint(uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *snapWriter) bytes(b []byte) {
	w.uvarint(uint64(len(b)))
	w.b = append(w.b, b...)
}

// Forms of a contract or update id in the snapshot encoding (cid).
const (
	idText     byte = 0 // any other string: str
	idContract byte = 1 // "00" + 64 lower-case hex digits: the 32 bytes
	idUpdate   byte = 2 // "1220" + 64 lower-case hex digits: the 32 bytes
)

// cid writes a contract or update id: the 32 random bytes of the ledger's own ids, any
// other string as text.
func (w *snapWriter) cid(s string) {
	form, h := idText, ""
	switch {
	case len(s) == 66 && s[:2] == "00":
		form, h = idContract, s[2:]
	case len(s) == 68 && s[:4] == "1220":
		form, h = idUpdate, s[4:]
	}
	if form != idText {
		var raw [32]byte
		if decodeLowerHex(raw[:], h) {
			w.u8(form)
			w.b = append(w.b, raw[:]...)
			return
		}
	}
	w.u8(idText)
	w.str(s)
}

// hexVal maps a lower-case hex digit to its value and every other byte to 0xff.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

// decodeLowerHex decodes len(dst)*2 lower-case hex digits of s into dst; false when s
// holds anything else (upper-case digits too, which would not round-trip).
func decodeLowerHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, lo := hexVal[s[2*i]], hexVal[s[2*i+1]]
		if hi > 15 || lo > 15 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func (w *snapWriter) cids(ss []string) {
	w.uvarint(uint64(len(ss)))
	for _, s := range ss {
		w.cid(s)
	}
}

// sym writes an interned id: 0 and the string the first time, else its index + 1.
func (w *snapWriter) sym(s string) {
	if i, ok := w.syms[s]; ok {
		w.uvarint(i)
		return
	}
	if w.syms == nil {
		w.syms = map[string]uint64{}
	}
	w.syms[s] = uint64(len(w.syms)) + 1
	w.uvarint(0)
	w.str(s)
}

func (w *snapWriter) symList(ss []string) {
	w.uvarint(uint64(len(ss)))
	for _, s := range ss {
		w.sym(s)
	}
}

// time writes 0 for the zero time, else 1, the Unix seconds and the nanoseconds: exact
// for every time, unlike Unix nanoseconds.
func (w *snapWriter) time(t time.Time) {
	if t.IsZero() {
		w.u8(0)
		return
	}
	w.u8(1)
	w.varint(t.Unix())
	w.uvarint(uint64(t.Nanosecond()))
}

func (w *snapWriter) dec(d money.Decimal) { w.str(d.String()) }

// snapReader reads what snapWriter wrote. The first error sticks: every later read
// returns zero values, and err reports where decoding failed.
type snapReader struct {
	b    []byte
	off  int
	err  error
	syms []string
}

func (r *snapReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %s", r.off, fmt.Sprintf(format, args...))
	}
	r.off = len(r.b)
}

func (r *snapReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad unsigned varint")
		return 0
	}
	r.off += n
	return v
}

func (r *snapReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.off += n
	return v
}

// count reads a list length, refusing one that cannot fit in the bytes left (each
// element takes at least one byte), so a damaged length cannot allocate without bound.
func (r *snapReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) {
		r.fail("list of %d elements is longer than the %d bytes left", n, len(r.b)-r.off)
		return 0
	}
	return int(n)
}

func (r *snapReader) u8() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *snapReader) u64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.off < 8 {
		r.fail("unexpected end")
		return 0
	}
	v := binary.BigEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *snapReader) boolean() bool {
	switch v := r.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail("bad boolean %d", v)
		return false
	}
}

func (r *snapReader) raw() []byte {
	n := r.count()
	if r.err != nil {
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *snapReader) str() string { return string(r.raw()) }

func (r *snapReader) bytes() []byte {
	b := r.raw()
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

func (r *snapReader) cid() string {
	var prefix string
	switch form := r.u8(); form {
	case idText:
		return r.str()
	case idContract:
		prefix = "00"
	case idUpdate:
		prefix = "1220"
	default:
		r.fail("bad id form %d", form)
		return ""
	}
	if len(r.b)-r.off < 32 {
		r.fail("unexpected end")
		return ""
	}
	s := hexID(prefix, r.b[r.off:r.off+32])
	r.off += 32
	return s
}

// cids reads a list of ids into one backing array of arena (which it extends),
// so that the lists of one update cost one allocation.
func (r *snapReader) cids(arena *[]string) []string {
	n := r.count()
	if n == 0 {
		return nil
	}
	start := len(*arena)
	for i := 0; i < n && r.err == nil; i++ {
		*arena = append(*arena, r.cid())
	}
	a := *arena
	return a[start:len(a):len(a)]
}

func (r *snapReader) sym() string {
	i := r.uvarint()
	if i == 0 {
		s := r.str()
		r.syms = append(r.syms, s)
		return s
	}
	if i > uint64(len(r.syms)) {
		r.fail("reference to id %d of %d", i, len(r.syms))
		return ""
	}
	return r.syms[i-1]
}

func (r *snapReader) symList() []string {
	n := r.count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.sym()
	}
	return out
}

func (r *snapReader) time() time.Time {
	switch v := r.u8(); v {
	case 0:
		return time.Time{}
	case 1:
		sec := r.varint()
		ns := r.uvarint()
		if ns >= 1e9 {
			r.fail("nanoseconds %d out of range", ns)
			return time.Time{}
		}
		return time.Unix(sec, int64(ns)).UTC()
	default:
		r.fail("bad time tag %d", v)
		return time.Time{}
	}
}

func (r *snapReader) dec() money.Decimal {
	s := r.raw()
	if r.err != nil {
		return money.Zero
	}
	d, err := money.Parse(string(s))
	if err != nil {
		r.fail("amount: %v", err)
		return money.Zero
	}
	return d
}

// ---- commands ----

func (w *snapWriter) command(c Command) error {
	switch v := c.(type) {
	case Allocate:
		w.u8(tagAllocate)
		w.sym(v.Settlement.Executor)
		w.str(v.Settlement.ID)
		w.str(v.LegID)
		w.u8(byte(v.Side))
		w.sym(v.Instrument)
		w.dec(v.Amount)
		w.time(v.AllocateBefore)
		w.time(v.SettleBefore)
	case CancelAllocation:
		w.u8(tagCancelAllocation)
		w.cid(v.Allocation)
	case WithdrawAllocation:
		w.u8(tagWithdrawAllocation)
		w.cid(v.Allocation)
	case Settle:
		w.u8(tagSettle)
		w.sym(v.Settlement.Executor)
		w.str(v.Settlement.ID)
		w.uvarint(uint64(len(v.Legs)))
		for _, l := range v.Legs {
			w.sym(l.Sender)
			w.sym(l.Receiver)
			w.sym(l.Instrument)
			w.dec(l.Amount)
		}
		w.cids(v.Allocations)
	case Transfer:
		w.u8(tagTransfer)
		w.sym(v.Receiver)
		w.sym(v.Instrument)
		w.dec(v.Amount)
		w.time(v.ExecuteBefore)
		w.str(v.Reason)
	case AcceptTransfer:
		w.u8(tagAcceptTransfer)
		w.cid(v.Instruction)
	case RejectTransfer:
		w.u8(tagRejectTransfer)
		w.cid(v.Instruction)
	case WithdrawTransfer:
		w.u8(tagWithdrawTransfer)
		w.cid(v.Instruction)
	case CreatePreapproval:
		w.u8(tagCreatePreapproval)
		w.sym(v.Receiver)
	default:
		return fmt.Errorf("unknown command %T", c)
	}
	return nil
}

func (r *snapReader) command() Command {
	switch tag := r.u8(); tag {
	case tagAllocate:
		var a Allocate
		a.Settlement.Executor = r.sym()
		a.Settlement.ID = r.str()
		a.LegID = r.str()
		a.Side = Side(r.u8())
		a.Instrument = r.sym()
		a.Amount = r.dec()
		a.AllocateBefore = r.time()
		a.SettleBefore = r.time()
		return a
	case tagCancelAllocation:
		return CancelAllocation{Allocation: r.cid()}
	case tagWithdrawAllocation:
		return WithdrawAllocation{Allocation: r.cid()}
	case tagSettle:
		var s Settle
		s.Settlement.Executor = r.sym()
		s.Settlement.ID = r.str()
		if n := r.count(); n > 0 {
			s.Legs = make([]Leg, n)
			for i := range s.Legs {
				s.Legs[i] = Leg{Sender: r.sym(), Receiver: r.sym(), Instrument: r.sym(), Amount: r.dec()}
			}
		}
		var arena []string
		s.Allocations = r.cids(&arena)
		return s
	case tagTransfer:
		return Transfer{Receiver: r.sym(), Instrument: r.sym(), Amount: r.dec(), ExecuteBefore: r.time(), Reason: r.str()}
	case tagAcceptTransfer:
		return AcceptTransfer{Instruction: r.cid()}
	case tagRejectTransfer:
		return RejectTransfer{Instruction: r.cid()}
	case tagWithdrawTransfer:
		return WithdrawTransfer{Instruction: r.cid()}
	case tagCreatePreapproval:
		return CreatePreapproval{Receiver: r.sym()}
	default:
		r.fail("unknown command tag %d", tag)
		return nil
	}
}
