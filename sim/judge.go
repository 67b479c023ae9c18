package sim

import (
	"fmt"
	"github.com/deskco/rfqdesk/sim/model"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Judge is an independent opinion of what the desk must do: the simulator hands it every
// input the desk applied, with the desk's outputs, and every read, with the desk's answer,
// and a non-nil error from either is a safety failure ("judge: …"). cmd/replay hands a
// trace's inputs and reads to the same judge, so a divergence it found replays to the
// same message. A judge's state must be a function of what it was handed: the simulator
// snapshots it (MarshalBinary) beside every desk snapshot and rebuilds it after a crash
// from that snapshot and the durable inputs after it.
type Judge interface {
	// Apply judges one applied input and the outputs the desk produced for it: every
	// input the desk journals, in journal order, Boot, Tick and the checkpoint records
	// included.
	Apply(env machine.Envelope, out machine.Outputs) error
	// Read judges the answer rep the desk gave, at virtual time at, to the caller whose
	// API key hashes to keyHash, for query q (with the holdings or transfers the simulator
	// passed into it).
	Read(at time.Time, keyHash string, q machine.Query, rep machine.Reply) error
	// MarshalBinary is the judge's state, for Judges.Restore.
	MarshalBinary() ([]byte, error)
}

// Judges says how to make a run's judge: New at genesis from the desk's configuration,
// Restore from a snapshot MarshalBinary took. The zero value is no judge.
type Judges struct {
	New     func(cfg machine.Config) (Judge, error)
	Restore func(snapshot []byte) (Judge, error)
}

// On reports whether there is a judge to make.
func (j Judges) On() bool { return j.New != nil && j.Restore != nil }

// JudgesOf adapts a judge's constructor and restore function (such as a reference model's
// New and Restore) to Judges.
func JudgesOf[J Judge](newJ func(machine.Config) (J, error), restore func([]byte) (J, error)) Judges {
	return Judges{
		New: func(cfg machine.Config) (Judge, error) {
			j, err := newJ(cfg)
			if err != nil {
				return nil, err
			}
			return j, nil
		},
		Restore: func(b []byte) (Judge, error) {
			j, err := restore(b)
			if err != nil {
				return nil, err
			}
			return j, nil
		},
	}
}

// StandardJudges is the judge every run of New (unless its knobs turn the model off) and
// every replay of cmd/replay uses: the reference model of the contract (sim/model).
func StandardJudges() Judges { return JudgesOf(model.New, model.Restore) }

// judgeApply hands an applied input to the run's judge.
func (s *Sim) judgeApply(env machine.Envelope, out machine.Outputs) {
	if s.judge == nil || s.failure != nil {
		return
	}
	if err := s.judge.Apply(env, out); err != nil {
		s.failf(Safety, "judge: %s input %d: %v", env.Input.Kind(), env.Seq, err)
	}
}

// judgeRead hands a read and its answer to the run's judge.
func (s *Sim) judgeRead(at time.Time, keyHash string, q machine.Query, rep machine.Reply) {
	if s.judge == nil || s.failure != nil {
		return
	}
	if err := s.judge.Read(at, keyHash, q, rep); err != nil {
		s.failf(Safety, "judge: %s read: %v", queryKind(q), err)
	}
}

// judgeSnapshot keeps the judge's state beside the desk snapshot at seq (the journal keeps
// its newest snapshots; so does this).
func (s *Sim) judgeSnapshot(seq uint64) {
	if s.judge == nil {
		return
	}
	b, err := s.judge.MarshalBinary()
	if err != nil {
		s.failf(Safety, "snapshot the judge at desk record %d: %v", seq, err)
		return
	}
	s.judgeSnaps = append(s.judgeSnaps, judgeSnap{seq: seq, data: b})
	if n := len(s.judgeSnaps); n > keepJudgeSnapshots {
		s.judgeSnaps = append(s.judgeSnaps[:0], s.judgeSnaps[n-keepJudgeSnapshots:]...)
	}
}

// keepJudgeSnapshots is how many judge snapshots the run keeps: as many as the desk
// journal keeps desk snapshots, and one more.
const keepJudgeSnapshots = 3

// judgeSnap is the judge's state as of desk record seq.
type judgeSnap struct {
	seq  uint64
	data []byte
}

// judgeAt returns the judge's snapshot as of desk record seq.
func (s *Sim) judgeAt(seq uint64) ([]byte, bool) {
	for i := len(s.judgeSnaps) - 1; i >= 0; i-- {
		if s.judgeSnaps[i].seq == seq {
			return s.judgeSnaps[i].data, true
		}
	}
	return nil, false
}

// recoverJudge rebuilds the judge after a crash: from its snapshot beside the desk snapshot
// the recovery started from (or from genesis), then every durable desk input after it,
// applied again to a desk of its own for the outputs the judge is handed.
func (s *Sim) recoverJudge(snapSeq uint64) error {
	if !s.judges.On() {
		return nil
	}
	var desk *machine.Desk
	var err error
	from := uint64(2)
	if snapSeq > 0 {
		data, ok := s.judgeAt(snapSeq)
		if !ok {
			return fmt.Errorf("no judge snapshot beside the desk snapshot at record %d", snapSeq)
		}
		if s.judge, err = s.judges.Restore(data); err != nil {
			return fmt.Errorf("restore the judge at desk record %d: %w", snapSeq, err)
		}
		_, state, _, lerr := s.deskLog.LoadSnapshot()
		if lerr != nil {
			return lerr
		}
		if desk, err = machine.Restore(state); err != nil {
			return err
		}
		from = snapSeq + 1
	} else {
		if s.judge, err = s.judges.New(s.cfg); err != nil {
			return fmt.Errorf("make the judge: %w", err)
		}
		if desk, err = machine.NewDesk(s.cfg); err != nil {
			return err
		}
	}
	return s.deskLog.ReadFrom(from, func(seq uint64, rec []byte) error {
		env, err := machine.DecodeEnvelope(rec)
		if err != nil {
			return fmt.Errorf("desk record %d: %w", seq, err)
		}
		out := machine.Apply(desk, env)
		if err := s.judge.Apply(env, out); err != nil {
			return fmt.Errorf("the judge refuses desk record %d again: %w", seq, err)
		}
		return nil
	})
}
