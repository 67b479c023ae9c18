package journal

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"time"
)

// yieldBelow is the number of appends under which the writer, woken from idle, yields once
// before it takes the batch. At low load a commit woken by one append found one or two
// records; yielding lets the goroutines already runnable append theirs first, which costs
// them microseconds and saves a commit, its fsync and its wake-ups (BenchmarkLifecycleAlone
// in package node: 14.4–14.9 desk fsyncs a lifecycle before, 11.9–12.4 after). A batch of
// yieldBelow or more is taken at once, as under load.
const yieldBelow = 4

// run is the writer goroutine: group commit. It takes everything queued
// while the previous batch was being written, writes it with one write per
// segment touched, fsyncs once, and then completes every waiter of the
// batch in order.
func (l *FileLog) run() {
	defer close(l.writerDone)
	for {
		l.mu.Lock()
		for len(l.pending) == 0 && len(l.takeovers) == 0 && !l.closing {
			l.wake.Wait()
			if len(l.waiters) < yieldBelow {
				// Woken for a small batch: let the goroutines already runnable (the loop
				// with the next input, a ledger worker with a result) run first, so that
				// what they append joins this commit instead of waiting for the next.
				l.mu.Unlock()
				runtime.Gosched()
				l.mu.Lock()
			}
		}
		if len(l.pending) == 0 && len(l.takeovers) == 0 {
			l.stopped = true
			l.progress.Broadcast()
			l.advance()
			for _, t := range l.takeovers {
				t <- ErrClosed
			}
			l.mu.Unlock()
			return
		}
		buf, waiters, takeovers, after := l.pending, l.waiters, l.takeovers, l.after
		l.pending, l.waiters, l.takeovers, l.after = l.spareBuf[:0], l.spareWait[:0], nil, nil
		last := l.nextSeq - 1
		err := l.failed
		close(l.space)
		l.space = make(chan struct{})
		l.mu.Unlock()

		if err == nil && after != nil {
			<-after.Done()
			if err = after.Err(); err != nil {
				err = fmt.Errorf("journal: a record's prerequisite in another log failed: %w", err)
			}
		}
		if err == nil && len(buf) > 0 {
			err = l.writeBatch(buf)
		}
		for _, t := range takeovers {
			if err == nil {
				err = l.startEpoch()
			}
			t <- err
		}

		l.mu.Lock()
		if err != nil {
			if l.failed == nil {
				l.failed = fmt.Errorf("journal: write failed, no further appends until reopened: %w", err)
			}
			err = l.failed
		}
		// Complete the appends before publishing the durable point, so that whoever sees
		// the log durable up to a record (SaveSnapshot, for one) also sees its append done.
		for _, p := range waiters {
			p.complete(err)
		}
		if err == nil {
			l.durable = last
		}
		l.progress.Broadcast()
		l.advance()
		l.mu.Unlock()
		clear(waiters)
		l.spareWait = waiters[:0]
		l.spareBuf = nil
		if cap(buf) <= 2*l.opts.MaxBatchBytes {
			l.spareBuf = buf[:0]
		}
	}
}

// writeBatch writes the frames in buf to the active segment, starting new
// segments where the active one would grow past SegmentSize, and makes them
// durable. It publishes each segment's new durable end.
func (l *FileLog) writeBatch(buf []byte) error {
	start := 0
	for off := 0; off < len(buf); {
		h := parseFrameHeader(buf[off:])
		n := frameSize(int(h.length))
		chunk := off - start
		hasRecords := l.act.next > l.act.first || chunk > 0
		if hasRecords && l.act.size+int64(chunk+n) > l.opts.SegmentSize {
			if chunk > 0 {
				if err := l.writeDurable(buf[start:off], h.seq); err != nil {
					return err
				}
			}
			if err := l.roll(h.seq); err != nil {
				return err
			}
			start = off
		}
		off += n
	}
	last := parseFrameHeader(buf[lastFrameOffset(buf, start):]).seq
	return l.writeDurable(buf[start:], last+1)
}

// lastFrameOffset returns the offset of the last frame in buf, scanning
// from start.
func lastFrameOffset(buf []byte, start int) int {
	off := start
	for {
		n := frameSize(int(parseFrameHeader(buf[off:]).length))
		if off+n >= len(buf) {
			return off
		}
		off += n
	}
}

