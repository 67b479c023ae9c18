package journal

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// SaveSnapshot implements Log. The snapshot is written to a temporary
// file, fsynced, renamed to snapshot-<seq>.snap and the directory fsynced,
// so a crash leaves either the whole snapshot or none.
func (l *FileLog) SaveSnapshot(seq uint64, data []byte) error {
	if int64(len(data)) > l.opts.MaxSnapshotSize {
		return fmt.Errorf("journal: snapshot of %d bytes exceeds the maximum of %d", len(data), l.opts.MaxSnapshotSize)
	}
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	if err := l.waitDurable(seq); err != nil {
		return err
	}
	h := snapHeader{
		version: FormatVersion,
		seq:     seq,
		epoch:   l.epoch.Load(),
		length:  uint64(len(data)),
		dataCRC: crc32.Checksum(data, castagnoli),
	}
	if data == nil {
		data = []byte{}
	}
	if err := l.writeFileAtomic(filepath.Join(l.dir, snapName(seq)), h.encode(), data); err != nil {
		return fmt.Errorf("journal: save snapshot at %d: %w", seq, err)
	}
	return nil
}

// waitDurable waits until every record up to seq is durable.
func (l *FileLog) waitDurable(seq uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return ErrClosed
	}
	if last := l.nextSeq - 1; seq > last {
		return fmt.Errorf("journal: snapshot at sequence %d is past the last record %d", seq, last)
	}
	for l.durable < seq {
		if l.failed != nil {
			return l.failed
		}
		if l.stopped {
			return ErrClosed
		}
		l.progress.Wait()
	}
	return nil
}

// snapFile is a snapshot file found in the directory.
type snapFile struct {
	path string
	seq  uint64
}

// listSnapshots returns the snapshot files, newest first.
func (l *FileLog) listSnapshots() ([]snapFile, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("journal: read directory: %w", err)
	}
	var out []snapFile
	for _, e := range entries {
		if seq, ok := parseSnapName(e.Name()); ok {
			out = append(out, snapFile{path: filepath.Join(l.dir, e.Name()), seq: seq})
		}
	}
	slices.SortFunc(out, func(a, b snapFile) int { return -cmpUint(a.seq, b.seq) })
	return out, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// errBadSnapshot marks a snapshot file that fails its checks: it is
// skipped, not fatal.
var errBadSnapshot = errors.New("damaged snapshot")

// readSnapshot reads and checks a snapshot file. A damaged file gives an
// error wrapping errBadSnapshot; a newer format gives ErrUnsupportedVersion.
func (l *FileLog) readSnapshot(s snapFile) ([]byte, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("journal: open snapshot: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("journal: stat snapshot: %w", err)
	}
	hb := make([]byte, snapHeaderSize)
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, fmt.Errorf("%w: %s: header: %v", errBadSnapshot, s.path, err)
	}
	h, err := decodeSnapHeader(hb)
	if errors.Is(err, ErrUnsupportedVersion) {
		return nil, fmt.Errorf("journal: %s: %w", s.path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errBadSnapshot, s.path, err)
	}
	switch {
	case h.seq != s.seq:
		return nil, fmt.Errorf("%w: %s: header sequence %d does not match the file name", errBadSnapshot, s.path, h.seq)
	case h.length > uint64(l.opts.MaxSnapshotSize):
		return nil, fmt.Errorf("%w: %s: length %d exceeds the maximum %d", errBadSnapshot, s.path, h.length, l.opts.MaxSnapshotSize)
	case int64(h.length) != st.Size()-snapHeaderSize:
		return nil, fmt.Errorf("%w: %s: length %d, but the file holds %d bytes of data", errBadSnapshot, s.path, h.length, st.Size()-snapHeaderSize)
	}
	data := make([]byte, h.length)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%w: %s: data: %v", errBadSnapshot, s.path, err)
	}
	if crc32.Checksum(data, castagnoli) != h.dataCRC {
		return nil, fmt.Errorf("%w: %s: data checksum mismatch", errBadSnapshot, s.path)
	}
	return data, nil
}

// LoadSnapshot implements Log. A damaged snapshot is reported to the
// logger and skipped for an older one, as long as the log still holds the
// records after the older one.
func (l *FileLog) LoadSnapshot() (seq uint64, data []byte, ok bool, err error) {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return 0, nil, false, ErrClosed
	}
	first, durable := l.segs[0].first, l.durable
	l.mu.Unlock()

	snaps, err := l.listSnapshots()
	if err != nil {
		return 0, nil, false, err
	}
	for _, s := range snaps {
		if s.seq+1 < first {
			l.opts.Logger.Warn("journal: snapshot not usable, the log no longer holds the records after it",
				"snapshot", s.path, "log_first_seq", first)
			continue
		}
		data, err := l.readSnapshot(s)
		if errors.Is(err, errBadSnapshot) {
			l.opts.Logger.Warn("journal: skipped damaged snapshot", "error", err)
			continue
		}
		if err != nil {
			return 0, nil, false, err
		}
		if s.seq > durable {
			return 0, nil, false, &CorruptionError{Path: s.path, Offset: 0, Reason: fmt.Sprintf(
				"snapshot at sequence %d is ahead of the log, which ends at %d", s.seq, durable)}
		}
		return s.seq, data, true, nil
	}
	if first > 1 {
		return 0, nil, false, fmt.Errorf("%w: the log starts at sequence %d", ErrNoSnapshot, first)
	}
	return 0, nil, false, nil
}

// Prune implements Log. It keeps the newest KeepSnapshots valid snapshots
// and does nothing until there are that many; then it deletes the segments
// whose records are all covered by the oldest kept snapshot (never the
// active segment) and the snapshot files older than it. It waits for
// running ReadFrom calls.
func (l *FileLog) Prune() error {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	l.mu.Lock()
	closing := l.closing
	l.mu.Unlock()
	if closing {
		return ErrClosed
	}
	snaps, err := l.listSnapshots()
	if err != nil {
		return err
	}
	kept := 0
	var oldest snapFile
	var older []snapFile
	for i, s := range snaps {
		if _, err := l.readSnapshot(s); err != nil {
			if errors.Is(err, errBadSnapshot) {
				continue
			}
			return err
		}
		kept++
		if kept == l.opts.KeepSnapshots {
			oldest, older = s, snaps[i+1:]
			break
		}
	}
	if kept < l.opts.KeepSnapshots {
		return nil
	}

	l.pruneMu.Lock()
	l.mu.Lock()
	n := 0
	for n < len(l.segs)-1 && l.segs[n].next <= oldest.seq+1 {
		n++
	}
	doomed := slices.Clone(l.segs[:n])
	l.segs = slices.Delete(l.segs, 0, n)
	l.mu.Unlock()
	l.pruneMu.Unlock()

	var errs []error
	for _, s := range doomed {
		if err := os.Remove(s.path); err != nil {
			errs = append(errs, fmt.Errorf("journal: prune segment: %w", err))
		}
	}
	for _, s := range older {
		if err := os.Remove(s.path); err != nil {
			errs = append(errs, fmt.Errorf("journal: prune snapshot: %w", err))
		}
	}
	if len(doomed)+len(older) > 0 {
		if err := l.syncDir(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
