package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SyncMode says whether the file log calls fsync.
type SyncMode int

const (
	// SyncAlways fsyncs every batch, every new segment and snapshot and
	// their directory entries. The default, and the only durable mode.
	SyncAlways SyncMode = iota
	// SyncNone never fsyncs: a crash of the machine (not of the process)
	// may lose acknowledged records. For tests and simulations.
	SyncNone
)

// Defaults of Options.
const (
	DefaultSegmentSize   = 64 << 20
	DefaultMaxBatchBytes = 8 << 20
	DefaultKeepSnapshots = 2
	DefaultMaxSnapshot   = 1 << 30
)

// Options configure OpenDir. The zero value is usable.
type Options struct {
	// SegmentSize is the size after which a new segment file is started
	// (DefaultSegmentSize when 0). A segment holds at least one record, so
	// one larger than SegmentSize gets a segment of its own.
	SegmentSize int64
	// MaxBatchBytes bounds the framed bytes queued for the writer, which is
	// also the most one write+fsync carries (DefaultMaxBatchBytes when 0).
	// Appends wait while the queue is full; a single larger append is
	// admitted when the queue is empty.
	MaxBatchBytes int
	// Epoch is written in the headers of the segments and snapshots this
	// writer creates. Opening a log already written by a higher epoch
	// fails with ErrStaleEpoch; a higher epoch starts a new segment.
	Epoch uint64
	// Sync is SyncAlways (the default) or SyncNone.
	Sync SyncMode
	// KeepSnapshots is how many snapshots Prune keeps (DefaultKeepSnapshots
	// when 0); records are pruned only behind the oldest one kept, so a
	// damaged newest snapshot can fall back to an older one.
	KeepSnapshots int
	// MaxSnapshotSize bounds the snapshot data SaveSnapshot writes and
	// LoadSnapshot reads (DefaultMaxSnapshot when 0).
	MaxSnapshotSize int64
	// Logger receives the recovery reports (torn tail cut, damaged
	// snapshot skipped, leftover temporary file removed). Nil discards them.
	Logger *slog.Logger
	// OnSync, if set, hears of every group commit the writer made durable
	// with an fsync (SyncAlways only): how many records it carried and how
	// long the fsync took. It runs on the writer goroutine and must be quick.
	OnSync func(records int, took time.Duration)
}

