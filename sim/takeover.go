package sim

import (
	"context"
	"errors"

	"github.com/deskco/rfqdesk/journal"
)

// A takeover is a crash seen from a hot standby: the desk process stops writing (killed,
// or paused as a zombie), a standby that followed the same journals fences them by
// raising their epochs, and starts from the state the journals hold, exactly as a
// restart recovers (node.RecoverLedger, node.ReplayDesk: what a follower applying every
// durable record holds when it takes over). Every second crash of a run is a takeover:
// the decision draws nothing from the run's randomness, so seeds and traces are the same
// with or without it.
//
// After the standby's boot input, the zombie (the old process's writers, under the epoch
// they led with) tries one more append to each journal, a snapshot and a prune: all must
// be refused with journal.ErrFenced and change nothing, or the run fails with a safety
// violation.
type takeover struct {
	desk, ledger *journal.MemHandle // the zombie's writers
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
