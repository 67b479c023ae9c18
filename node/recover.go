package node

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// DeskGenesis reads the desk configuration journaled as a desk journal's first record.
func DeskGenesis(log journal.Log) (machine.Config, error) {
	var g genesisRecord
	if err := readFirst(log, &g); err != nil || g.Config == nil {
		return machine.Config{}, fmt.Errorf("read the desk genesis record: %v", err)
	}
	return *g.Config, nil
}

// LedgerGenesis reads the ledger spec of a ledger journal: its first record or, once that
// is pruned behind a snapshot, the spec the newest snapshot carries.
func LedgerGenesis(log journal.Log) (LedgerSpec, error) { return readLedgerGenesis(log) }

// Step is one desk input met while replaying, with the desk right after applying it.
type Step struct {
	Seq      uint64
	Envelope machine.Envelope
	Desk     *machine.Desk
	// Checkpoint is set on a checkpoint that could be verified: an inline Checkpoint, or a
	// CheckpointDigest whose mark this replay met. Verified says whether the desk before
	// it (before the mark) had the journaled digest.
	Checkpoint bool
	Verified   bool
}

// ReplayDesk rebuilds a desk from its journal: from the newest snapshot when fromSnapshot
// is set and one exists, else from genesis (which needs the log to still hold record 1).
// It calls each (if not nil) after every input; returning false stops the replay there.
func ReplayDesk(log journal.Log, fromSnapshot bool, each func(Step) bool) (*machine.Desk, Recovery, error) {
	var rec Recovery
	var desk *machine.Desk
	from := uint64(2)
	if fromSnapshot {
		seq, data, ok, err := log.LoadSnapshot()
		if err != nil {
			return nil, rec, fmt.Errorf("load the desk snapshot: %w", err)
		}
		if ok {
			if desk, err = machine.Restore(data); err != nil {
				return nil, rec, err
			}
			rec.SnapshotSeq, rec.SnapshotBytes, from = seq, len(data), seq+1
		}
	}
	if desk == nil {
		cfg, err := DeskGenesis(log)
		if err != nil {
			return nil, rec, err
		}
		if desk, err = machine.NewDesk(cfg); err != nil {
			return nil, rec, err
		}
	}
	// Records are read and decoded on a second goroutine, in batches, while this one
	// applies them in order: Apply stays single-threaded.
	batches := make(chan []decodedRecord, 8)
	quit := make(chan struct{})
	go decodeRecords(log, from, batches, quit)
	defer func() {
		close(quit)
		for range batches { // let the reader finish before the log may be closed
		}
	}()
	// A checkpoint's digest is of the state just before it (for a CheckpointDigest, just
	// before the CheckpointMark it names): this goroutine encodes that state, and the
	// digester hashes the encoding on a goroutine of its own, piece by piece while the rest
	// is encoded. Without a callback nobody looks at an inline checkpoint's outcome before
	// the end, so the hash also overlaps the inputs after it; with one, each step waits for
	// its own checkpoint's verdict. A mark's digest is compared when its CheckpointDigest
	// comes, usually a few inputs later.
	var ck replayCheckpoints
	defer ck.close()
	for batch := range batches {
		for _, r := range batch {
			if r.err != nil {
				return nil, rec, r.err
			}
			env := r.env
			step := Step{Seq: r.seq, Envelope: env, Desk: desk}
			switch cp := env.Input.(type) {
			case machine.Checkpoint:
				step.Checkpoint = true
				if err := ck.start(&rec, desk, r.seq); err != nil {
					return nil, rec, fmt.Errorf("desk record %d: %w", r.seq, err)
				}
				ck.want, ck.step = cp.Digest, &step
				if each != nil {
					ck.settle(&rec)
				}
			case machine.CheckpointMark:
				if err := ck.start(&rec, desk, r.seq); err != nil {
					return nil, rec, fmt.Errorf("desk record %d: %w", r.seq, err)
				}
			case machine.CheckpointDigest:
				// A mark before the replay's first record (the snapshot it started from
				// was taken between the two) cannot be verified here.
				if ck.hashing && ck.before == cp.Mark && ck.step == nil {
					step.Checkpoint = true
					ck.want, ck.step = cp.Digest, &step
					ck.settle(&rec)
				}
			}
			machine.ApplyQuiet(desk, env) // the outputs of a replay go nowhere
			rec.DeskInputs++
			if each != nil && !each(step) {
				return desk, rec, nil
			}
		}
	}
	ck.settle(&rec)
	return desk, rec, nil
}

// replayCheckpoints follows the checkpoint digest a replay has in flight: the digest of
// the state before record before, being hashed (by dg, made at the first checkpoint), and
// once its journaled value is known, that value and the step that reports the verdict.
type replayCheckpoints struct {
	dg      *digester
	hashing bool
	before  uint64
	want    string
	step    *Step
}

// start digests the desk's state as it is before record seq, after collecting the digest in
// flight (at most one is): a mark whose digest never came is dropped here.
func (c *replayCheckpoints) start(rec *Recovery, desk *machine.Desk, seq uint64) error {
	c.settle(rec)
	if c.dg == nil {
		c.dg = newDigester()
	}
	if err := c.dg.start(desk); err != nil {
		return err
	}
	c.hashing, c.before = true, seq
	return nil
}

