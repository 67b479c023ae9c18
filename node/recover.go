package node

import (
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
	// Verified is set on a checkpoint: whether the desk before it had the journaled digest.
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
			rec.SnapshotSeq, from = seq, seq+1
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
	for batch := range batches {
		for _, r := range batch {
			if r.err != nil {
				return nil, rec, r.err
			}
			env := r.env
			step := Step{Seq: r.seq, Envelope: env, Desk: desk}
			if cp, ok := env.Input.(machine.Checkpoint); ok {
				step.Checkpoint = true
				verified, err := desk.VerifyCheckpoint(cp)
				if err != nil {
					return nil, rec, fmt.Errorf("desk record %d: %w", r.seq, err)
				}
				step.Verified = verified
				if step.Verified {
					rec.Checkpoints++
				} else {
					rec.DigestMismatch++
				}
			}
			machine.Apply(desk, env)
			rec.DeskInputs++
			if each != nil && !each(step) {
				return desk, rec, nil
			}
		}
	}
	return desk, rec, nil
}

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
	var n uint64
	if log.LastSeq() < 2 {
		return 0, nil
	}
	err := log.ReadFrom(2, func(seq uint64, raw []byte) error {
		in, err := decodeLedgerInput(raw)
		if err != nil {
			return fmt.Errorf("ledger record %d: %w", seq, err)
		}
		if err := l.Replay(in); err != nil {
			return fmt.Errorf("ledger record %d: %w", seq, err)
		}
		n++
		return nil
	})
	return n, err
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