func (o Options) withDefaults() Options {
	if o.SegmentSize <= 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.KeepSnapshots <= 0 {
		o.KeepSnapshots = DefaultKeepSnapshots
	}
	if o.MaxSnapshotSize <= 0 {
		o.MaxSnapshotSize = DefaultMaxSnapshot
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Recovery describes what OpenDir found and repaired.
type Recovery struct {
	Segments int    // segment files found (before any new one was started)
	FirstSeq uint64 // first record held
	LastSeq  uint64 // last record held after recovery (0 when none)
	// TornTail is set when the end of the last segment held an incomplete
	// or damaged frame with no valid frame after it, and was cut off.
	TornTail *TornTail
	// RemovedTemp lists leftover temporary files (a crash while creating a
	// segment or writing a snapshot) that were removed.
	RemovedTemp []string
}

// TornTail describes a cut torn tail.
type TornTail struct {
	Segment string // segment file
	Offset  int64  // where the file was cut: the end of the last good frame
	Dropped int64  // bytes cut off
	Reason  string // what was wrong with the first bad frame
}

// segment is the index entry of one segment file.
type segment struct {
	path    string
	version uint16
	epoch   uint64
	first   uint64 // sequence number of the first record
	next    uint64 // one past the last durable record
	size    int64  // durable bytes, header included
}

// FileLog is the Log on a directory of segment files. Create it with
// OpenDir.
type FileLog struct {
	dir      string
	opts     Options
	lock     *os.File
	recovery Recovery

	pruneMu sync.RWMutex // ReadFrom (read) against Prune (write)
	snapMu  sync.Mutex   // serializes SaveSnapshot and Prune

	mu       sync.Mutex
	wake     *sync.Cond // the writer waits here for work
	progress *sync.Cond // SaveSnapshot waits here for durability
	pending  []byte     // framed records queued for the writer
	waiters  []*Pending
	space    chan struct{} // closed when the writer takes the queue
	nextSeq  uint64        // next sequence number to assign
	durable  uint64        // last durable sequence number
	failed   error         // sticky write failure
	closing  bool
	stopped  bool      // the writer has exited
	segs     []segment // the last one is active
	// advanced is closed (and replaced) whenever the durable point moves or the writer
	// stops: Follow waits on it.
	advanced chan struct{}
	// takeovers are TakeOver requests for the writer, which starts a segment of the new
	// epoch and answers on the channel.
	takeovers []chan error
	// epoch is the epoch written in new segment and snapshot headers (Options.Epoch,
	// raised by TakeOver).
	epoch atomic.Uint64
	// after is the latest append of another log that a queued record must not reach the
	// file before (AppendAsyncAfter), or nil.
	after *Pending

	// Owned by the writer goroutine.
	active     *os.File
	spareBuf   []byte
	spareWait  []*Pending
	act        segment // the active segment as the writer knows it
	writerDone chan struct{}

	closeOnce sync.Once
	closeErr  error

	// beforeSnapshotRename, when set by tests, runs between writing and
	// renaming a snapshot; an error aborts the save like a crash would.
	beforeSnapshotRename func() error
}

var _ Log = (*FileLog)(nil)

// File names in the directory.
const (
	lockName   = "LOCK"
	segSuffix  = ".seg"
	snapPrefix = "snapshot-"
	snapSuffix = ".snap"
	tmpSuffix  = ".tmp"
)

func segName(first uint64) string { return fmt.Sprintf("%020d%s", first, segSuffix) }

func snapName(seq uint64) string { return fmt.Sprintf("%s%020d%s", snapPrefix, seq, snapSuffix) }

// parseSegName returns the first sequence number in a segment file name.
func parseSegName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, segSuffix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// parseSnapName returns the sequence number in a snapshot file name.
func parseSnapName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, snapPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, snapSuffix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// OpenDir opens (creating if needed) the log in dir, takes the directory's
// exclusive lock, checks every segment, cuts a torn tail off the last one
// and starts the writer. A damaged record anywhere else stops it with a
// *CorruptionError naming the file and offset.
func OpenDir(dir string, opts Options) (*FileLog, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: create directory: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, lockName))
	if err != nil {
		return nil, err
	}
	l := &FileLog{dir: dir, opts: opts, lock: lock, space: make(chan struct{}), writerDone: make(chan struct{}),
		advanced: make(chan struct{})}
	l.epoch.Store(opts.Epoch)
	l.wake = sync.NewCond(&l.mu)
	l.progress = sync.NewCond(&l.mu)
	if err := l.recover(); err != nil {
		if l.active != nil {
			l.active.Close()
		}
		lock.Close()
		return nil, err
	}
	go l.run()
	return l, nil
}

// Recovery reports what OpenDir found and repaired.
func (l *FileLog) Recovery() Recovery {
	r := l.recovery
	r.RemovedTemp = slices.Clone(r.RemovedTemp)
	if r.TornTail != nil {
		t := *r.TornTail
		r.TornTail = &t
	}
	return r
}

// Dir is the directory of the log.
func (l *FileLog) Dir() string { return l.dir }

