package ledgersim

import (
	"fmt"

	"github.com/deskco/rfqdesk/internal/wire"
	"github.com/deskco/rfqdesk/money"
)

// snapWriter writes the snapshot encoding (ENCODING.md, "Snapshots") with the project's
// encoding primitives (internal/wire), adding what is the ledger's own: party and instrument
// ids interned on first use so that each is written once, and contract and update ids as
// their 32 random bytes.
type snapWriter struct {
	wire.Encoder
	syms map[string]uint64 // interned id → its index + 1
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
			w.U8(form)
			w.Raw(raw[:])
			return
		}
	}
	w.U8(idText)
	w.Str(s)
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
	w.Uvarint(uint64(len(ss)))
	for _, s := range ss {
		w.cid(s)
	}
}

// sym writes an interned id: 0 and the string the first time, else its index + 1.
func (w *snapWriter) sym(s string) {
	if i, ok := w.syms[s]; ok {
		w.Uvarint(i)
		return
	}
	if w.syms == nil {
		w.syms = map[string]uint64{}
	}
	w.syms[s] = uint64(len(w.syms)) + 1
	w.Uvarint(0)
	w.Str(s)
}

func (w *snapWriter) symList(ss []string) {
	w.Uvarint(uint64(len(ss)))
	for _, s := range ss {
		w.sym(s)
	}
}

// dec writes a decimal in money's canonical binary form.
func (w *snapWriter) dec(d money.Decimal) { d.Encode(&w.Encoder) }

// snapReader reads what snapWriter wrote. The first error sticks: every later read
// returns zero values, and Err reports where decoding failed.
type snapReader struct {
	wire.Decoder
	syms []string
}

// fail records a malformed-snapshot error at the current offset.
func (r *snapReader) fail(format string, args ...any) { r.Failf(format, args...) }

func (r *snapReader) dec() money.Decimal { return money.ReadDecimal(&r.Decoder) }

func (r *snapReader) cid() string {
	var prefix string
	switch form := r.U8(); form {
	case idText:
		return r.Str()
	case idContract:
		prefix = "00"
	case idUpdate:
		prefix = "1220"
	default:
		r.fail("bad id form %d", form)
		return ""
	}
	raw := r.Raw(32)
	if raw == nil {
		return ""
	}
	return hexID(prefix, raw)
}

// cids reads a list of ids into one backing array of arena (which it extends),
// so that the lists of one update cost one allocation.
func (r *snapReader) cids(arena *[]string) []string {
	n := r.Count()
	if n == 0 {
		return nil
	}
	start := len(*arena)
	for i := 0; i < n && r.Err() == nil; i++ {
		*arena = append(*arena, r.cid())
	}
	a := *arena
	return a[start:len(a):len(a)]
}

func (r *snapReader) sym() string {
	i := r.Uvarint()
	if i == 0 {
		s := r.Str()
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
	n := r.Count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.sym()
	}
	return out
}

// ---- commands ----

func (w *snapWriter) command(c Command) error {
	switch v := c.(type) {
	case Allocate:
		w.U8(tagAllocate)
		w.sym(v.Settlement.Executor)
		w.Str(v.Settlement.ID)
		w.Str(v.LegID)
		w.U8(byte(v.Side))
		w.sym(v.Instrument)
		w.dec(v.Amount)
		w.Time(v.AllocateBefore)
		w.Time(v.SettleBefore)
	case CancelAllocation:
		w.U8(tagCancelAllocation)
		w.cid(v.Allocation)
	case WithdrawAllocation:
		w.U8(tagWithdrawAllocation)
		w.cid(v.Allocation)
	case Settle:
		w.U8(tagSettle)
		w.sym(v.Settlement.Executor)
		w.Str(v.Settlement.ID)
		w.Uvarint(uint64(len(v.Legs)))
		for _, l := range v.Legs {
			w.sym(l.Sender)
			w.sym(l.Receiver)
			w.sym(l.Instrument)
			w.dec(l.Amount)
		}
		w.cids(v.Allocations)
	case Transfer:
		w.U8(tagTransfer)
		w.sym(v.Receiver)
		w.sym(v.Instrument)
		w.dec(v.Amount)
		w.Time(v.ExecuteBefore)
		w.Str(v.Reason)
	case AcceptTransfer:
		w.U8(tagAcceptTransfer)
		w.cid(v.Instruction)
	case RejectTransfer:
		w.U8(tagRejectTransfer)
		w.cid(v.Instruction)
	case WithdrawTransfer:
		w.U8(tagWithdrawTransfer)
		w.cid(v.Instruction)
	case CreatePreapproval:
		w.U8(tagCreatePreapproval)
		w.sym(v.Receiver)
	default:
		return fmt.Errorf("unknown command %T", c)
	}
	return nil
}

func (r *snapReader) command() Command {
	switch tag := r.U8(); tag {
	case tagAllocate:
		var a Allocate
		a.Settlement.Executor = r.sym()
		a.Settlement.ID = r.Str()
		a.LegID = r.Str()
		a.Side = Side(r.U8())
		a.Instrument = r.sym()
		a.Amount = r.dec()
		a.AllocateBefore = r.Time()
		a.SettleBefore = r.Time()
		return a
	case tagCancelAllocation:
		return CancelAllocation{Allocation: r.cid()}
	case tagWithdrawAllocation:
		return WithdrawAllocation{Allocation: r.cid()}
	case tagSettle:
		var s Settle
		s.Settlement.Executor = r.sym()
		s.Settlement.ID = r.Str()
		if n := r.Count(); n > 0 {
			s.Legs = make([]Leg, n)
			for i := range s.Legs {
				s.Legs[i] = Leg{Sender: r.sym(), Receiver: r.sym(), Instrument: r.sym(), Amount: r.dec()}
			}
		}
		var arena []string
		s.Allocations = r.cids(&arena)
		return s
	case tagTransfer:
		return Transfer{Receiver: r.sym(), Instrument: r.sym(), Amount: r.dec(), ExecuteBefore: r.Time(), Reason: r.Str()}
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
