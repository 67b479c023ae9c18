package journal

import (
	"bytes"
	"errors"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	recs := [][]byte{{}, []byte("a"), bytes.Repeat([]byte{0}, 100), bytes.Repeat([]byte{0xff}, 4096)}
	var buf []byte
	for i, r := range recs {
		buf = appendFrame(buf, uint64(i+7), r)
	}
	for i, r := range recs {
		seq, payload, n, err := decodeFrame(buf)
		if err != nil || seq != uint64(i+7) || !bytes.Equal(payload, r) || n != frameSize(len(r)) {
			t.Fatalf("frame %d: %d, %d bytes, n=%d, %v", i, seq, len(payload), n, err)
		}
		buf = buf[n:]
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left", len(buf))
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	good := appendFrame(nil, 42, []byte("payload"))
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		return b
	}
	huge := bytes.Clone(good)
	huge[7] = 0x10 // length 0x10000007 > MaxRecordSize
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, errFrameShort},
		{"short header", good[:frameHeaderSize-1], errFrameShort},
		{"short payload", good[:len(good)-1], errFrameShort},
		{"zeros", make([]byte, 64), errFrameChecksum},
		{"too large", huge, errFrameTooLarge},
		{"checksum", flip(0), errFrameChecksum},
		{"length longer", flip(4), errFrameShort},
		{"length shorter", append(flip(4)[:4], append([]byte{3}, good[5:]...)...), errFrameChecksum},
		{"sequence", flip(8), errFrameChecksum},
		{"payload", flip(frameHeaderSize + 3), errFrameChecksum},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, _, err := decodeFrame(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("decodeFrame = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFindValidFrame(t *testing.T) {
	frame := appendFrame(nil, 10, []byte("next"))
	cases := []struct {
		name   string
		b      []byte
		minSeq uint64
		off    int
		ok     bool
	}{
		{"zeros", make([]byte, 4096), 1, 0, false},
		{"garbage then frame", append(bytes.Repeat([]byte{0xa5}, 33), frame...), 9, 33, true},
		{"frame of an older sequence", append(make([]byte, 8), frame...), 11, 0, false},
		{"frame too far ahead", append(make([]byte, 8), frame...), 1, 0, false},
		{"frame at offset 0 is the bad one", frame, 10, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			off, _, ok := findValidFrame(tc.b, tc.minSeq)
			if ok != tc.ok || off != tc.off {
				t.Fatalf("findValidFrame = %d, %v; want %d, %v", off, ok, tc.off, tc.ok)
			}
		})
	}
}

func TestHeadersRoundTrip(t *testing.T) {
	sh := segHeader{version: FormatVersion, epoch: 9, firstSeq: 1234}
	if got, err := decodeSegHeader(sh.encode()); err != nil || got != sh {
		t.Fatalf("segment header: %+v, %v", got, err)
	}
	nh := snapHeader{version: FormatVersion, seq: 5, epoch: 9, length: 77, dataCRC: 0xdeadbeef}
	if got, err := decodeSnapHeader(nh.encode()); err != nil || got != nh {
		t.Fatalf("snapshot header: %+v, %v", got, err)
	}
	for i := range segHeaderSize {
		b := sh.encode()
		b[i] ^= 1
		if _, err := decodeSegHeader(b); err == nil {
			t.Fatalf("segment header with byte %d flipped decodes", i)
		}
	}
	for i := range snapHeaderSize {
		b := nh.encode()
		b[i] ^= 1
		if _, err := decodeSnapHeader(b); err == nil {
			t.Fatalf("snapshot header with byte %d flipped decodes", i)
		}
	}
}