// writeDurable appends frames to the active segment, fsyncs it and
// publishes the new end; next is one past the last sequence in frames.
func (l *FileLog) writeDurable(frames []byte, next uint64) error {
	if _, err := l.active.Write(frames); err != nil {
		return fmt.Errorf("journal: write %s: %w", l.act.path, err)
	}
	start := time.Now()
	if err := l.syncFile(l.active); err != nil {
		return err
	}
	if l.opts.OnSync != nil && l.opts.Sync != SyncNone {
		l.opts.OnSync(int(next-l.act.next), time.Since(start))
	}
	l.act.size += int64(len(frames))
	l.act.next = next
	l.mu.Lock()
	l.segs[len(l.segs)-1] = l.act
	l.mu.Unlock()
	return nil
}

// roll closes the active segment (already durable) and starts a new one
// whose first record is first.
func (l *FileLog) roll(first uint64) error {
	seg, f, err := l.createSegment(first)
	if err != nil {
		return err
	}
	if err := l.active.Close(); err != nil {
		f.Close()
		return fmt.Errorf("journal: close segment %s: %w", l.act.path, err)
	}
	l.active = f
	l.act = seg
	l.mu.Lock()
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	return nil
}

// frameIOError wraps an I/O error met while reading frames, to tell it
// apart from a frame that does not decode.
type frameIOError struct{ err error }

func (e *frameIOError) Error() string { return e.err.Error() }
func (e *frameIOError) Unwrap() error { return e.err }

// frameReader reads the frames of a byte range of known length.
type frameReader struct {
	r         *bufio.Reader
	remaining int64
	hdr       [frameHeaderSize]byte
	buf       []byte
}

const readBufferSize = 1 << 20

func newFrameReader(r io.Reader, n int64) *frameReader {
	size := int64(readBufferSize)
	if n < size {
		size = max(n, 16)
	}
	return &frameReader{r: bufio.NewReaderSize(r, int(size)), remaining: n}
}

// next reads the next frame. It returns io.EOF at the end of the range, a
// *frameIOError when reading fails, or the reason the frame is bad. With
// verify false the payload is skipped unchecked and not returned. The
// payload is only valid until the next call.
func (fr *frameReader) next(verify bool) (seq uint64, payload []byte, n int, err error) {
	if fr.remaining == 0 {
		return 0, nil, 0, io.EOF
	}
	if fr.remaining < frameHeaderSize {
		return 0, nil, 0, errFrameShort
	}
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return 0, nil, 0, &frameIOError{err}
	}
	h := parseFrameHeader(fr.hdr[:])
	if h.length > MaxRecordSize {
		return 0, nil, 0, errFrameTooLarge
	}
	n = frameSize(int(h.length))
	if int64(n) > fr.remaining {
		return 0, nil, 0, errFrameShort
	}
	if !verify {
		if _, err := fr.r.Discard(int(h.length)); err != nil {
			return 0, nil, 0, &frameIOError{err}
		}
		fr.remaining -= int64(n)
		return h.seq, nil, n, nil
	}
	if cap(fr.buf) < int(h.length) {
		fr.buf = make([]byte, h.length)
	}
	payload = fr.buf[:h.length]
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		return 0, nil, 0, &frameIOError{err}
	}
	if !h.verify(fr.hdr[:], payload) {
		return 0, nil, 0, errFrameChecksum
	}
	fr.remaining -= int64(n)
	return h.seq, payload, n, nil
}

// advance wakes the followers; l.mu is held.
func (l *FileLog) advance() {
	close(l.advanced)
	l.advanced = make(chan struct{})
}

// startEpoch raises the epoch by one and starts a segment under it after the durable
// records (replacing the active segment when it holds none), so a reopen under the older
// epoch is refused even if nothing is appended under the new one. Writer goroutine only.
func (l *FileLog) startEpoch() error {
	l.epoch.Add(1)
	if l.act.next > l.act.first {
		return l.roll(l.act.next)
	}
	seg, f, err := l.createSegment(l.act.first)
	if err != nil {
		return err
	}
	if err := l.active.Close(); err != nil {
		f.Close()
		return fmt.Errorf("journal: close segment %s: %w", l.act.path, err)
	}
	l.active, l.act = f, seg
	l.mu.Lock()
	l.segs[len(l.segs)-1] = seg
	l.mu.Unlock()
	return nil
}
