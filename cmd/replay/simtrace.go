package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/sim"
)

// simLine is one line of a trace in the simulator's format (sim/trace.go, TRACE.md there):
// records are embedded as raw JSON, the desk records precede the ledger records, and a
// trace of a pruned desk (ledger) journal carries the newest desk (ledger) snapshot.
type simLine struct {
	Type    string          `json:"type"` // header, desk-snapshot, judge-snapshot, ledger-snapshot, desk, ledger, read, acknowledged, end
	Version int             `json:"version,omitempty"`
	Seq     uint64          `json:"seq,omitempty"`
	Record  json.RawMessage `json:"record,omitempty"`
	Data    []byte          `json:"data,omitempty"` // desk, desk-snapshot, ledger-snapshot: the bytes the journal holds (base64)
	// LedgerSeq (desk lines, version 2) is the ledger's last record when the desk applied
	// the record.
	LedgerSeq uint64 `json:"ledgerSeq"`
	Header    *struct {
		Seed         uint64          `json:"seed"`
		Knobs        json.RawMessage `json:"knobs"`
		Command      string          `json:"command"`
		Failure      json.RawMessage `json:"failure"`
		FirstDeskSeq uint64          `json:"firstDeskSeq"`
		// FirstLedgerSeq is absent (0) in traces written before the ledger was pruned: 1.
		FirstLedgerSeq uint64 `json:"firstLedgerSeq"`
	} `json:"header,omitempty"`
	End *struct {
		DeskDigest   string `json:"deskDigest"`
		LedgerDigest string `json:"ledgerDigest"`
		DeskLastSeq  uint64 `json:"deskLastSeq"`
		LedgerLast   uint64 `json:"ledgerLastSeq"`
	} `json:"end,omitempty"`
}

// simTraceVersions are the versions of the simulator's format this replay reads: the
// simulator's current one (2 adds the journals' non-durable tails, the ledger's
// position at each desk record, the judge's snapshot and the read a failing check looked
// at; the lines it adds are for sim.ReplayTrace, which re-runs the checks).
// Since version 3 the desk's records and snapshot are carried as the journal holds them
// (binary, base64 in "data"); earlier versions held JSON records no desk reads any more.
const minSimTraceVersion, maxSimTraceVersion = sim.TraceVersion, sim.TraceVersion

