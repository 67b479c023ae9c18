package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/sim"
)

// deskReplay is what replaying a desk journal found.
type deskReplay struct {
	Desk        *machine.Desk
	SnapshotSeq uint64 // 0: replayed from genesis
	First, Last uint64 // the first and last desk input applied (0 when none)
	LastAt      time.Time
	LastKind    string
	Inputs      uint64
	Checkpoints int
	Mismatches  int
	// FirstMismatch is the first checkpoint (for a mark and its digest, the mark) whose
	// journaled digest differs from the replayed state's just before it, and Journaled
	// that digest.
	FirstMismatch uint64
	Journaled     string
	Digest        string // hex digest of the final state
}

// replayDesk replays a desk journal, from genesis when the log still holds record 1, else
// from its newest snapshot, up to input until (0: to the end).
func replayDesk(log journal.Log, forceSnapshot bool, until uint64) (deskReplay, error) {
	var r deskReplay
	fromSnapshot := forceSnapshot || log.FirstSeq() > 1
	desk, rec, err := node.ReplayDesk(log, fromSnapshot, func(s node.Step) bool {
		if r.First == 0 {
			r.First = s.Seq
		}
		r.Last, r.LastAt, r.LastKind = s.Seq, s.Envelope.At, s.Envelope.Input.Kind()
		if s.Checkpoint && !s.Verified && r.FirstMismatch == 0 {
			switch cp := s.Envelope.Input.(type) {
			case machine.Checkpoint:
				r.FirstMismatch, r.Journaled = s.Seq, cp.Digest
			case machine.CheckpointDigest: // of the state before its mark
				r.FirstMismatch, r.Journaled = cp.Mark, cp.Digest
			}
		}
		return until == 0 || s.Seq < until
	})
	if err != nil {
		return r, fmt.Errorf("replay the desk journal: %w", err)
	}
	if until > 0 && rec.SnapshotSeq >= until {
		return r, fmt.Errorf("desk input %d is covered by the snapshot at %d: the journal no longer holds the inputs before it", until, rec.SnapshotSeq)
	}
	r.Desk, r.SnapshotSeq, r.Inputs = desk, rec.SnapshotSeq, rec.DeskInputs
	r.Checkpoints, r.Mismatches = rec.Checkpoints, rec.DigestMismatch
	if r.Digest, err = deskDigest(desk); err != nil {
		return r, err
	}
	return r, nil
}

func deskDigest(d *machine.Desk) (string, error) {
	sum, err := d.Digest()
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// ledgerReplay is what replaying a ledger journal found.
type ledgerReplay struct {
	Ledger      *ledgersim.Ledger
	SnapshotSeq uint64 // the ledger snapshot restored, 0: replayed from genesis
	Inputs      uint64
	Upto        uint64 // the last ledger record applied (genesis is 1)
	Digest      string
}

// replayLedger rebuilds the embedded ledger from its journaled genesis and replays its
// inputs up to record upto (0: all). The ledger reads its clock only to stamp live calls
// and to judge lock expiry in queries (never before the latest input's time), so a
// stopped clock at the zero time serves replay.
func replayLedger(log journal.Log, upto uint64) (ledgerReplay, error) {
	var r ledgerReplay
	spec, err := node.LedgerGenesis(log)
	if err != nil {
		return r, err
	}
	adapter, _, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{
		Network: spec.Network, Seed: spec.Seed, Clock: ledgersim.NewManualClock(time.Time{}),
		Catalog: spec.Catalog, Reservoir: spec.Reservoir, House: spec.House, DedupWindow: spec.DedupWindow,
	})
	if err != nil {
		return r, fmt.Errorf("rebuild the ledger genesis: %w", err)
	}
	if upto > 0 {
		log = limitLog{Log: log, last: upto}
	}
	// From genesis whenever the journal still holds it (a full check of every record, as
	// for the desk); from the newest snapshot once genesis was pruned.
	l, rec := adapter.L, node.LedgerRecovery{}
	if log.FirstSeq() <= 1 {
		rec.Inputs, err = node.ReplayLedger(log, adapter.L)
	} else {
		if upto > 0 {
			if seq, _, ok, serr := log.LoadSnapshot(); serr == nil && ok && seq > upto {
				return r, fmt.Errorf("ledger record %d is covered by the ledger snapshot at %d: the journal no longer holds the records before it", upto, seq)
			}
		}
		l, rec, err = node.RecoverLedger(log, adapter.L)
	}
	if err != nil {
		return r, err
	}
	r.Ledger, r.SnapshotSeq, r.Inputs = l, rec.SnapshotSeq, rec.Inputs
	r.Upto = max(rec.SnapshotSeq, 1) + r.Inputs
	sum := l.Digest()
	r.Digest = hex.EncodeToString(sum[:])
	return r, err
}