// settle waits for the digest in flight and, if its journaled value is known, compares
// them, counts the verdict and reports it on the step.
func (c *replayCheckpoints) settle(rec *Recovery) {
	if !c.hashing {
		return
	}
	sum := hex.EncodeToString(c.dg.sum())
	if c.step != nil {
		c.step.Verified = sum == c.want
		c.count(rec, c.step.Verified)
	}
	c.hashing, c.want, c.step = false, "", nil
}

// close stops the digester, if a checkpoint made one.
func (c *replayCheckpoints) close() {
	if c.dg != nil {
		c.dg.close()
	}
}

// count adds one checkpoint's verdict to the recovery's counters.
func (c *replayCheckpoints) count(rec *Recovery, verified bool) {
	if verified {
		rec.Checkpoints++
	} else {
		rec.DigestMismatch++
	}
}

// digester hashes a desk's snapshot encoding with SHA-256 on a goroutine of its own while
// the replaying goroutine encodes it (machine.Desk.WriteSnapshot), so a checkpoint costs
// that goroutine the encoding only. Pieces travel in a fixed set of reused buffers.
type digester struct {
	pieces chan []byte // encoded pieces to hash; a nil piece ends a snapshot
	free   chan []byte // emptied buffers for Write to fill
	sums   chan [32]byte
}

// digesterBuffers and digesterBufferSize bound the memory a digester holds.
const (
	digesterBuffers    = 8
	digesterBufferSize = 128 << 10
)

func newDigester() *digester {
	g := &digester{
		pieces: make(chan []byte, digesterBuffers),
		free:   make(chan []byte, digesterBuffers),
		sums:   make(chan [32]byte, 1),
	}
	for range digesterBuffers {
		g.free <- make([]byte, 0, digesterBufferSize)
	}
	go g.run()
	return g
}

// run hashes pieces until the digester is closed.
func (g *digester) run() {
	h := sha256.New()
	for p := range g.pieces {
		if p == nil {
			var sum [32]byte
			h.Sum(sum[:0])
			h.Reset()
			g.sums <- sum
			continue
		}
		h.Write(p)
		g.free <- p[:0]
	}
}

// Write copies a piece of the encoding into free buffers and hands them to the hasher.
func (g *digester) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		buf := <-g.free
		k := min(len(p), cap(buf))
		g.pieces <- append(buf, p[:k]...)
		p = p[k:]
	}
	return n, nil
}

// start encodes the desk's state into the hasher; sum returns its digest.
func (g *digester) start(d *machine.Desk) error {
	err := d.WriteSnapshot(g)
	g.pieces <- nil // ends the snapshot even after an error, so the hasher stays in step
	if err != nil {
		<-g.sums
	}
	return err
}

// sum waits for the digest of the snapshot last started.
func (g *digester) sum() []byte {
	s := <-g.sums
	return s[:]
}

// close stops the hasher once it has hashed what it was given.
func (g *digester) close() { close(g.pieces) }

// decodedRecord is a desk record decoded ahead of its application, or the error that ends
// the replay there.
type decodedRecord struct {
	seq uint64
	env machine.Envelope
	err error
}

// decodeRecords reads and decodes the desk records from seq on and sends them in batches;
// it closes out when the log ends, at the first error (sent as the last record), or once
// quit is closed.
func decodeRecords(log journal.Log, from uint64, out chan<- []decodedRecord, quit <-chan struct{}) {
	defer close(out)
	const batchSize = 128
	stop := errors.New("stop")
	batch := make([]decodedRecord, 0, batchSize)
	send := func() bool {
		select {
		case out <- batch:
			batch = make([]decodedRecord, 0, batchSize)
			return true
		case <-quit:
			return false
		}
	}
	err := log.ReadFrom(from, func(seq uint64, raw []byte) error {
		env, err := machine.DecodeEnvelope(raw)
		if err != nil {
			return fmt.Errorf("desk record %d: %w", seq, err)
		}
		batch = append(batch, decodedRecord{seq: seq, env: env})
		if len(batch) == batchSize && !send() {
			return stop
		}
		return nil
	})
	if errors.Is(err, stop) {
		return
	}
	if err != nil {
		batch = append(batch, decodedRecord{err: err})
	}
	if len(batch) > 0 {
		send()
	}
}

// ReplayLedger applies every ledger input journaled after genesis to l, which must be a
// fresh ledger built from the journaled genesis.
func ReplayLedger(log journal.Log, l *ledgersim.Ledger) (uint64, error) {
	return replayLedgerFrom(log, 2, l)
}

// Records iterates a journal's records from seq on; a read error ends the iteration and
// is stored in *errp.
func Records(log journal.Log, from uint64, errp *error) iter.Seq2[uint64, []byte] {
	return func(yield func(uint64, []byte) bool) {
		stop := errors.New("stop")
		err := log.ReadFrom(from, func(seq uint64, raw []byte) error {
			if !yield(seq, append([]byte(nil), raw...)) {
				return stop
			}
			return nil
		})
		if err != nil && !errors.Is(err, stop) && errp != nil {
			*errp = err
		}
	}
}