func (l *FileLog) recover() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("journal: read directory: %w", err)
	}
	var firsts []uint64
	removed := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return fmt.Errorf("journal: remove leftover temporary file: %w", err)
			}
			removed = true
			l.recovery.RemovedTemp = append(l.recovery.RemovedTemp, name)
			l.opts.Logger.Warn("journal: removed leftover temporary file", "file", name)
		default:
			if first, ok := parseSegName(name); ok {
				firsts = append(firsts, first)
			}
		}
	}
	if removed {
		if err := l.syncDir(); err != nil {
			return err
		}
	}
	slices.Sort(firsts)
	l.recovery.Segments = len(firsts)

	for i, first := range firsts {
		path := filepath.Join(l.dir, segName(first))
		seg, err := l.scanSegment(path, first, i == len(firsts)-1)
		if err != nil {
			return err
		}
		if i > 0 {
			prev := l.segs[i-1]
			if seg.first != prev.next {
				return &CorruptionError{Path: path, Offset: 0, Reason: fmt.Sprintf(
					"segment starts at sequence %d but the previous segment ends at %d", seg.first, prev.next-1)}
			}
			if seg.epoch < prev.epoch {
				return &CorruptionError{Path: path, Offset: 0, Reason: fmt.Sprintf(
					"segment epoch %d is older than the previous segment's %d", seg.epoch, prev.epoch)}
			}
		}
		l.segs = append(l.segs, seg)
	}

	if len(l.segs) == 0 {
		seg, f, err := l.createSegment(1)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		l.active = f
	} else {
		last := l.segs[len(l.segs)-1]
		if l.opts.Epoch < last.epoch {
			return fmt.Errorf("%w: opening with epoch %d, but %s was written by epoch %d",
				ErrStaleEpoch, l.opts.Epoch, last.path, last.epoch)
		}
		switch {
		case last.epoch == l.opts.Epoch && last.version == FormatVersion:
			// Continue the last segment.
			f, err := os.OpenFile(last.path, os.O_WRONLY, 0)
			if err != nil {
				return fmt.Errorf("journal: open segment for append: %w", err)
			}
			if _, err := f.Seek(last.size, io.SeekStart); err != nil {
				f.Close()
				return fmt.Errorf("journal: seek segment: %w", err)
			}
			l.active = f
		case last.next == last.first:
			// An empty last segment of another epoch or version: replace
			// it by one with this writer's header (same name, same first).
			seg, f, err := l.createSegment(last.first)
			if err != nil {
				return err
			}
			l.segs[len(l.segs)-1] = seg
			l.active = f
		default:
			seg, f, err := l.createSegment(last.next)
			if err != nil {
				return err
			}
			l.segs = append(l.segs, seg)
			l.active = f
		}
	}
	last := l.segs[len(l.segs)-1]
	l.act = last
	l.nextSeq = last.next
	l.durable = last.next - 1
	l.recovery.FirstSeq = l.segs[0].first
	l.recovery.LastSeq = l.durable
	return nil
}

// scanSegment checks the header and every frame of a segment and returns
// its index entry. In the last segment, a bad frame with no valid frame
// after it is a torn tail and is cut off; anywhere else a bad frame is
// corruption.
func (l *FileLog) scanSegment(path string, nameFirst uint64, last bool) (segment, error) {
	flag := os.O_RDONLY
	if last {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return segment{}, fmt.Errorf("journal: open segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return segment{}, fmt.Errorf("journal: stat segment: %w", err)
	}
	size := st.Size()
	hb := make([]byte, segHeaderSize)
	if _, err := io.ReadFull(f, hb); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return segment{}, fmt.Errorf("journal: read segment header of %s: %w", path, err)
	}
	h, err := decodeSegHeader(hb)
	if err != nil {
		if errors.Is(err, ErrUnsupportedVersion) {
			return segment{}, fmt.Errorf("journal: %s: %w", path, err)
		}
		return segment{}, &CorruptionError{Path: path, Offset: 0, Reason: err.Error()}
	}
	if h.firstSeq != nameFirst {
		return segment{}, &CorruptionError{Path: path, Offset: 0, Reason: fmt.Sprintf(
			"header first sequence %d does not match the file name", h.firstSeq)}
	}
	seg := segment{path: path, version: h.version, epoch: h.epoch, first: h.firstSeq, next: h.firstSeq, size: segHeaderSize}

	fr := newFrameReader(io.NewSectionReader(f, segHeaderSize, size-segHeaderSize), size-segHeaderSize)
	for {
		seq, _, n, err := fr.next(true)
		if err == io.EOF {
			return seg, nil
		}
		off := seg.size
		if err == nil && seq != seg.next {
			return segment{}, &CorruptionError{Path: path, Offset: off, Reason: fmt.Sprintf(
				"frame carries sequence %d, expected %d", seq, seg.next)}
		}
		if err != nil {
			var ioErr *frameIOError
			if errors.As(err, &ioErr) {
				return segment{}, fmt.Errorf("journal: read %s: %w", path, ioErr.err)
			}
			if !last {
				return segment{}, &CorruptionError{Path: path, Offset: off, Reason: err.Error()}
			}
			return l.cutTornTail(f, seg, size, err)
		}
		seg.next++
		seg.size += int64(n)
	}
}

