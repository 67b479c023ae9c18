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

// LedgerGenesis reads the ledger spec journaled as a ledger journal's first record.
func LedgerGenesis(log journal.Log) (LedgerSpec, error) {
	var g genesisRecord
	if err := readFirst(log, &g); err != nil || g.Ledger == nil {
		return LedgerSpec{}, fmt.Errorf("read the ledger genesis record: %v", err)
	}
	return *g.Ledger, nil
}

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
	stop := errors.New("stop")
	err := log.ReadFrom(from, func(seq uint64, raw []byte) error {
		env, err := machine.DecodeEnvelope(raw)
		if err != nil {
			return fmt.Errorf("desk record %d: %w", seq, err)
		}
		step := Step{Seq: seq, Envelope: env, Desk: desk}
		if cp, ok := env.Input.(machine.Checkpoint); ok {
			step.Checkpoint = true
			digest, err := desk.Digest()
			if err != nil {
				return err
			}
			step.Verified = fmt.Sprintf("%x", digest) == cp.Digest
			if step.Verified {
				rec.Checkpoints++
			} else {
				rec.DigestMismatch++
			}
		}
		machine.Apply(desk, env)
		rec.DeskInputs++
		if each != nil && !each(step) {
			return stop
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, rec, err
	}
	return desk, rec, nil
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