// runReplay replays one source and reports.
func runReplay(report, stdout, stderr io.Writer, src *source, c config) int {
	status := exitOK
	fmt.Fprintf(report, "source: %s\n", src.what)
	if t := src.trace; t != nil {
		seed := "none"
		if t.Seed != nil {
			seed = fmt.Sprint(*t.Seed)
		}
		fmt.Fprintf(report, "trace: seed %s, knobs %s\n", seed, orNone(t.Knobs))
		if t.Command != "" {
			fmt.Fprintf(report, "trace: reproduce with %s\n", t.Command)
		}
		if len(t.Failure) > 0 && string(t.Failure) != "null" {
			var f sim.Failure
			if err := json.Unmarshal(t.Failure, &f); err == nil && f.Message != "" {
				fmt.Fprintf(report, "trace: written for the failure: %s\n", f.Error())
			} else {
				fmt.Fprintf(report, "trace: written for the failure %s\n", t.Failure)
			}
		}
	}
	dr, err := replayDesk(src.desk, src.fromSnapshot, c.until)
	if err != nil {
		fmt.Fprintf(stderr, "replay: %v\n", err)
		return exitError
	}
	printDesk(report, dr, c.until)
	if dr.Mismatches > 0 {
		status = exitMismatch
	}

	var upto uint64
	if c.until > 0 && src.ledgerAt != nil {
		if upto, err = src.ledgerAt(c.until); err != nil {
			fmt.Fprintf(stderr, "replay: %v\n", err)
			return exitError
		}
	}
	lr, err := replayLedger(src.ledger, upto)
	if err != nil {
		fmt.Fprintf(report, "ledger: REPLAY FAILED after %d inputs: %v\n", lr.Inputs, err)
		fmt.Fprintf(report, "result: MISMATCH (the ledger journal does not replay)\n")
		return exitMismatch
	}
	how := ""
	if c.until > 0 {
		how = " (the ledger as of desk input " + fmt.Sprint(c.until)
		if src.trace != nil {
			how += ": the ledger records written before the next desk record)"
		} else {
			how += ": ledger inputs stamped no later than it, an approximation)"
		}
	}
	from := "genesis"
	if lr.SnapshotSeq > 0 {
		from = fmt.Sprintf("the snapshot at record %d", lr.SnapshotSeq)
	}
	fmt.Fprintf(report, "ledger: replayed %d inputs from %s, through record %d%s\n", lr.Inputs, from, lr.Upto, how)
	fmt.Fprintf(report, "ledger digest  %s\n", lr.Digest)

	if end := endOf(src); end != nil && c.until == 0 {
		deskOK := checkFinal(report, "desk", end.Desk, src.desk.LastSeq(), dr.Digest)
		ledgerOK := checkFinal(report, "ledger", end.Ledger, src.ledger.LastSeq(), lr.Digest)
		if !deskOK || !ledgerOK {
			status = exitMismatch
		}
	}
	lc := countLedger(lr.Ledger, dr.Desk)
	printSummary(report, countDesk(dr.Desk), &lc)
	if t := src.trace; t != nil && t.simVersion > 0 && c.until == 0 {
		st, err := recheck(report, c.trace)
		if err != nil {
			fmt.Fprintf(stderr, "replay: %v\n", err)
			return exitError
		}
		if status == exitOK || st == exitMismatch {
			status = st
		}
	}
	if c.dump {
		if err := dumpRecords(stdout, src.desk, dr.Last); err != nil {
			fmt.Fprintf(stderr, "replay: %v\n", err)
			return exitError
		}
		b, err := json.MarshalIndent(dr.Desk, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "replay: encode the desk state: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "%s\n", b)
	}
	switch status {
	case exitOK:
		fmt.Fprintf(report, "result: ok\n")
	case exitReproduced:
		fmt.Fprintf(report, "result: reproduced\n")
	default:
		fmt.Fprintf(report, "result: MISMATCH\n")
	}
	return status
}

func printDesk(w io.Writer, dr deskReplay, until uint64) {
	if dr.SnapshotSeq == 0 {
		fmt.Fprintf(w, "desk: from genesis (record 1)\n")
	} else {
		fmt.Fprintf(w, "desk: from the snapshot at seq %d (the journal no longer holds record 1)\n", dr.SnapshotSeq)
	}
	if dr.Inputs == 0 {
		fmt.Fprintf(w, "desk: no inputs after it\n")
	} else {
		fmt.Fprintf(w, "desk: replayed %d inputs, seq %d..%d; the last a %s at %s\n",
			dr.Inputs, dr.First, dr.Last, dr.LastKind, dr.LastAt.UTC().Format(time.RFC3339Nano))
	}
	if until > 0 {
		if dr.Last < until {
			fmt.Fprintf(w, "desk: -until %d: the journal ends before it\n", until)
		} else {
			fmt.Fprintf(w, "desk: stopped after input %d (-until)\n", until)
		}
	}
	fmt.Fprintf(w, "desk: checkpoints verified %d, mismatched %d\n", dr.Checkpoints, dr.Mismatches)
	if dr.Mismatches > 0 {
		fmt.Fprintf(w, "desk: FIRST MISMATCH at checkpoint seq %d: the journal says %s, the replayed state differs\n", dr.FirstMismatch, dr.Journaled)
	}
	fmt.Fprintf(w, "desk digest    %s\n", dr.Digest)
}

func endOf(src *source) *traceLine {
	if src.trace == nil {
		return nil
	}
	return src.trace.End
}

// checkFinal compares a trace's final digest with the replay's; false on a difference.
func checkFinal(w io.Writer, what string, want *traceFinal, seq uint64, digest string) bool {
	if want == nil {
		return true
	}
	if want.Seq != seq || want.Digest != digest {
		fmt.Fprintf(w, "%s: MISMATCH with the trace's end: it says seq %d digest %s\n", what, want.Seq, want.Digest)
		return false
	}
	fmt.Fprintf(w, "%s: the trace's final digest matches\n", what)
	return true
}

func orNone(b []byte) string {
	if len(b) == 0 {
		return "none"
	}
	return string(b)
}

// recheck replays a simulator trace with the simulator's checks and its standard judge,
// reports what they met, and returns the exit status it calls for: exitReproduced for the
// trace's own failure, exitMismatch for another violation or a replay that did not rebuild
// the trace's state, exitOK when no check failed (and none should have).
func recheck(w io.Writer, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return exitError, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	rc, err := sim.ReplayTrace(f, sim.StandardJudges())
	if err != nil {
		return exitError, fmt.Errorf("re-run the checks on %s: %w", path, err)
	}
	if !rc.Checked {
		fmt.Fprintf(w, "checks: not re-run: %s\n", rc.NotChecked)
		return exitOK, nil
	}
	judged := "without a judge"
	if rc.Judged {
		judged = "and the judge"
	}
	fmt.Fprintf(w, "checks: re-ran the simulator's checks %s over %d desk inputs, %d ledger records and %d recorded reads\n",
		judged, rc.Inputs, rc.LedgerRecords, rc.Reads)
	switch {
	case rc.Reproduced():
		printTail(w, rc.Tail)
		fmt.Fprintf(w, "reproduced: %s\n", rc.Violation.Message)
		return exitReproduced, nil
	case rc.Violation != nil:
		printTail(w, rc.Tail)
		fmt.Fprintf(w, "violation: %s violation at %s: %s\n", rc.Violation.Class, rc.Violation.At.Format(time.RFC3339Nano), rc.Violation.Message)
		if rc.Recorded != nil {
			fmt.Fprintf(w, "diverged: the trace was written for another failure: %s\n", rc.Recorded.Message)
		}
		return exitMismatch, nil
	case rc.Diverged != "":
		fmt.Fprintf(w, "diverged: %s\n", rc.Diverged)
		return exitMismatch, nil
	case rc.Recorded != nil && replayable(rc.Recorded.Class):
		fmt.Fprintf(w, "diverged: no check fails on replay, but the trace was written for: %s\n", rc.Recorded.Message)
		return exitMismatch, nil
	case rc.Recorded != nil:
		fmt.Fprintf(w, "checks: no violation; the trace's %s failure needs what only the running simulator knew: %s\n", rc.Recorded.Class, rc.Recorded.Message)
	default:
		fmt.Fprintf(w, "checks: no violation\n")
	}
	return exitOK, nil
}

// replayable says whether a failure of class c is one a trace replays to: a broken
// invariant or a deadline missed, not a recovery that lost an acknowledged write (which
// needs the replies the actors received) or a coverage goal (which needs the whole run).
func replayable(c sim.Class) bool { return c == sim.Safety || c == sim.Liveness }

// dumpRecords prints the desk records the journal holds, from the first after genesis up to
// last, one JSON object a line as machine.RecordJSON renders them (sequence number, time,
// kind and the input's JSON): the binary journal, readable by a person.
func dumpRecords(w io.Writer, log journal.Log, last uint64) error {
	from := max(2, log.FirstSeq())
	if last < from {
		return nil
	}
	err := log.ReadFrom(from, func(seq uint64, rec []byte) error {
		if seq > last {
			return errStop
		}
		js, err := machine.RecordJSON(rec)
		if err != nil {
			return fmt.Errorf("desk record %d: %w", seq, err)
		}
		_, err = fmt.Fprintf(w, "%s\n", js)
		return err
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("dump the desk records: %w", err)
	}
	return nil
}

// printTail writes the last desk inputs a re-check replayed before its violation, each
// with its outputs, as transcripts print them.
func printTail(w io.Writer, tail []string) {
	if len(tail) == 0 {
		return
	}
	fmt.Fprintf(w, "the last %d desk inputs before it, as transcripts print them:\n", len(tail))
	for _, step := range tail {
		for _, line := range strings.Split(strings.TrimSuffix(step, "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}