// cutTornTail handles the first bad frame of the last segment, at seg.size:
// if a valid frame follows it, that is corruption; otherwise the tail is
// torn and is cut off.
func (l *FileLog) cutTornTail(f *os.File, seg segment, size int64, reason error) (segment, error) {
	off := seg.size
	tail := make([]byte, size-off)
	if _, err := f.ReadAt(tail, off); err != nil && err != io.EOF {
		return segment{}, fmt.Errorf("journal: read tail of %s: %w", seg.path, err)
	}
	if p, seq, ok := findValidFrame(tail, seg.next); ok {
		return segment{}, &CorruptionError{Path: seg.path, Offset: off, Reason: fmt.Sprintf(
			"%v (expected sequence %d), and a valid frame with sequence %d follows at offset %d",
			reason, seg.next, seq, off+int64(p))}
	}
	if err := f.Truncate(off); err != nil {
		return segment{}, fmt.Errorf("journal: cut torn tail of %s: %w", seg.path, err)
	}
	if err := l.syncFile(f); err != nil {
		return segment{}, err
	}
	t := &TornTail{Segment: seg.path, Offset: off, Dropped: size - off, Reason: reason.Error()}
	l.recovery.TornTail = t
	l.opts.Logger.Warn("journal: cut torn tail", "segment", t.Segment, "offset", t.Offset,
		"dropped_bytes", t.Dropped, "reason", t.Reason, "last_seq", seg.next-1)
	return seg, nil
}

