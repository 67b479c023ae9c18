package sim

import (
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/sim/model"
)

// lockstep runs the reference model of the contract (sim/model) beside the desk: every
// input the desk applies is fed to it with the desk's outputs, and every read with its
// answer. A divergence is a Safety failure in the contract's terms.
//
// A crash rolls the desk back to its durable point; the model rolls back the same way. It
// keeps a copy of itself taken at a durable point (base) and the inputs made durable since
// (log); a crash rebuilds the model at the durable point from the two, as the desk's
// recovery replays its journal from a snapshot. Right after a journal sync the live model
// is at the durable point, so the copy is renewed then, once the log grows past
// lockstepLogMax inputs: a copy costs the model's state, a log entry nothing but memory,
// and a crash replays at most that many inputs.
type lockstep struct {
	turn    int // which audit query comes next
	reads   int // actor reads judged
	live    *model.Model
	base    *model.Model
	log     []lockstepInput // durable since base
	pending []lockstepInput // applied to live, not yet durable
}

// lockstepLogMax bounds the log of durable inputs before the copy is renewed.
const lockstepLogMax = 1024

type lockstepInput struct {
	env machine.Envelope
	out machine.Outputs
}

// newLockstep builds the model at the desk's genesis configuration; nil when the knobs
// turn it off.
func newLockstep(k Knobs, cfg machine.Config) (*lockstep, error) {
	if k.NoModel {
		return nil, nil
	}
	live, err := model.New(cfg)
	if err != nil {
		return nil, err
	}
	return &lockstep{live: live, base: live.Clone()}, nil
}

// modelApply feeds the model one applied input.
func (s *Sim) modelApply(env machine.Envelope, out machine.Outputs) {
	l := s.model
	if l == nil {
		return
	}
	if err := l.live.Apply(env, out); err != nil {
		s.failf(Safety, "%v", err)
		return
	}
	l.pending = append(l.pending, lockstepInput{env: env, out: out})
}

// modelSynced moves the durable point up to the journal's: what was pending is durable.
func (s *Sim) modelSynced() {
	l := s.model
	if l == nil {
		return
	}
	l.log = append(l.log, l.pending...)
	l.pending = l.pending[:0]
	if len(l.log) > lockstepLogMax {
		l.base, l.log = l.live.Clone(), nil
	}
}

// modelCrashed rolls the model back to the durable point, as the crash does the desk.
func (s *Sim) modelCrashed() {
	l := s.model
	if l == nil {
		return
	}
	l.pending = l.pending[:0]
	m := l.base.Clone()
	for _, in := range l.log {
		// The live model judged these already and passed them: the copy, in the same
		// state, must pass them too, or the model itself is not deterministic.
		if err := m.Apply(in.env, in.out); err != nil {
			s.failf(Safety, "the model rebuilt at the durable point judged input %d otherwise than before (a nondeterministic model): %v", in.env.Seq, err)
			return
		}
	}
	// The rebuilt model is the durable point itself: it becomes the copy, and the live
	// model a copy of it, so that the next crash replays only what comes after.
	l.base, l.log, l.live = m, l.log[:0], m.Clone()
}

// modelRead judges a read's answer and, every auditEvery reads, audits one more read of
// the same caller.
func (s *Sim) modelRead(at time.Time, keyHash string, q machine.Query, rep machine.Reply) {
	if s.model == nil {
		return
	}
	if err := s.model.live.Read(at, keyHash, q, rep); err != nil {
		s.failf(Safety, "%v", err)
		return
	}
	s.model.reads++
	if s.model.reads%auditEvery == 0 {
		s.modelAudit(at, keyHash)
	}
}

// auditEvery is how many actor reads pass per audit read: the audits were a third of
// the model's cost when they followed every read, and one in four still reads each of
// the audit queries thousands of times in a simulated hour.
const auditEvery = 4

// auditQueries are the reads the actors rarely make themselves; one of them, in turn,
// follows each actor's read, answered by the desk and judged by the model without
// reaching the actor (a read changes nothing, so the run is the same with it or without).
var auditQueries = []machine.Query{
	machine.QMakerStatus{}, machine.QTrades{}, machine.QRfqHistory{}, machine.QBalances{},
	machine.QTxPending{}, machine.QMakerTrades{Limit: 1}, machine.QRfqMine{}, machine.QRfqIncoming{},
	machine.QDesk{}, machine.QConfig{}, machine.QInstruments{}, machine.QTrades{Limit: 500},
}

func (s *Sim) modelAudit(at time.Time, keyHash string) {
	l := s.model
	q := auditQueries[l.turn%len(auditQueries)]
	l.turn++
	if _, ok := q.(machine.QBalances); ok {
		party, ok := s.desk.Caller(keyHash)
		if !ok {
			return
		}
		q = machine.QBalances{Holdings: s.ledger.Holdings(party)}
	}
	rep := machine.Read(s.desk, at, keyHash, q)
	if err := l.live.Read(at, keyHash, q, rep); err != nil {
		s.failf(Safety, "%v (an audit read)", err)
	}
}
