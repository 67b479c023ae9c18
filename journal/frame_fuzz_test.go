package journal

import (
	"bytes"
	"testing"
)

// FuzzDecodeFrames: arbitrary bytes never make the frame decoder or the
// torn-tail scan panic, and records encoded as frames decode back to
// themselves, with their sequence numbers, whatever garbage follows.
func FuzzDecodeFrames(f *testing.F) {
	f.Add([]byte{}, []byte{})
	f.Add([]byte("a\x00bc\x00"), []byte{0, 0, 0, 0})
	f.Add(appendFrame(nil, 1, []byte("x")), appendFrame(nil, 2, []byte("y")))
	f.Fuzz(func(t *testing.T, raw, tail []byte) {
		// Arbitrary bytes: decode until the first error.
		for b := raw; ; {
			_, payload, n, err := decodeFrame(b)
			if err != nil {
				break
			}
			if n < frameHeaderSize || n > len(b) || len(payload) != n-frameHeaderSize {
				t.Fatalf("decodeFrame returned n=%d for %d bytes", n, len(b))
			}
			b = b[n:]
		}
		findValidFrame(raw, 1)

		// Round trip: raw split at its zero bytes is a list of records.
		recs := bytes.Split(raw, []byte{0})
		var enc []byte
		for i, r := range recs {
			enc = appendFrame(enc, uint64(i+1), r)
		}
		enc = append(enc, tail...)
		b := enc
		for i, r := range recs {
			seq, payload, n, err := decodeFrame(b)
			if err != nil || seq != uint64(i+1) || !bytes.Equal(payload, r) {
				t.Fatalf("record %d: seq %d, %q, %v; want %q", i, seq, payload, err, r)
			}
			b = b[n:]
		}
		if !bytes.Equal(b, tail) {
			t.Fatalf("left %q, want the tail %q", b, tail)
		}
	})
}