// readSimTrace loads a trace in the simulator's format; first is its first line, already
// read. The records go into memory logs; a desk snapshot becomes the log's snapshot, with
// empty placeholders for the pruned records before it (never read: replay starts at the
// snapshot). A ledger snapshot likewise becomes the ledger log's snapshot, and the ledger
// log is seen through a view that starts at the first record the trace holds, so that
// node.LedgerGenesis and node.RecoverLedger treat it as the pruned journal it was.
func readSimTrace(path string, first []byte, sc *bufio.Scanner, s *source) error {
	desk, ledger := s.desk.(*journal.MemLog), s.ledger.(*journal.MemLog)
	line := 1
	var snapSeq, ledgerSnapSeq, firstLedger uint64 = 0, 0, 1
	var snapData, ledgerSnapData []byte
	ledgerSeqs := map[uint64]uint64{} // desk record → the ledger's last record when it was applied
	for data := first; data != nil; data = next(sc) {
		var l simLine
		if err := json.Unmarshal(data, &l); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if s.trace.End != nil {
			return fmt.Errorf("%s:%d: a line after the end line", path, line)
		}
		switch l.Type {
		case "header":
			if line != 1 || l.Header == nil {
				return fmt.Errorf("%s:%d: a header must be the first line and only there", path, line)
			}
			if l.Version < minSimTraceVersion || l.Version > maxSimTraceVersion {
				return fmt.Errorf("%s:1: trace version %d is not one this replay reads (%d..%d)", path, l.Version, minSimTraceVersion, maxSimTraceVersion)
			}
			s.trace.simVersion = l.Version
			seed := l.Header.Seed
			s.trace.Seed, s.trace.Knobs = &seed, l.Header.Knobs
			s.trace.Command, s.trace.Failure = l.Header.Command, l.Header.Failure
			if f := l.Header.FirstDeskSeq; f > 1 {
				s.firstDesk = f
				for range f - 1 {
					desk.AppendAsync(nil)
				}
			}
			if f := l.Header.FirstLedgerSeq; f > 1 {
				firstLedger = f
				for range f - 1 {
					ledger.AppendAsync(nil)
				}
			}
		case "desk-snapshot":
			if snapData != nil {
				return fmt.Errorf("%s:%d: a second desk-snapshot line", path, line)
			}
			snapSeq, snapData = l.Seq, l.Data
		case "ledger-snapshot":
			if ledgerSnapData != nil {
				return fmt.Errorf("%s:%d: a second ledger-snapshot line", path, line)
			}
			if len(l.Data) == 0 {
				return fmt.Errorf("%s:%d: a ledger-snapshot line without data", path, line)
			}
			ledgerSnapSeq, ledgerSnapData = l.Seq, l.Data
		case "desk", "ledger":
			log := desk
			if l.Type == "ledger" {
				log = ledger
			}
			if want := log.LastSeq() + 1; l.Seq != want {
				return fmt.Errorf("%s:%d: %s record seq %d, want %d (records must be complete and in journal order)", path, line, l.Type, l.Seq, want)
			}
			rec := []byte(l.Record)
			if l.Type == "desk" {
				rec = l.Data
			}
			if _, err := log.Append(context.Background(), rec); err != nil {
				return fmt.Errorf("%s:%d: %w", path, line, err)
			}
			if l.Type == "desk" && l.Seq > 1 {
				ledgerSeqs[l.Seq] = l.LedgerSeq
			}
		case "judge-snapshot", "read", "acknowledged":
			// For the checks sim.ReplayTrace re-runs; the journals need neither.
		case "end":
			if l.End == nil {
				return fmt.Errorf("%s:%d: an end line without end", path, line)
			}
			s.trace.End = &traceLine{Kind: "end",
				Desk:   &traceFinal{Seq: l.End.DeskLastSeq, Digest: l.End.DeskDigest},
				Ledger: &traceFinal{Seq: l.End.LedgerLast, Digest: l.End.LedgerDigest}}
		default:
			return fmt.Errorf("%s:%d: unknown line type %q", path, line, l.Type)
		}
		line++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read trace %s: %w", path, err)
	}
	if snapData != nil {
		if err := desk.SaveSnapshot(snapSeq, snapData); err != nil {
			return fmt.Errorf("%s: desk snapshot: %w", path, err)
		}
		s.fromSnapshot = true
	} else if desk.LastSeq() > 0 && firstHeld(s) > 1 {
		return fmt.Errorf("%s: the desk records start after record 1 but the trace has no desk snapshot", path)
	}
	if err := loadLedgerSnapshot(ledger, firstLedger, ledgerSnapSeq, ledgerSnapData); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if firstLedger > 1 {
		s.ledger = prunedLog{Log: ledger, first: firstLedger}
	}
	// The desk records precede the ledger records: -until cuts the ledger by time, or, from
	// version 2 on, where each desk record says the ledger stood.
	s.ledgerAt = ledgerAtTimeOf(s.desk, s.ledger)
	if s.trace.simVersion >= 2 {
		byTime := s.ledgerAt
		s.ledgerAt = func(deskSeq uint64) (uint64, error) {
			// The ledger as of desk input seq: where it stood when the next one was applied.
			if l, ok := ledgerSeqs[deskSeq+1]; ok && l > 0 {
				return l, nil
			}
			return byTime(deskSeq)
		}
	}
	return nil
}

// loadLedgerSnapshot makes a trace's ledger snapshot (seq, data; none when data is nil) the
// ledger log's snapshot, after checking it against the first record the trace holds: a
// journal pruned up to first-1 keeps a snapshot at or after first-1, and a snapshot covers
// only records the journal holds.
func loadLedgerSnapshot(ledger *journal.MemLog, first, seq uint64, data []byte) error {
	switch {
	case data == nil && first > 1:
		return fmt.Errorf("the ledger records start at record %d but the trace has no ledger snapshot", first)
	case data == nil:
		return nil
	case seq+1 < first:
		return fmt.Errorf("the ledger snapshot at record %d leaves records %d..%d out (the trace's ledger records start at %d)", seq, seq+1, first-1, first)
	case seq > ledger.LastSeq():
		return fmt.Errorf("the ledger snapshot at record %d is past the last ledger record %d", seq, ledger.LastSeq())
	}
	if err := ledger.SaveSnapshot(seq, data); err != nil {
		return fmt.Errorf("ledger snapshot: %w", err)
	}
	return nil
}

// prunedLog is a read view of a log whose records before first were pruned: they are
// placeholders in the underlying log, and reading them fails as reading a pruned journal
// does.
type prunedLog struct {
	journal.Log
	first uint64
}

// FirstSeq is the first record the pruned journal held.
func (l prunedLog) FirstSeq() uint64 { return l.first }

// ReadFrom reads from seq on, refusing seqs before the first held record.
func (l prunedLog) ReadFrom(seq uint64, fn func(uint64, []byte) error) error {
	if seq < l.first {
		return fmt.Errorf("read from %d: %w", seq, journal.ErrPruned)
	}
	return l.Log.ReadFrom(seq, fn)
}

// firstHeld is the first desk record the trace itself held (after the placeholders).
func firstHeld(s *source) uint64 { return s.firstDesk }

func next(sc *bufio.Scanner) []byte {
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			return sc.Bytes()
		}
	}
	return nil
}
