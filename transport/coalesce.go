package transport

import (
	"time"

	"github.com/lxzan/gws"
)

// Live stream frames already queued for one socket go out in one write.
//
// The desk delivers one input's events together (Deliver enqueues them under the hub's
// lock), so a socket's writer often wakes to several frames: a maker's quote.created and
// its allocations' events, a taker's three quotes, a trade's settlement. Written one frame
// a write, each was a system call and a TCP segment; under load the desk's writes were
// its most frequent system call (docs/performance.md, "System calls per settled trade").
// Only frames already in the queue are joined: the writer never waits for more, so no
// frame leaves later than it would have, and every frame was queued by Deliver after the
// input behind it was durable, as before.

// coalescable reports whether a queued frame may share a write with its neighbours: a
// live stream text frame (not a ping, pong, close, or a connect's batch, which writeBatch
// writes itself).
func coalescable(f frame) bool {
	return f.op == gws.OpcodeText && f.stream && f.batch == nil
}

// writeFrames writes first and the coalescable frames queued behind it, in order, as
// whole WebSocket frames in writes of up to batchChunk bytes. A frame it took from the
// queue that may not join a write (a ping, a close, a batch) is returned to be written
// next. It reports false when the socket must stop (a write failed: the connection is
// then closed, so its read loop ends and OnClose unregisters it).
func (h *Hub) writeFrames(s *socket, first frame) (carried *frame, ok bool) {
	buf := appendTextFrame(make([]byte, 0, 2*len(first.data)+64), first.data)
	frames := 1
	for {
		var f frame
		select {
		case f = <-s.queue:
		default:
			return nil, h.writeJoined(s, buf, frames)
		}
		if !coalescable(f) {
			return &f, h.writeJoined(s, buf, frames)
		}
		if len(buf)+len(f.data)+10 > batchChunk {
			if !h.writeJoined(s, buf, frames) {
				return nil, false
			}
			buf, frames = buf[:0], 0
		}
		buf = appendTextFrame(buf, f.data)
		frames++
	}
}

// writeJoined writes the whole frames held in buf with one call, the socket's kill
// checked first (a kill takes the socket down without waiting for its queue), and adds
// frames to framesSent once written. writeBatch shares it.
func (h *Hub) writeJoined(s *socket, buf []byte, frames int) bool {
	select {
	case <-s.kill:
		h.writeKill(s)
		return false
	default:
	}
	_ = s.conn.SetWriteDeadline(time.Now().Add(h.cfg.writeTimeout))
	if _, err := s.conn.NetConn().Write(buf); err != nil {
		_ = s.conn.NetConn().Close()
		return false
	}
	h.cfg.metrics.framesSent.Add(uint64(frames))
	h.cfg.metrics.streamWrites.Add(1)
	return true
}

// carriedQueue is a channel holding f alone, so the writer's select takes a frame
// carried over from writeFrames exactly as it takes one from the socket's queue.
func carriedQueue(f *frame) chan frame {
	ch := make(chan frame, 1)
	ch <- *f
	return ch
}
