package sim

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// tape is what a failure's trace needs beyond the journals' durable records: the records
// the process had applied but not yet made durable (both journals' tails), where the ledger
// journal stood as each desk input was applied (so that a replay steps both in the order
// the run did), and the read a check was looking at when it failed.
type tape struct {
	// deskTail and ledgerTail are the records appended since the journal's last group
	// commit, oldest first; the journal's durable records end just before the first.
	deskTail, ledgerTail []tapeRecord
	// ledgerAt[i] is the ledger journal's last record when desk record ledgerBase+i was
	// applied.
	ledgerAt   []uint64
	ledgerBase uint64
	// reading is the read the checks are looking at (valid while inRead); failRead is the
	// read a check failed on, kept for the trace.
	reading  traceRead
	inRead   bool
	failRead *traceRead
	// ack is what the actors knew before a crash, while the recovery is checked against
	// it; it stays when that check failed, for the trace.
	ack *ackObservation
}

// tapeRecord is one journal record not yet durable.
type tapeRecord struct {
	seq uint64
	rec []byte
}

// tapeDesk notes a desk record appended (not yet durable) and where the ledger stood.
func (s *Sim) tapeDesk(seq uint64, rec []byte) {
	t := &s.tape
	t.deskTail = append(t.deskTail, tapeRecord{seq: seq, rec: rec})
	if len(t.ledgerAt) == 0 {
		t.ledgerBase = seq
	}
	if i := seq - t.ledgerBase; i < uint64(len(t.ledgerAt)) {
		t.ledgerAt = t.ledgerAt[:i] // a crash took the records after it back
	}
	if seq == t.ledgerBase+uint64(len(t.ledgerAt)) {
		t.ledgerAt = append(t.ledgerAt, s.ledLog.LastSeq())
	}
}

// tapeLedger notes a ledger record appended (not yet durable).
func (s *Sim) tapeLedger(seq uint64, rec []byte) {
	s.tape.ledgerTail = append(s.tape.ledgerTail, tapeRecord{seq: seq, rec: rec})
}

// syncDeskLog makes the desk journal durable: its tail is in the journal for good.
func (s *Sim) syncDeskLog() {
	s.deskLog.Sync()
	s.tape.deskTail = s.tape.deskTail[:0]
}

// tapeLedgerSynced: the ledger journal is durable up to its last record.
func (s *Sim) tapeLedgerSynced() { s.tape.ledgerTail = s.tape.ledgerTail[:0] }

// tapePruned drops what the desk journal no longer holds.
func (s *Sim) tapePruned() {
	t := &s.tape
	if first := s.deskLog.FirstSeq(); first > t.ledgerBase && len(t.ledgerAt) > 0 {
		drop := min(first-t.ledgerBase, uint64(len(t.ledgerAt)))
		t.ledgerAt = append(t.ledgerAt[:0], t.ledgerAt[drop:]...)
		t.ledgerBase += drop
	}
}

// tapeCrashed: the tails are lost, and a desk input that survived may have seen ledger
// records that did not (the replay then gives it the ledger as the crash left it).
func (s *Sim) tapeCrashed() {
	t := &s.tape
	t.deskTail, t.ledgerTail = t.deskTail[:0], t.ledgerTail[:0]
	if last := s.deskLog.LastSeq(); last+1 >= t.ledgerBase && last+1-t.ledgerBase < uint64(len(t.ledgerAt)) {
		t.ledgerAt = t.ledgerAt[:last+1-t.ledgerBase]
	}
	ledgerLast := s.ledLog.LastSeq()
	for i, l := range t.ledgerAt {
		t.ledgerAt[i] = min(l, ledgerLast)
	}
}

// ledgerSeqAt is where the ledger journal stood when desk record seq was applied (0:
// unknown).
func (s *Sim) ledgerSeqAt(seq uint64) uint64 {
	t := &s.tape
	if seq < t.ledgerBase || seq-t.ledgerBase >= uint64(len(t.ledgerAt)) {
		return 0
	}
	return t.ledgerAt[seq-t.ledgerBase]
}

// beginRead notes the read the checks are about to look at; endRead forgets it. A failure
// in between keeps it for the trace.
func (s *Sim) beginRead(check string, at time.Time, keyHash string, q machine.Query, rep machine.Reply) {
	s.tape.reading = traceRead{Check: check, At: at, KeyHash: keyHash, query: q, reply: rep,
		DeskSeq: s.deskLog.LastSeq(), LedgerSeq: s.ledLog.LastSeq()}
	s.tape.inRead = true
}

func (s *Sim) endRead() { s.tape.inRead = false }

