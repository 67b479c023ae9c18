package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// A Standby is a desk standing by on shared journals (Options.Journals): it rebuilds the
// embedded ledger and the desk as a start does (newest snapshot, then the records after
// it) without taking the journals over, then follows both journals and applies every
// record as replay does (ledger inputs with Ledger.Replay, desk inputs with
// machine.ApplyQuiet), so that its state stays current. Open with Options.Standby takes
// it over: it fences the journals, applies what the leader wrote last, and starts from
// this state instead of replaying.
//
// A Standby that falls so far behind that the leader pruned the records it needs next
// rebuilds that state from the newest snapshot, as a start would. One that meets any
// other error (a record it cannot apply) stops following; the take over then recovers
// from the journals as any start does.
//
// It verifies the leader's checkpoints as it follows, as a replay does: at each
// checkpoint mark it digests its own desk, and when the leader's digest of the same mark
// comes it compares the two (Checkpoints). A mismatch is a determinism bug: the state a
// take over would serve (this one, or a replay of the same journal) is not the leader's.
// The standby counts it and goes on, as a start does; a take over reports the count in
// Recovery.DigestMismatch, and the operator hears of it before any failover.
type Standby struct {
	ledgerLog, deskLog journal.Shared

	// forward is the Recorder of the standby's ledger: nothing until the take over sets
	// the node's recorder (the ledger behaves as a recorded one from the start).
	forward atomic.Pointer[func(ledgersim.Input)]

	mu        sync.Mutex // guards what the followers apply to
	ledger    *ledgersim.Ledger
	ledgerSeq uint64 // the last ledger record applied
	ledgerRec LedgerRecovery
	desk      *machine.Desk
	deskSeq   uint64 // the last desk record applied
	deskRec   Recovery
	ck        replayCheckpoints // the desk checkpoint being verified
	failed    error

	opts   Options
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Applied counts the records applied while following (both journals); Rebuilds the
	// times a state was rebuilt from a snapshot because the records it needed were pruned.
	Applied, Rebuilds    atomic.Uint64
	deskHead, ledgerHead atomic.Uint64 // the journals' heads as last read
}

// OpenStandby opens both journals of opts.Journals without taking them over, rebuilds
// the ledger and the desk from them, and follows them. With journals that hold no
// genesis yet (the leader has not started) it follows nothing, and the take over
// recovers from the journals.
func OpenStandby(ctx context.Context, opts Options) (*Standby, error) {
	if opts.Journals == nil {
		return nil, errors.New("node: a standby needs shared journals (Options.Journals)")
	}
	s := &Standby{opts: opts}
	var err error
	if s.ledgerLog, err = opts.Journals.OpenLog(ctx, LedgerJournal); err != nil {
		return nil, fmt.Errorf("open the ledger journal: %w", err)
	}
	if s.deskLog, err = opts.Journals.OpenLog(ctx, DeskJournal); err != nil {
		_ = s.ledgerLog.Close()
		return nil, fmt.Errorf("open the desk journal: %w", err)
	}
	fctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if s.ledgerLog.LastSeq() == 0 || s.deskLog.LastSeq() == 0 {
		s.failed = errors.New("the journals held no genesis when the standby started")
		return s, nil
	}
	err = whilePruned(func() error {
		if err := s.buildLedger(); err != nil {
			return err
		}
		return s.buildDesk()
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	s.wg.Add(2)
	go s.follow(fctx, s.ledgerLog, func() uint64 { return s.ledgerSeq }, s.applyLedger, s.buildLedger)
	go s.follow(fctx, s.deskLog, func() uint64 { return s.deskSeq }, s.applyDesk, s.buildDesk)
	return s, nil
}

// rebuildAttempts bounds the rebuilds of a standby's state that meet a prune: the leader
// pruned the records after the snapshot the rebuild read, so a newer snapshot exists and the
// next attempt reads it.
const rebuildAttempts = 4

// whilePruned runs build until it succeeds, fails otherwise than by a prune, or has met a
// prune rebuildAttempts times.
func whilePruned(build func() error) error {
	var err error
	for range rebuildAttempts {
		if err = build(); err == nil || !errors.Is(err, journal.ErrPruned) {
			return err
		}
	}
	return err
}

// buildLedger recovers the ledger from its journal as it is now.
func (s *Standby) buildLedger() error {
	opts := s.opts
	spec, err := readLedgerGenesis(s.ledgerLog)
	if err != nil {
		return err
	}
	forward := func(in ledgersim.Input) {
		if f := s.forward.Load(); f != nil {
			(*f)(in)
		}
	}
	adapter, _, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{
		Network: spec.Network, Seed: spec.Seed, Clock: opts.Clock, Catalog: spec.Catalog,
		Reservoir: spec.Reservoir, House: spec.House, FaultPlan: opts.FaultPlan, Sleep: opts.Sleep,
		Recorder: forward, DedupWindow: spec.DedupWindow,
	})
	if err != nil {
		return err
	}
	l, lrec, err := RecoverLedger(s.ledgerLog, adapter.L)
	if err != nil {
		return err
	}
	s.ledger, s.ledgerRec = l, lrec
	s.ledgerSeq = max(lrec.SnapshotSeq, 1) + lrec.Inputs
	return nil
}

// buildDesk recovers the desk from its journal as it is now.
func (s *Standby) buildDesk() error {
	desk, drec, err := ReplayDesk(s.deskLog, true, nil)
	if err != nil {
		return err
	}
	s.endCheckpoint()
	// A rebuild after a prune keeps the verdicts met before it.
	drec.Checkpoints += s.deskRec.Checkpoints
	drec.DigestMismatch += s.deskRec.DigestMismatch
	s.desk, s.deskRec = desk, drec
	s.deskSeq = max(drec.SnapshotSeq, 1) + drec.DeskInputs
	return nil
}

// follow applies the records of log after applied() until ctx ends or a record fails;
// when the records it needs were pruned, it rebuilds the state from the newest snapshot
// and goes on from there.
func (s *Standby) follow(ctx context.Context, log journal.Shared, applied func() uint64, apply func(uint64, []byte) error, rebuild func() error) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		from := applied() + 1
		s.mu.Unlock()
		err := log.Follow(ctx, from, func(seq uint64, rec []byte) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.failed != nil {
				return s.failed
			}
			if err := apply(seq, rec); err != nil {
				return err
			}
			s.Applied.Add(1)
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, journal.ErrPruned) {
			s.mu.Lock()
			err = whilePruned(rebuild)
			s.mu.Unlock()
			if err == nil {
				s.Rebuilds.Add(1)
				continue
			}
		}
		s.mu.Lock()
		if s.failed == nil {
			s.failed = fmt.Errorf("the standby stopped following: %w", err)
		}
		s.mu.Unlock()
		return
	}
}

