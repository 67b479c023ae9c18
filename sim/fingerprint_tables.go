package sim

import (
	"encoding/binary"
	"hash/maphash"
	"io"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// The caller's idempotency records (up to 10,000 a party) and scorecard facts (up to
// 20,000 a maker) are in every refusal's fingerprint. Encoded as JSON they were a tenth of
// a 3-hour run, growing with the tables; these write every field of every record and fact
// in a fixed binary form instead (length-prefixed strings and bytes, times as Unix
// nanoseconds), so the fingerprint still changes with any field of any of them
// (fingerprint_tables_test.go holds the field lists to the structs). SHA-256 of a full
// scope's answers was still a tenth of a 6-hour run: the tables are hashed with maphash,
// whose 64-bit sum joins the fingerprint (a refusal that changed them and kept the sum
// would need a 64-bit collision).

// fpWriter appends a fingerprint's binary pieces to a buffer it writes out when full.
type fpWriter struct {
	w   io.Writer
	buf []byte
	// Through fpScratch.writer: the tables go to mh (64-bit maphash, ten times SHA-256's
	// speed on a scope's 10,000 answers), whose sum goes to out, the fingerprint's hash.
	mh  *maphash.Hash
	out io.Writer
}

// sum writes what mh took since the last sum to out (a no-op without mh).
func (f *fpWriter) sum() {
	if f.mh == nil {
		return
	}
	_, _ = f.out.Write(binary.LittleEndian.AppendUint64(nil, f.mh.Sum64())) // a hash never fails
	f.mh.Reset()
}

// fpScratch is what fingerprint keeps between calls within a run: its buffer, and the
// maphash seed, drawn at the first call, which every fingerprint of the run shares (a
// probe compares two fingerprints of one run; none is kept or written anywhere, so the
// seed's randomness reaches nothing the run decides or records).
type fpScratch struct {
	buf    []byte
	seed   maphash.Seed
	seeded bool
}

// writer returns a writer for one fingerprint hashing into out.
func (s *fpScratch) writer(out io.Writer) *fpWriter {
	if !s.seeded {
		s.seed, s.seeded = maphash.MakeSeed(), true
	}
	mh := &maphash.Hash{}
	mh.SetSeed(s.seed)
	return &fpWriter{w: mh, buf: s.buf[:0], mh: mh, out: out}
}

// keep takes the writer's buffer back for the next call.
func (s *fpScratch) keep(f *fpWriter) { s.buf = f.buf }

func (f *fpWriter) flushIfFull() {
	if len(f.buf) >= 32<<10 {
		f.flush()
	}
}

func (f *fpWriter) flush() {
	if len(f.buf) > 0 {
		_, _ = f.w.Write(f.buf) // a hash never fails
		f.buf = f.buf[:0]
	}
}

func (f *fpWriter) u64(v uint64) { f.buf = binary.AppendUvarint(f.buf, v) }
func (f *fpWriter) i64(v int64)  { f.buf = binary.AppendVarint(f.buf, v) }

func (f *fpWriter) bool(v bool) {
	if v {
		f.buf = append(f.buf, 1)
	} else {
		f.buf = append(f.buf, 0)
	}
}

func (f *fpWriter) str(s string) {
	f.u64(uint64(len(s)))
	f.buf = append(f.buf, s...)
}

func (f *fpWriter) bytes(b []byte) {
	f.u64(uint64(len(b)))
	f.buf = append(f.buf, b...)
}

// time writes the instant and its zone's offset (what JSON shows of it).
func (f *fpWriter) time(t time.Time) {
	f.i64(t.UnixNano())
	_, off := t.Zone()
	f.i64(int64(off))
}

// idemRecords writes a scope's records, oldest first, a nil one as such.
func (f *fpWriter) idemRecords(recs []*machine.IdemRecord) {
	f.u64(uint64(len(recs)))
	for _, r := range recs {
		if r == nil {
			f.bool(false)
			continue
		}
		f.bool(true)
		f.str(r.Key)
		f.str(r.Method)
		f.str(r.Path)
		f.str(r.BodyHash)
		f.time(r.At)
		f.u64(r.Seq)
		f.bool(r.Done)
		f.i64(int64(r.Status))
		f.bool(r.Body != nil)
		f.bytes(r.Body)
		f.bool(r.Err != nil)
		if r.Err != nil {
			f.i64(int64(r.Err.Status))
			f.str(r.Err.Code)
			f.str(r.Err.Message)
		}
		f.flushIfFull()
	}
}

// scoreFacts writes a maker's scorecard facts, oldest first.
func (f *fpWriter) scoreFacts(facts []machine.ScoreFact) {
	f.u64(uint64(len(facts)))
	for i := range facts {
		x := &facts[i]
		f.str(x.RFQ)
		f.time(x.InvitedAt)
		f.bool(x.Quoted)
		f.i64(x.LatencyMs)
		f.bool(x.Declined)
		f.i64(int64(x.Won))
		f.i64(int64(x.Settled))
		f.reasons(x.Failed)
		f.reasons(x.Revoked)
		f.bool(x.Beaten)
		f.i64(x.LostCentiBps)
		f.flushIfFull()
	}
}

func (f *fpWriter) reasons(rs []machine.ReasonCount) {
	f.bool(rs != nil)
	f.u64(uint64(len(rs)))
	for _, r := range rs {
		f.str(r.Reason)
		f.i64(int64(r.N))
	}
}
