package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/deskco/rfqdesk/journal"
)

// TraceFormat is the format name a trace's header line carries (TRACE.md).
const TraceFormat = "rfqdesk-trace/1"

// maxTraceLine bounds one line of a trace: a journal record (at most
// journal.MaxRecordSize) in base64 plus its JSON wrapping.
const maxTraceLine = journal.MaxRecordSize/3*4 + 4096

// traceLine is one line of a trace file; Kind says which fields are set.
type traceLine struct {
	Kind string `json:"kind"` // header, desk, ledger, end

	// header
	Format string          `json:"format,omitempty"`
	Seed   *uint64         `json:"seed,omitempty"`
	Knobs  json.RawMessage `json:"knobs,omitempty"`

	// desk, ledger: one journal record (encoding/json writes []byte as standard base64)
	Seq uint64 `json:"seq,omitempty"`
	Rec []byte `json:"rec,omitempty"`

	// end
	Desk   *traceFinal `json:"desk,omitempty"`
	Ledger *traceFinal `json:"ledger,omitempty"`
}

// traceFinal is the state the simulator saw after the last record of a journal.
type traceFinal struct {
	Seq    uint64 `json:"seq"`
	Digest string `json:"digest"` // hex: machine.Desk.Digest or ledgersim.Ledger.Digest
}

// traceFile is what a trace says besides its records.
type traceFile struct {
	Seed  *uint64
	Knobs json.RawMessage
	// Command and Failure are what a simulator trace says reproduces the run and why
	// it was written.
	Command string
	Failure json.RawMessage
	// simVersion is the version of a simulator trace (0: this command's own format).
	simVersion int
	// End is nil when the trace has no end line (the simulator stopped before writing it).
	End *traceLine
	// ledgerBefore[i] is how many ledger records precede desk record i+1.
	ledgerBefore []uint64
}

// openTrace loads a trace file's records into memory logs.
func openTrace(path string) (*source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	desk, ledger := journal.NewMemLog(true), journal.NewMemLog(true)
	s := &source{what: "trace " + path, desk: desk, ledger: ledger, trace: &traceFile{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxTraceLine)
	line := 0
	var ledgerCount uint64
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		if line == 1 {
			var probe struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(sc.Bytes(), &probe) == nil && probe.Type != "" {
				// The simulator's own format (sim/trace.go).
				s.what = "simulator trace " + path
				if err := readSimTrace(path, append([]byte(nil), sc.Bytes()...), sc, s); err != nil {
					return nil, err
				}
				return s, nil
			}
		}
		var tl traceLine
		if err := json.Unmarshal(sc.Bytes(), &tl); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if line == 1 && tl.Kind != "header" {
			return nil, fmt.Errorf("%s:1: the first line must be the header, got kind %q", path, tl.Kind)
		}
		if s.trace.End != nil {
			return nil, fmt.Errorf("%s:%d: a line after the end line", path, line)
		}
		switch tl.Kind {
		case "header":
			if line != 1 {
				return nil, fmt.Errorf("%s:%d: a second header", path, line)
			}
			if tl.Format != TraceFormat {
				return nil, fmt.Errorf("%s:1: format %q is not one this replay reads (%s)", path, tl.Format, TraceFormat)
			}
			s.trace.Seed, s.trace.Knobs = tl.Seed, tl.Knobs
		case "desk", "ledger":
			l := desk
			if tl.Kind == "ledger" {
				l = ledger
				ledgerCount++
			} else {
				s.trace.ledgerBefore = append(s.trace.ledgerBefore, ledgerCount)
			}
			if want := l.LastSeq() + 1; tl.Seq != want {
				return nil, fmt.Errorf("%s:%d: %s record seq %d, want %d (records must be complete and in journal order)", path, line, tl.Kind, tl.Seq, want)
			}
			if _, err := l.Append(context.Background(), tl.Rec); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, line, err)
			}
		case "end":
			s.trace.End = &tl
		default:
			return nil, fmt.Errorf("%s:%d: unknown line kind %q", path, line, tl.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace %s: %w", path, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("trace %s is empty", path)
	}
	tf := s.trace
	s.ledgerAt = func(deskSeq uint64) (uint64, error) {
		// The ledger as of desk input seq: the ledger records written before the next desk
		// record (the effects of input seq run after it was applied).
		if deskSeq >= uint64(len(tf.ledgerBefore)) {
			return ledgerCount, nil
		}
		return tf.ledgerBefore[deskSeq], nil
	}
	return s, nil
}