// applyLedger replays ledger record seq (s.mu held).
func (s *Standby) applyLedger(seq uint64, raw []byte) error {
	if seq != s.ledgerSeq+1 {
		return fmt.Errorf("ledger record %d after record %d", seq, s.ledgerSeq)
	}
	in, err := decodeLedgerInput(raw)
	if err == nil {
		err = s.ledger.Replay(in)
	}
	if err != nil {
		return fmt.Errorf("ledger record %d: %w", seq, err)
	}
	s.ledgerSeq = seq
	s.ledgerHead.Store(max(s.ledgerHead.Load(), seq))
	return nil
}

// applyDesk applies desk record seq (s.mu held).
func (s *Standby) applyDesk(seq uint64, raw []byte) error {
	if seq != s.deskSeq+1 {
		return fmt.Errorf("desk record %d after record %d", seq, s.deskSeq)
	}
	env, err := machine.DecodeEnvelope(raw)
	if err != nil {
		return fmt.Errorf("desk record %d: %w", seq, err)
	}
	if err := s.verifyCheckpoint(seq, env.Input); err != nil {
		return err
	}
	machine.ApplyQuiet(s.desk, env)
	s.deskSeq = seq
	s.deskRec.DeskInputs++
	s.deskHead.Store(max(s.deskHead.Load(), seq))
	return nil
}

// verifyCheckpoint digests the desk before a checkpoint record and compares the digest
// with the leader's, counting the verdict in deskRec: an inline Checkpoint carries it, a
// CheckpointMark's comes later in a CheckpointDigest naming it (a mark before the state
// this standby started from cannot be verified, and is not). Called before the record is
// applied (s.mu held); its error is the encoding's.
func (s *Standby) verifyCheckpoint(seq uint64, in machine.Input) error {
	var step Step
	switch cp := in.(type) {
	case machine.Checkpoint:
		if err := s.ck.start(&s.deskRec, s.desk, seq); err != nil {
			return fmt.Errorf("desk record %d: %w", seq, err)
		}
		s.ck.want, s.ck.step = cp.Digest, &step
	case machine.CheckpointMark:
		if err := s.ck.start(&s.deskRec, s.desk, seq); err != nil {
			return fmt.Errorf("desk record %d: %w", seq, err)
		}
		return nil
	case machine.CheckpointDigest:
		if !s.ck.hashing || s.ck.before != cp.Mark || s.ck.step != nil {
			return nil
		}
		s.ck.want, s.ck.step = cp.Digest, &step
	default:
		return nil
	}
	s.ck.settle(&s.deskRec)
	return nil
}

