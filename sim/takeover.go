package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// A takeover is a crash seen from a hot standby: the desk process stops writing (killed,
// or paused as a zombie), a standby that followed the same journals fences them by
// raising their epochs, and starts from the state the journals hold, exactly as a
// restart recovers (node.RecoverLedger, node.ReplayDesk: what a follower applying every
// durable record holds when it takes over). Every second crash of a run is a takeover:
// the decision draws nothing from the run's randomness, so seeds and traces are the same
// with or without it.
//
// The standby is a second desk and ledger on the same in-memory journals: built after the
// crash before a takeover from the durable journals (newest snapshots, then the records
// after them, with node's functions), it applies every record made durable since, as a
// follower does, when the takeover comes. Its state must then be exactly the one the
// journals recover to (the desk's and the ledger's digests), or the run fails.
//
// After the standby's boot input, the zombie (the old process's writers, under the epoch
// they led with) tries one more append to each journal, a snapshot and a prune: all must
// be refused with journal.ErrFenced and change nothing, or the run fails with a safety
// violation.
type takeover struct {
	desk, ledger *journal.MemHandle // the zombie's writers
}

// simStandby is the desk and ledger a standby keeps by following the journals, and the
// last record of each it applied.
type simStandby struct {
	desk               *machine.Desk
	ledger             *ledgersim.Ledger
	deskSeq, ledgerSeq uint64
}

// prepareStandby builds the standby that the next crash, a takeover, will catch up: from
// the durable journals, with a ledger that draws no faults and records nowhere (it only
// replays).
func (s *Sim) prepareStandby() {
	s.standby = nil
	if s.stats.Crashes%2 != 1 || s.failure != nil {
		return
	}
	sb, err := s.buildStandby()
	if err != nil {
		s.failf(CrashRecovery, "standby: %v", err)
		return
	}
	s.standby = sb
}

// buildStandby builds a standby from the durable journals: the newest snapshots, then the
// records after them, with node's functions (as node.OpenStandby starts, and as it starts
// again when the leader pruned records it had not read yet).
func (s *Sim) buildStandby() (*simStandby, error) {
	spec, err := node.LedgerGenesis(s.ledLog)
	if err != nil {
		return nil, err
	}
	ad, _, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{
		Network: spec.Network, Seed: spec.Seed, Clock: s.ledgerClock, Catalog: spec.Catalog,
		Reservoir: spec.Reservoir, House: spec.House, Recorder: func(ledgersim.Input) {},
	})
	if err != nil {
		return nil, err
	}
	l, lrec, err := node.RecoverLedger(s.ledLog, ad.L)
	if err != nil {
		return nil, fmt.Errorf("recover the ledger: %w", err)
	}
	desk, drec, err := node.ReplayDesk(s.deskLog, true, nil)
	if err != nil {
		return nil, fmt.Errorf("replay the desk: %w", err)
	}
	return &simStandby{desk: desk, ledger: l,
		deskSeq: max(drec.SnapshotSeq, 1) + drec.DeskInputs, ledgerSeq: max(lrec.SnapshotSeq, 1) + lrec.Inputs}, nil
}

// checkStandby catches the standby up with the durable journals, as its followers would
// have, and compares it with the state the journals recovered to.
func (s *Sim) checkStandby() {
	sb := s.standby
	s.standby = nil
	if sb == nil || s.failure != nil {
		return
	}
	err := s.ledLog.ReadFrom(sb.ledgerSeq+1, func(seq uint64, raw []byte) error {
		in, err := ledgersim.DecodeInput(raw)
		if err == nil {
			err = sb.ledger.Replay(in)
		}
		if err != nil {
			return fmt.Errorf("ledger record %d: %w", seq, err)
		}
		return nil
	})
	if err == nil {
		err = s.deskLog.ReadFrom(sb.deskSeq+1, func(seq uint64, raw []byte) error {
			env, err := machine.DecodeEnvelope(raw)
			if err != nil {
				return fmt.Errorf("desk record %d: %w", seq, err)
			}
			machine.ApplyQuiet(sb.desk, env)
			return nil
		})
	}
	if errors.Is(err, journal.ErrPruned) {
		// The leader snapshotted and pruned records this standby had not read (it catches
		// up only here, where a live follower reads as the leader writes): it starts again
		// from the newest snapshots, as node.OpenStandby does then.
		s.cov.hit(covStandbyRebuilt)
		sb, err = s.buildStandby()
	}
	if err != nil {
		s.failf(CrashRecovery, "standby: follow the journals: %v", err)
		return
	}
	if sb.ledger.Digest() != s.ledger.L.Digest() {
		s.failf(Safety, "takeover: the standby's followed ledger differs from the ledger the journal recovers to")
		return
	}
	followed, err1 := sb.desk.Digest()
	recovered, err2 := s.desk.Digest()
	if err := errors.Join(err1, err2); err != nil {
		s.failf(Safety, "takeover: desk digest: %v", err)
		return
	}
	if followed != recovered {
		s.failf(Safety, "takeover: the standby's followed desk differs from the desk the journal recovers to")
		return
	}
	s.cov.hit(covStandbyCurrent)
}

// beginTakeover makes this crash a takeover (every second one): it gives the old process
// its writers at the journals' current epochs, then fences them as the standby does.
func (s *Sim) beginTakeover() *takeover {
	if s.stats.Crashes%2 != 0 {
		return nil
	}
	t := &takeover{desk: s.deskLog.Handle(), ledger: s.ledLog.Handle()}
	for _, h := range []*journal.MemHandle{t.desk, t.ledger} {
		if _, err := h.TakeOver(context.Background()); err != nil {
			s.failf(Safety, "takeover: the leader's writer: %v", err)
			return nil
		}
	}
	for _, l := range []*journal.MemLog{s.deskLog, s.ledLog} {
		standby := l.Handle()
		if _, err := standby.TakeOver(context.Background()); err != nil {
			s.failf(Safety, "takeover: the standby's fence: %v", err)
			return nil
		}
		_ = standby.Close()
	}
	s.takeovers++
	return t
}

// zombieWrites has the fenced process try to write after the standby took over.
func (s *Sim) zombieWrites(t *takeover) {
	if t == nil || s.failure != nil {
		return
	}
	for _, z := range []struct {
		name string
		h    *journal.MemHandle
		log  *journal.MemLog
	}{{"desk", t.desk, s.deskLog}, {"ledger", t.ledger, s.ledLog}} {
		last := z.log.LastSeq()
		p := z.h.AppendAsync([]byte("a zombie's late record"))
		if err := p.Err(); !errors.Is(err, journal.ErrFenced) {
			s.failf(Safety, "a fenced writer's append to the %s journal was not refused: %v", z.name, err)
			return
		}
		if err := z.h.SaveSnapshot(last, []byte("a zombie's snapshot")); !errors.Is(err, journal.ErrFenced) {
			s.failf(Safety, "a fenced writer's snapshot of the %s journal was not refused: %v", z.name, err)
			return
		}
		if err := z.h.Prune(); !errors.Is(err, journal.ErrFenced) {
			s.failf(Safety, "a fenced writer's prune of the %s journal was not refused: %v", z.name, err)
			return
		}
		if z.log.LastSeq() != last {
			s.failf(Safety, "the %s journal changed under a fenced writer: %d records, was %d", z.name, z.log.LastSeq(), last)
			return
		}
		_ = z.h.Close()
	}
	s.cov.hit(covZombieFenced)
}