// noteFailedRead keeps the read being checked, if any, as the one the failure was found by.
func (s *Sim) noteFailedRead() {
	if s.tape.inRead && s.tape.failRead == nil {
		r := s.tape.reading
		s.tape.failRead = &r
	}
}

// traceRead is a read line of a trace: which checks looked at it, when, whose, what was
// asked (with the holdings or transfers the simulator passed in) and the answer, and where
// both journals stood.
type traceRead struct {
	// Check names the checks the run made on the read: "actor" (a client's read: the
	// privacy check and the judge), "taker-view" (checkDesk's read of a taker's RFQs: the
	// privacy check and every visible quote's allocations on the ledger).
	Check     string          `json:"check"`
	At        time.Time       `json:"at"`
	KeyHash   string          `json:"keyHash"`
	Query     json.RawMessage `json:"query"`
	Reply     json.RawMessage `json:"reply"`
	DeskSeq   uint64          `json:"deskSeq"`
	LedgerSeq uint64          `json:"ledgerSeq"`

	query machine.Query
	reply machine.Reply
}

// encode fills Query and Reply from the query and answer.
func (r *traceRead) encode() error {
	q, err := encodeQuery(r.query)
	if err != nil {
		return err
	}
	rep, err := json.Marshal(r.reply)
	if err != nil {
		return fmt.Errorf("encode the %s read's answer: %w", queryKind(r.query), err)
	}
	r.Query, r.Reply = q, rep
	return nil
}

// queryJSON is a query as a trace holds it: its kind and its fields.
type queryJSON struct {
	Kind   string          `json:"kind"`
	Fields json.RawMessage `json:"fields,omitempty"`
}

// queryCodec is one kind of query as a trace holds it: its name there (the GET endpoint
// it stands for), how to tell a query of the kind, and how to read its fields back.
type queryCodec struct {
	kind   string
	is     func(machine.Query) bool
	decode func(fields json.RawMessage) (machine.Query, error)
}

// queryOf is the queryCodec of the query type T, named kind.
func queryOf[T machine.Query](kind string) queryCodec {
	return queryCodec{
		kind: kind,
		is:   func(q machine.Query) bool { _, ok := q.(T); return ok },
		decode: func(fields json.RawMessage) (machine.Query, error) {
			var q T
			if len(fields) == 0 {
				return q, nil
			}
			if err := json.Unmarshal(fields, &q); err != nil {
				return nil, fmt.Errorf("decode the %s query: %w", kind, err)
			}
			return q, nil
		},
	}
}

// queryCodecs are the kinds of query a trace holds.
var queryCodecs = []queryCodec{
	queryOf[machine.QInstruments]("instruments"),
	queryOf[machine.QMakerStatus]("maker.status"),
	queryOf[machine.QDesk]("desk"),
	queryOf[machine.QConfig]("config"),
	queryOf[machine.QRfqMine]("rfq.mine"),
	queryOf[machine.QRfqIncoming]("rfq.incoming"),
	queryOf[machine.QRfqHistory]("rfq.history"),
	queryOf[machine.QTrades]("trades"),
	queryOf[machine.QMakerTrades]("maker.trades"),
	queryOf[machine.QTxPending]("tx.pending"),
	queryOf[machine.QFaucetInfo]("faucet.info"),
	queryOf[machine.QReferencePrice]("reference-price"),
	queryOf[machine.QBalances]("balances"),
	queryOf[machine.QIncoming]("incoming"),
	queryOf[machine.QScorecard]("maker.scorecard"),
}

// queryKind names a query as the trace does (the GET endpoint it stands for).
func queryKind(q machine.Query) string {
	for _, c := range queryCodecs {
		if c.is(q) {
			return c.kind
		}
	}
	return fmt.Sprintf("%T", q)
}

// encodeQuery writes a query as the trace holds it.
func encodeQuery(q machine.Query) (json.RawMessage, error) {
	fields, err := json.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("encode the %s query: %w", queryKind(q), err)
	}
	return json.Marshal(queryJSON{Kind: queryKind(q), Fields: fields})
}

// decodeQuery reads a query a trace holds.
func decodeQuery(b json.RawMessage) (machine.Query, error) {
	var j queryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("decode a query: %w", err)
	}
	for _, c := range queryCodecs {
		if c.kind == j.Kind {
			return c.decode(j.Fields)
		}
	}
	return nil, fmt.Errorf("unknown query kind %q", j.Kind)
}

// The checks a read line names (traceRead.Check).
const (
	readByActor   = "actor"
	readTakerView = "taker-view"
)
