package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// source is a desk journal and a ledger journal to replay, from a data directory or a
// trace file.
type source struct {
	// what describes the source for the report.
	what   string
	desk   journal.Log
	ledger journal.Log
	// trace is set for a trace file: its header and, if written, its end line.
	trace *traceFile
	// ledgerAt returns the last ledger record that belongs to the state as of desk input
	// seq (for -until); nil means every ledger record.
	ledgerAt func(deskSeq uint64) (uint64, error)
	// fromSnapshot makes the desk replay start at the log's snapshot even though the log
	// starts at 1 (a simulator trace of a pruned journal: placeholders stand before it);
	// firstDesk is the first real desk record then.
	fromSnapshot bool
	firstDesk    uint64
	cleanup      func()
}

// close releases the journals and removes the temporary copy.
func (s *source) close() {
	for _, l := range []journal.Log{s.desk, s.ledger} {
		if l != nil {
			_ = l.Close()
		}
	}
	if s.cleanup != nil {
		s.cleanup()
	}
}

// openSource opens a data directory (trace false) or a trace file.
func openSource(path string, trace bool, tmpRoot string) (*source, error) {
	if trace {
		return openTrace(path)
	}
	return openDataDir(path, tmpRoot)
}

// openDataDir copies the journals of a data directory to a temporary directory and opens
// the copies. Replaying a copy never touches the desk's files: journal.OpenDir takes an
// exclusive lock, may cut a torn tail and may start a new segment, none of which a
// read-only tool should do to a live desk's journal. A copy of a running desk's journal is
// a consistent prefix of it: snapshots are copied before segments (a snapshot is saved only
// once its records are durable), and a frame being written while it is copied is a torn
// tail that the copy's recovery cuts.
func openDataDir(dir, tmpRoot string) (*source, error) {
	for _, sub := range []string{"desk", "ledger"} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s is not a desk data directory: it has no %s/ journal", dir, sub)
		}
	}
	tmp, err := os.MkdirTemp(tmpRoot, "replay-")
	if err != nil {
		return nil, fmt.Errorf("create a temporary directory for the journal copy: %w", err)
	}
	s := &source{what: "data directory " + dir, cleanup: func() { _ = os.RemoveAll(tmp) }}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	// Any epoch the desk wrote is accepted; a higher epoch only starts a new segment in the
	// copy. No fsync: the copy is thrown away.
	opts := journal.Options{Sync: journal.SyncNone, Epoch: math.MaxUint64}
	for _, sub := range []string{"ledger", "desk"} {
		dst := filepath.Join(tmp, sub)
		if err := copyJournal(filepath.Join(dir, sub), dst); err != nil {
			return nil, fmt.Errorf("copy the %s journal: %w", sub, err)
		}
		l, err := journal.OpenDir(dst, opts)
		if err != nil {
			return nil, fmt.Errorf("open the copy of the %s journal: %w", sub, err)
		}
		if sub == "desk" {
			s.desk = l
		} else {
			s.ledger = l
		}
	}
	s.ledgerAt = ledgerAtTimeOf(s.desk, s.ledger)
	ok = true
	return s, nil
}

// copyJournal copies a journal directory's snapshots, then its segments, oldest first.
// A file the desk deletes meanwhile (a prune) restarts the copy, a few times at most.
func copyJournal(src, dst string) error {
	var err error
	for range 3 {
		if err = os.RemoveAll(dst); err != nil {
			return err
		}
		if err = os.MkdirAll(dst, 0o700); err != nil {
			return err
		}
		if err = copyOnce(src, dst); !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return err
}

func copyOnce(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var snaps, segs []string
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasSuffix(name, ".snap"):
			snaps = append(snaps, name)
		case strings.HasSuffix(name, ".seg"):
			segs = append(segs, name)
		}
	}
	sort.Strings(snaps)
	sort.Strings(segs) // the names are zero-padded sequence numbers
	for _, name := range append(snaps, segs...) {
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// ledgerAtTimeOf cuts the ledger journal of a data directory by time: the ledger state as
// of desk input seq is taken to be every ledger input stamped no later than that desk
// input. The two journals name no common sequence, so this is an approximation (inputs of
// both at the same instant all count).
func ledgerAtTimeOf(desk, ledger journal.Log) func(uint64) (uint64, error) {
	return func(deskSeq uint64) (uint64, error) {
		var at time.Time
		found := false
		err := desk.ReadFrom(deskSeq, func(_ uint64, rec []byte) error {
			env, err := machine.DecodeEnvelope(rec)
			if err != nil {
				return fmt.Errorf("desk record %d: %w", deskSeq, err)
			}
			at, found = env.At, true
			return errStop
		})
		if err != nil && !errors.Is(err, errStop) {
			return 0, err
		}
		if !found {
			return ledger.LastSeq(), nil
		}
		// From genesis, or from the first record a pruned journal holds (the records
		// before it are in its snapshot: a cut before them is refused by the replay).
		from := max(2, ledger.FirstSeq())
		last := from - 1
		err = ledger.ReadFrom(from, func(seq uint64, rec []byte) error {
			in, err := node.DecodeLedgerInput(rec) // binary, or JSON from an earlier build
			if err != nil {
				return fmt.Errorf("ledger record %d: %w", seq, err)
			}
			if in.At.After(at) {
				return errStop
			}
			last = seq
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return 0, err
		}
		return last, nil
	}
}

// errStop ends a ReadFrom early.
var errStop = errors.New("stop")

// limitLog is a read view of a log that ends at seq last.
type limitLog struct {
	journal.Log
	last uint64
}

// ReadFrom reads the records up to last.
func (l limitLog) ReadFrom(seq uint64, fn func(uint64, []byte) error) error {
	err := l.Log.ReadFrom(seq, func(s uint64, rec []byte) error {
		if s > l.last {
			return errStop
		}
		return fn(s, rec)
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// LastSeq is the last record of the view.
func (l limitLog) LastSeq() uint64 { return min(l.last, l.Log.LastSeq()) }
