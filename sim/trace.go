package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/deskco/rfqdesk/node"
)

// TraceVersion is the version of the trace format this simulator writes (TRACE.md).
// Version 2 added the journals' non-durable tails, the ledger position of every desk
// record, the judge's snapshot and the read a failing check looked at; ReplayTrace reads
// versions 1 and 2. Version 3 carries the desk's records and snapshot as its journal holds
// them (binary, base64 in "data"), as the journal no longer holds JSON; ReplayTrace reads
// only version 3.
const TraceVersion = 3

// traceLine is one JSON line of a trace.
type traceLine struct {
	Type    string          `json:"type"`
	Version int             `json:"version,omitempty"`
	Seq     uint64          `json:"seq,omitempty"`
	Record  json.RawMessage `json:"record,omitempty"`
	Data    []byte          `json:"data,omitempty"` // a binary record (base64)
	// LedgerSeq (desk lines, version 2) is the ledger journal's last record when the desk
	// applied this one.
	LedgerSeq uint64 `json:"ledgerSeq,omitempty"`
	// Tail marks a record the run had applied but not yet made durable (version 2).
	Tail bool       `json:"tail,omitempty"`
	Read *traceRead `json:"read,omitempty"`
	// Acknowledged (an "acknowledged" line, version 2) is what the actors knew before the
	// crash whose recovery the failing check judged.
	Acknowledged *ackObservation `json:"acknowledged,omitempty"`
	Header       *traceHeader    `json:"header,omitempty"`
	End          *traceEnd       `json:"end,omitempty"`
}

// traceHeader opens a trace: how to reproduce the run and why it was written.
type traceHeader struct {
	Seed    uint64   `json:"seed"`
	Knobs   Knobs    `json:"knobs"`
	Mix     Mix      `json:"mix"`
	Command string   `json:"command"`
	Failure *Failure `json:"failure,omitempty"`
	// FirstDeskSeq is the first desk record the trace holds (after a pruned prefix the
	// desk-snapshot line carries the state as of FirstDeskSeq-1).
	FirstDeskSeq uint64 `json:"firstDeskSeq"`
	// FirstLedgerSeq is the first ledger record the trace holds (after a pruned prefix a
	// ledger-snapshot line carries the ledger as of a record at or after FirstLedgerSeq-1).
	FirstLedgerSeq uint64 `json:"firstLedgerSeq,omitempty"`
	// Judged says the run had a judge (version 2); a trace from a desk snapshot then
	// carries the judge's snapshot beside it.
	Judged bool `json:"judged,omitempty"`
}

// traceEnd closes a trace with what the run ended at.
type traceEnd struct {
	Steps        uint64 `json:"steps"`
	DeskDigest   string `json:"deskDigest"`
	LedgerDigest string `json:"ledgerDigest"`
	DeskLastSeq  uint64 `json:"deskLastSeq"`
	LedgerLast   uint64 `json:"ledgerLastSeq"`
	// Finished says the run reached the end of its liveness phase (version 2): the final
	// checks ran on the state the trace ends with.
	Finished bool `json:"finished,omitempty"`
	// Unheard are the allocations made by calls of a crashed process whose answer the desk
	// never got (sorted): an observation of the simulator's, which the orphan invariant
	// forgives (docs/simulation.md) and a replay cannot tell from the journals.
	Unheard []string `json:"unheard,omitempty"`
}

