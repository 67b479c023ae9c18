package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// TraceVersion is the version of the trace format (TRACE.md).
const TraceVersion = 1

// traceLine is one JSON line of a trace.
type traceLine struct {
	Type    string          `json:"type"`
	Version int             `json:"version,omitempty"`
	Seq     uint64          `json:"seq,omitempty"`
	Record  json.RawMessage `json:"record,omitempty"`
	Data    []byte          `json:"data,omitempty"` // a binary record (base64)
	Header  *traceHeader    `json:"header,omitempty"`
	End     *traceEnd       `json:"end,omitempty"`
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
}

// traceEnd closes a trace with what the run ended at.
type traceEnd struct {
	Steps        uint64 `json:"steps"`
	DeskDigest   string `json:"deskDigest"`
	LedgerDigest string `json:"ledgerDigest"`
	DeskLastSeq  uint64 `json:"deskLastSeq"`
	LedgerLast   uint64 `json:"ledgerLastSeq"`
}

// WriteTrace writes the run's trace (TRACE.md) as trace.jsonl into a new temporary
// directory under dir (the system's temp dir when empty) and returns the file's path.
func (r *Result) WriteTrace(dir string) (string, error) {
	s := r.sim
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
		Command: r.Knobs.Command(), Failure: r.Failure, FirstDeskSeq: s.deskLog.FirstSeq(), FirstLedgerSeq: s.ledLog.FirstSeq()}})
	if seq, data, ok, lerr := s.deskLog.LoadSnapshot(); lerr == nil && ok && s.deskLog.FirstSeq() > 1 {
		// The journal holds the binary snapshot; the trace carries the desk as JSON.
		js, jerr := snapshotJSON(data)
		if jerr != nil {
			return "", jerr
		}
		put(traceLine{Type: "desk-snapshot", Seq: seq, Record: js})
	}
	if seq, data, ok, lerr := s.ledLog.LoadSnapshot(); lerr == nil && ok && s.ledLog.FirstSeq() > 1 {
		put(traceLine{Type: "ledger-snapshot", Seq: seq, Data: data})
	}
	copyLog := func(typ string, asJSON func([]byte) (json.RawMessage, error), read func(func(uint64, []byte) error) error) {
		if rerr := read(func(seq uint64, rec []byte) error {
			js, jerr := asJSON(rec)
			if jerr != nil {
				return fmt.Errorf("%s record %d: %w", typ, seq, jerr)
			}
			put(traceLine{Type: typ, Seq: seq, Record: js})
			return err
		}); rerr != nil && err == nil {
			err = rerr
		}
	}
	copyLog("desk", func(rec []byte) (json.RawMessage, error) { return append(json.RawMessage(nil), rec...), nil },
		func(fn func(uint64, []byte) error) error { return s.deskLog.ReadFrom(s.deskLog.FirstSeq(), fn) })
	// Ledger input records are binary in the journal; the trace shows them as JSON.
	copyLog("ledger", node.LedgerRecordJSON,
		func(fn func(uint64, []byte) error) error { return s.ledLog.ReadFrom(s.ledLog.FirstSeq(), fn) })
	put(traceLine{Type: "end", End: &traceEnd{Steps: r.Steps, DeskDigest: r.DeskDigest, LedgerDigest: r.LedgerDigest,
		DeskLastSeq: s.deskLog.LastSeq(), LedgerLast: s.ledLog.LastSeq()}})
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

// snapshotJSON turns a desk snapshot as the journal holds it (binary, or JSON from an
// older desk) into the JSON form a trace carries.
func snapshotJSON(data []byte) (json.RawMessage, error) {
	d, err := machine.Restore(data)
	if err != nil {
		return nil, fmt.Errorf("read the desk snapshot for the trace: %w", err)
	}
	js, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode the desk snapshot for the trace: %w", err)
	}
	return js, nil
}
