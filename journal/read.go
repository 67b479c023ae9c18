package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// ReadFrom implements Log. It reads the records durable when it is called;
// appends may run meanwhile. Prune waits for it.
func (l *FileLog) ReadFrom(seq uint64, fn func(seq uint64, rec []byte) error) error {
	l.pruneMu.RLock()
	defer l.pruneMu.RUnlock()
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return ErrClosed
	}
	segs := slices.Clone(l.segs)
	l.mu.Unlock()

	seq = max(seq, 1)
	if first := segs[0].first; seq < first {
		return fmt.Errorf("%w: asked for sequence %d, the log starts at %d", ErrPruned, seq, first)
	}
	for _, s := range segs {
		if s.next <= seq {
			continue
		}
		if err := readSegment(s, seq, fn); err != nil {
			return err
		}
	}
	return nil
}

// readSegment calls fn for the records of s from sequence from on.
func readSegment(s segment, from uint64, fn func(uint64, []byte) error) error {
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("journal: open segment: %w", err)
	}
	defer f.Close()
	fr := newFrameReader(io.NewSectionReader(f, segHeaderSize, s.size-segHeaderSize), s.size-segHeaderSize)
	off := int64(segHeaderSize)
	for want := s.first; want < s.next; want++ {
		seq, payload, n, err := fr.next(want >= from)
		if err != nil {
			var ioErr *frameIOError
			if errors.As(err, &ioErr) || err == io.EOF {
				return fmt.Errorf("journal: read %s at offset %d: %w", s.path, off, err)
			}
			return &CorruptionError{Path: s.path, Offset: off, Reason: err.Error()}
		}
		if seq != want {
			return &CorruptionError{Path: s.path, Offset: off, Reason: fmt.Sprintf(
				"frame carries sequence %d, expected %d", seq, want)}
		}
		if want >= from {
			if err := fn(seq, payload); err != nil {
				return err
			}
		}
		off += int64(n)
	}
	return nil
}
