package loop

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"pgregory.net/rapid"
)

// TestHashingBufferIsTheEncodingAndItsHash: whatever the pieces and however often the
// buffer grows under them, finish returns their concatenation and its SHA-256.
func TestHashingBufferIsTheEncodingAndItsHash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := newHashingBuffer(rapid.IntRange(0, 64).Draw(t, "hint"))
		var want []byte
		for _, p := range rapid.SliceOfN(rapid.SliceOfN(rapid.Byte(), 0, 300), 0, 40).Draw(t, "pieces") {
			if n, err := b.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			want = append(want, p...)
			// The caller may reuse its piece at once: the buffer must have copied it.
			for i := range p {
				p[i] ^= 0xff
			}
		}
		got, sum := b.finish()
		if !bytes.Equal(got, want) {
			t.Fatalf("buffer holds %x, want %x", got, want)
		}
		if sum != sha256.Sum256(want) {
			t.Fatal("sum is not the SHA-256 of the encoding")
		}
	})
}
