package journal

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// TestHeaderBytes pins the encoded segment and snapshot headers to the bytes of format
// version 2, so a change to how they are built cannot change what is on disk, and checks
// that each decodes back and names its kind when damaged or of another version.
func TestHeaderBytes(t *testing.T) {
	seg := segHeader{version: FormatVersion, epoch: 7, firstSeq: 42}
	snap := snapHeader{version: FormatVersion, seq: 9, epoch: 3, length: 1234, dataCRC: 0xdeadbeef}
	for _, c := range []struct {
		name, want string
		got        []byte
		decode     func([]byte) (any, error)
	}{
		{"segment", "524651444a5345470200000007000000000000002a000000000000009480ed0c", seg.encode(),
			func(b []byte) (any, error) { return decodeSegHeader(b) }},
		{"snapshot", "52465144534e4150020000000000000009000000000000000300000000000000d204000000000000efbeadde22afeab8", snap.encode(),
			func(b []byte) (any, error) { return decodeSnapHeader(b) }},
	} {
		if hex.EncodeToString(c.got) != c.want {
			t.Errorf("%s header encodes to %x, want %s", c.name, c.got, c.want)
		}
		if back, err := c.decode(c.got); err != nil || (back != any(seg) && back != any(snap)) {
			t.Errorf("%s header decodes to %+v, %v", c.name, back, err)
		}
		if _, err := c.decode(c.got[:len(c.got)-1]); err == nil || !strings.HasPrefix(err.Error(), c.name+" header: ") {
			t.Errorf("a short %s header: %v", c.name, err)
		}
		other := append([]byte(nil), c.got...)
		other[8] = FormatVersion + 1
		if _, err := c.decode(seal(other[:len(other)-4])); !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), c.name+" version 3") {
			t.Errorf("a %s header of version 3: %v", c.name, err)
		}
	}
}