// WriteTrace writes the run's trace (TRACE.md) as trace.jsonl into a new temporary
// directory under dir (the system's temp dir when empty) and returns the file's path.
func (r *Result) WriteTrace(dir string) (string, error) {
	s := r.sim
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create trace directory: %w", err)
		}
	}
	tmp, err := os.MkdirTemp(dir, fmt.Sprintf("rfqdesk-sim-%d-", r.Knobs.Seed))
	if err != nil {
		return "", fmt.Errorf("create trace directory: %w", err)
	}
	path := filepath.Join(tmp, "trace.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("create trace: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	put := func(l traceLine) {
		if err == nil {
			err = enc.Encode(l)
		}
	}
	put(traceLine{Type: "header", Version: TraceVersion, Header: &traceHeader{Seed: r.Knobs.Seed, Knobs: r.Knobs, Mix: r.Mix,
		Command: r.Knobs.Command(), Failure: r.Failure, FirstDeskSeq: s.deskLog.FirstSeq(), FirstLedgerSeq: s.ledLog.FirstSeq(),
		Judged: s.judge != nil}})
	if seq, data, ok, lerr := s.deskLog.LoadSnapshot(); lerr == nil && ok && s.deskLog.FirstSeq() > 1 {
		put(traceLine{Type: "desk-snapshot", Seq: seq, Data: data})
		if s.judge != nil {
			jd, ok := s.judgeAt(seq)
			if !ok {
				return "", fmt.Errorf("write trace: no judge snapshot beside the desk snapshot at record %d", seq)
			}
			put(traceLine{Type: "judge-snapshot", Seq: seq, Data: jd})
		}
	}
	if seq, data, ok, lerr := s.ledLog.LoadSnapshot(); lerr == nil && ok && s.ledLog.FirstSeq() > 1 {
		put(traceLine{Type: "ledger-snapshot", Seq: seq, Data: data})
	}
	// Every record the run applied: the durable ones from the journal, then the tail the
	// process held in memory when it stopped (what the failing check saw).
	// asJSON nil: the records go in as the journal holds them (base64 in "data").
	copyLog := func(typ string, asJSON func([]byte) (json.RawMessage, error), read func(func(uint64, []byte) error) error,
		tail []tapeRecord, last uint64, ledgerSeq func(uint64) uint64) {
		held := uint64(0)
		line := func(seq uint64, rec []byte, isTail bool) error {
			l := traceLine{Type: typ, Seq: seq, LedgerSeq: ledgerSeq(seq), Tail: isTail}
			if asJSON == nil {
				l.Data = append([]byte(nil), rec...)
			} else {
				js, jerr := asJSON(rec)
				if jerr != nil {
					return fmt.Errorf("%s record %d: %w", typ, seq, jerr)
				}
				l.Record = js
			}
			put(l)
			held = seq
			return err
		}
		if rerr := read(func(seq uint64, rec []byte) error { return line(seq, rec, false) }); rerr != nil && err == nil {
			err = rerr
		}
		for _, t := range tail {
			if t.seq <= held {
				continue
			}
			if t.seq != held+1 && err == nil {
				err = fmt.Errorf("%s record %d follows record %d: the journal's tail is incomplete", typ, t.seq, held)
			}
			if lerr := line(t.seq, t.rec, true); lerr != nil && err == nil {
				err = lerr
			}
		}
		if held != last && err == nil {
			err = fmt.Errorf("the %s records end at %d, the journal at %d", typ, held, last)
		}
	}
	copyLog("desk", nil,
		func(fn func(uint64, []byte) error) error { return s.deskLog.ReadFrom(s.deskLog.FirstSeq(), fn) },
		s.tape.deskTail, s.deskLog.LastSeq(), s.ledgerSeqAt)
	// Ledger input records are binary in the journal; the trace shows them as JSON.
	copyLog("ledger", node.LedgerRecordJSON,
		func(fn func(uint64, []byte) error) error { return s.ledLog.ReadFrom(s.ledLog.FirstSeq(), fn) },
		s.tape.ledgerTail, s.ledLog.LastSeq(), func(uint64) uint64 { return 0 })
	if fr := s.tape.failRead; fr != nil {
		if rerr := fr.encode(); rerr != nil && err == nil {
			err = rerr
		}
		put(traceLine{Type: "read", Read: fr})
	}
	if ack := s.tape.ack; ack != nil && r.Failure != nil && r.Failure.Class == CrashRecovery {
		put(traceLine{Type: "acknowledged", Acknowledged: ack})
	}
	put(traceLine{Type: "end", End: &traceEnd{Steps: r.Steps, DeskDigest: r.DeskDigest, LedgerDigest: r.LedgerDigest,
		DeskLastSeq: s.deskLog.LastSeq(), LedgerLast: s.ledLog.LastSeq(), Finished: s.finished,
		Unheard: slices.Sorted(maps.Keys(s.orphans.unheard))}})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write trace %s: %w", path, err)
	}
	return path, nil
}
