package sim

import (
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// The reference model of the contract (sim/model) is the run's standard judge (judge.go):
// every input the desk applies is handed to it with the desk's outputs, and every read
// with its answer; a crash rebuilds it at the desk's durable point. The actors rarely make
// some reads themselves, so every auditEvery actor reads one more read of the same caller
// follows, answered by the desk and judged, without reaching the actor.

// audit is where the audited reads stand.
type audit struct {
	turn  int // which audit query comes next
	reads int // actor reads judged
}

// auditEvery is how many actor reads pass per audit read: the audits were a third of
// the model's cost when they followed every read, and one in four still reads each of
// the audit queries thousands of times in a simulated hour.
const auditEvery = 4

// auditQueries are the reads the actors rarely make themselves; one of them, in turn,
// follows every auditEvery-th actor read (a read changes nothing, so the run is the same
// with it or without).
var auditQueries = []machine.Query{
	machine.QMakerStatus{}, machine.QTrades{}, machine.QRfqHistory{}, machine.QBalances{},
	machine.QTxPending{}, machine.QMakerTrades{Limit: 1}, machine.QRfqMine{}, machine.QRfqIncoming{},
	machine.QDesk{}, machine.QConfig{}, machine.QInstruments{}, machine.QTrades{Limit: 500},
}

// auditRead follows an actor's read of keyHash's: every auditEvery-th, one audit query.
func (s *Sim) auditRead(at time.Time, keyHash string) {
	if s.judge == nil || s.failure != nil {
		return
	}
	if s.audit.reads++; s.audit.reads%auditEvery != 0 {
		return
	}
	q := auditQueries[s.audit.turn%len(auditQueries)]
	s.audit.turn++
	if _, ok := q.(machine.QBalances); ok {
		party, ok := s.desk.Caller(keyHash)
		if !ok {
			return
		}
		q = machine.QBalances{Holdings: s.ledger.Holdings(party)}
	}
	rep := machine.Read(s.desk, at, keyHash, q)
	s.beginRead(readByActor, at, keyHash, q, rep)
	// Checked as an actor's read is, first by the simulator, then by the judge: a trace
	// records it as an actor's read, and its replay checks it so.
	party, _ := s.desk.Caller(keyHash)
	s.checkRead(party, rep)
	s.judgeRead(at, keyHash, q, rep)
	s.endRead()
}