// endCheckpoint drops the checkpoint being verified and stops its digester (s.mu held, or
// the followers stopped).
func (s *Standby) endCheckpoint() {
	s.ck.close()
	s.ck = replayCheckpoints{}
}

// Lag is how many records of each journal the standby has not applied yet, as of its
// last read of each.
func (s *Standby) Lag() (desk, ledger int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dh, lh := max(s.deskLog.LastSeq(), s.deskHead.Load()), max(s.ledgerLog.LastSeq(), s.ledgerHead.Load())
	return int64(dh) - int64(s.deskSeq), int64(lh) - int64(s.ledgerSeq)
}

// Err is why the standby stopped following (nil while it follows).
func (s *Standby) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// stop ends the following, and the checkpoint it was verifying.
func (s *Standby) stop() {
	s.cancel()
	s.wg.Wait()
	s.endCheckpoint()
}

// Checkpoints reports the leader's desk checkpoints this standby verified while it
// built and followed its state, and those whose digest differed from its own.
func (s *Standby) Checkpoints() (verified, mismatched int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deskRec.Checkpoints, s.deskRec.DigestMismatch
}

// Close stops following and closes the journals (a standby that is not taken over).
func (s *Standby) Close() {
	s.stop()
	_ = s.deskLog.Close()
	_ = s.ledgerLog.Close()
}

// takeOver fences the journals for n, which writes them from now on.
func (s *Standby) takeOver(ctx context.Context, n *Node) error {
	s.stop()
	for _, l := range []journal.Shared{s.ledgerLog, s.deskLog} {
		if _, err := l.TakeOver(ctx); err != nil {
			_ = s.deskLog.Close()
			_ = s.ledgerLog.Close()
			return fmt.Errorf("take the journals over: %w", err)
		}
	}
	n.ledgerLog, n.deskLog = s.ledgerLog, s.deskLog
	n.Recovered.Fresh = s.ledgerLog.LastSeq() == 0 && s.deskLog.LastSeq() == 0
	return nil
}

// warmLedger returns the followed ledger caught up with its journal and recording into
// n's journal from now on, or nil when the standby stopped following (recover instead).
func (s *Standby) warmLedger(n *Node) (*ledgersim.Ledger, LedgerRecovery, error) {
	if s.failed != nil {
		n.log.Warn("the standby's state is not current: recovering from the journals", "err", s.failed)
		return nil, LedgerRecovery{}, nil
	}
	inputs, err := replayLedgerFrom(s.ledgerLog, s.ledgerSeq+1, s.ledger)
	if errors.Is(err, journal.ErrPruned) {
		// The leader pruned records after the standby's last read (it wrote on until the
		// take over fenced it): recover from the newest snapshot, as a start does.
		n.log.Warn("the standby fell behind a prune of the ledger journal: recovering from the journals", "err", err)
		return nil, LedgerRecovery{}, nil
	}
	if err != nil {
		return nil, LedgerRecovery{}, err
	}
	rec := n.recordLedger
	s.forward.Store(&rec)
	lrec := s.ledgerRec
	lrec.Inputs += inputs
	return s.ledger, lrec, nil
}

// warmDesk returns the followed desk caught up with its journal, or nil when the
// standby stopped following.
func (s *Standby) warmDesk() (*machine.Desk, Recovery, error) {
	s.mu.Lock() // the followers stopped; Checkpoints and Lag may still read
	defer s.mu.Unlock()
	defer s.endCheckpoint() // the desk goes on in the node, which checkpoints its own way
	if s.failed != nil {
		return nil, Recovery{}, nil
	}
	err := s.deskLog.ReadFrom(s.deskSeq+1, func(seq uint64, raw []byte) error { return s.applyDesk(seq, raw) })
	if errors.Is(err, journal.ErrPruned) {
		// As in warmLedger: the leader pruned what this standby had not read yet. The
		// desk recovers from the journals.
		return nil, Recovery{}, nil
	}
	if err != nil {
		return nil, Recovery{}, err
	}
	return s.desk, s.deskRec, nil
}
