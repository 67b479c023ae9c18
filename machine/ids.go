package machine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// IDGen draws the desk's ids from a seed and a counter, both kept in the state, so that a
// replay of the same inputs produces the same ids. Ids are unpredictable enough to be
// unguessable by accident but are not secrets: ownership checks protect every resource.
type IDGen struct {
	Seed    uint64 `json:"seed"`
	Counter uint64 `json:"counter"`
}

// next returns 16 fresh pseudo-random bytes.
func (g *IDGen) next() [16]byte {
	g.Counter++
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], g.Seed)
	binary.BigEndian.PutUint64(buf[8:], g.Counter)
	sum := sha256.Sum256(buf[:])
	var out [16]byte
	copy(out[:], sum[:16])
	return out
}

// New returns prefix followed by 24 hex characters, for example "rfq_3f9c…".
func (g *IDGen) New(prefix string) string {
	b := g.next()
	var h [24]byte
	hex.Encode(h[:], b[:12])
	var s strings.Builder // one allocation for the whole id
	s.Grow(len(prefix) + len(h))
	s.WriteString(prefix)
	s.Write(h[:])
	return s.String()
}

// Suffix returns n (at most 32) lower-case alphanumeric characters, for hint suffixes.
func (g *IDGen) Suffix(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := g.next()
	out := make([]byte, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, alphabet[int(b[i%16]^byte(i/16*31))%len(alphabet)])
	}
	return string(out)
}

// Id prefixes of DECISIONS.md.
const (
	prefixRFQ          = "rfq_"
	prefixQuote        = "q_"
	prefixTrade        = "t_"
	prefixAction       = "act_"
	prefixRegistration = "reg_"
	prefixHistory      = "h_"
)