// createSegment durably creates the segment starting at first: the header
// is written to a temporary file, fsynced and renamed, and the directory
// fsynced, so a segment file always has a whole header. It returns the
// segment opened for appending.
func (l *FileLog) createSegment(first uint64) (segment, *os.File, error) {
	epoch := l.epoch.Load()
	h := segHeader{version: FormatVersion, epoch: epoch, firstSeq: first}
	path := filepath.Join(l.dir, segName(first))
	if err := l.writeFileAtomic(path, h.encode(), nil); err != nil {
		return segment{}, nil, fmt.Errorf("journal: create segment: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return segment{}, nil, fmt.Errorf("journal: open new segment: %w", err)
	}
	if _, err := f.Seek(segHeaderSize, io.SeekStart); err != nil {
		f.Close()
		return segment{}, nil, fmt.Errorf("journal: seek new segment: %w", err)
	}
	seg := segment{path: path, version: FormatVersion, epoch: epoch, first: first, next: first, size: segHeaderSize}
	return seg, f, nil
}

// writeFileAtomic writes head and body to path through a temporary file
// that is fsynced, renamed over path, with the directory fsynced after.
// beforeRename, if set, runs between the fsync and the rename.
func (l *FileLog) writeFileAtomic(path string, head, body []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(head)
	if err == nil {
		err = l.writePaced(f, int64(len(head)), body)
	}
	if err == nil {
		err = l.syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && body != nil && l.beforeSnapshotRename != nil {
		err = l.beforeSnapshotRename()
		if err != nil {
			return err // leave the temporary file, as a crash would
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return l.syncDir()
}

// writebackChunk is the piece of a large file (a snapshot) whose writeback writePaced
// starts at a time; at most writebackInFlight of them are being written to the device at
// once.
const (
	writebackChunk    = 256 << 10
	writebackInFlight = 2
)

// writePaced writes body at off in chunks, starting each chunk's writeback as it is
// written and waiting for the chunk writebackInFlight chunks back, so the device never
// has more than about a MiB of this file queued. Written at once and left to the final fsync, a
// large snapshot queues all of itself on the device, and the journal's fsyncs beside it
// wait behind it (BenchmarkAppendDuringSnapshot). Without syncs (SyncNone), or for a
// small body, it is one write.
func (l *FileLog) writePaced(f *os.File, off int64, body []byte) error {
	if l.opts.Sync == SyncNone || len(body) <= writebackChunk {
		_, err := f.Write(body)
		return err
	}
	for start := 0; start < len(body); start += writebackChunk {
		end := min(start+writebackChunk, len(body))
		if _, err := f.Write(body[start:end]); err != nil {
			return err
		}
		startWriteback(f, off+int64(start), int64(end-start))
		if back := start - writebackInFlight*writebackChunk; back >= 0 {
			awaitWriteback(f, off+int64(back), writebackChunk)
		}
	}
	return nil
}

func (l *FileLog) syncFile(f *os.File) error {
	if l.opts.Sync == SyncNone {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: fsync %s: %w", f.Name(), err)
	}
	return nil
}

func (l *FileLog) syncDir() error {
	if l.opts.Sync == SyncNone {
		return nil
	}
	return syncDir(l.dir)
}

// FirstSeq implements Log.
func (l *FileLog) FirstSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.segs[0].first
}

// LastSeq implements Log.
func (l *FileLog) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextSeq - 1
}

// Close implements Log. It is safe to call more than once.
func (l *FileLog) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closing = true
		l.wake.Signal()
		close(l.space)
		l.space = make(chan struct{})
		l.mu.Unlock()
		<-l.writerDone
		var errs []error
		l.mu.Lock()
		if l.failed != nil {
			errs = append(errs, l.failed)
		}
		l.mu.Unlock()
		if err := l.active.Close(); err != nil {
			errs = append(errs, fmt.Errorf("journal: close segment: %w", err))
		}
		if err := l.lock.Close(); err != nil {
			errs = append(errs, fmt.Errorf("journal: release lock: %w", err))
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// Append implements Log.
func (l *FileLog) Append(ctx context.Context, records ...[]byte) (uint64, error) {
	if len(records) == 0 {
		return l.LastSeq(), nil
	}
	p, err := l.enqueue(ctx, nil, records)
	if err != nil {
		return 0, err
	}
	return p.Wait(ctx)
}

// AppendAsync implements Log.
func (l *FileLog) AppendAsync(records ...[]byte) *Pending {
	return l.AppendAsyncAfter(nil, records...)
}

// AppendAsyncAfter is AppendAsync for records that must not reach the file before after
// is done: an append to another log they refer to (the desk's record of a ledger call's
// result, after the ledger's records of the call). The writer waits for it before it
// writes the batch that holds them, and if it failed, fails that batch like a failed
// write (and so every later append). after must belong to one log for the life of this
// one, and a later append of it must be done no sooner than an earlier one (a log's
// appends complete in order): of several, the writer waits for the one with the highest
// sequence numbers. A nil after is AppendAsync.
func (l *FileLog) AppendAsyncAfter(after *Pending, records ...[]byte) *Pending {
	if len(records) == 0 {
		return CompletedPending(nil)
	}
	p, err := l.enqueue(context.Background(), after, records)
	if err != nil {
		return CompletedPending(err)
	}
	return p
}

// enqueue frames records with their sequence numbers into the writer's
// queue, waiting while the queue is full; after, if set, must be done before
// they are written (AppendAsyncAfter).
func (l *FileLog) enqueue(ctx context.Context, after *Pending, records [][]byte) (*Pending, error) {
	size := 0
	for i, r := range records {
		if len(r) > MaxRecordSize {
			return nil, fmt.Errorf("%w: record %d is %d bytes, the maximum is %d", ErrRecordTooLarge, i, len(r), MaxRecordSize)
		}
		size += frameSize(len(r))
	}
	l.mu.Lock()
	for {
		if l.closing {
			l.mu.Unlock()
			return nil, ErrClosed
		}
		if l.failed != nil {
			err := l.failed
			l.mu.Unlock()
			return nil, err
		}
		if len(l.pending) == 0 || len(l.pending)+size <= l.opts.MaxBatchBytes {
			break
		}
		if err := WaitSpace(ctx, &l.mu, l.space); err != nil {
			return nil, err
		}
	}
	first := l.nextSeq
	for _, r := range records {
		l.pending = appendFrame(l.pending, l.nextSeq, r)
		l.nextSeq++
	}
	p := &Pending{first: first, last: l.nextSeq - 1, done: make(chan struct{})}
	l.waiters = append(l.waiters, p)
	if after != nil && (l.after == nil || after.last > l.after.last) {
		l.after = after
	}
	l.wake.Signal()
	l.mu.Unlock()
	return p, nil
}
