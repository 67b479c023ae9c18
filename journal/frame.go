package journal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// MaxRecordSize is the largest record the format holds. A frame header
// claiming more is damage, never a record.
const MaxRecordSize = 16 << 20

// frameHeaderSize is the size of a frame header:
//
//	crc32c uint32 LE  over the next 12 header bytes and the payload
//	length uint32 LE  payload length, at most MaxRecordSize
//	seq    uint64 LE  the record's sequence number
const frameHeaderSize = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Reasons a frame does not decode.
var (
	errFrameShort    = errors.New("incomplete frame")
	errFrameTooLarge = errors.New("frame length exceeds the maximum record size")
	errFrameChecksum = errors.New("frame checksum mismatch")
)

// frameSize is the number of bytes the frame of a record of n bytes takes.
func frameSize(n int) int { return frameHeaderSize + n }

// appendFrame appends the frame of rec, carrying sequence number seq, to dst.
func appendFrame(dst []byte, seq uint64, rec []byte) []byte {
	off := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(rec)))
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = append(dst, rec...)
	binary.LittleEndian.PutUint32(dst[off:], crc32.Checksum(dst[off+4:], castagnoli))
	return dst
}

// frameHeader is a decoded, not yet verified, frame header.
type frameHeader struct {
	crc    uint32
	length uint32
	seq    uint64
}

// parseFrameHeader decodes the first frameHeaderSize bytes of b.
func parseFrameHeader(b []byte) frameHeader {
	_ = b[frameHeaderSize-1]
	return frameHeader{
		crc:    binary.LittleEndian.Uint32(b[0:4]),
		length: binary.LittleEndian.Uint32(b[4:8]),
		seq:    binary.LittleEndian.Uint64(b[8:16]),
	}
}

// verify reports whether payload, under the raw header hdr, matches the
// header's checksum.
func (h frameHeader) verify(hdr, payload []byte) bool {
	c := crc32.Update(0, castagnoli, hdr[4:frameHeaderSize])
	return crc32.Update(c, castagnoli, payload) == h.crc
}

// decodeFrame decodes the frame at the start of b. It returns the record's
// sequence number, its payload (a sub-slice of b) and the frame's size.
func decodeFrame(b []byte) (seq uint64, payload []byte, n int, err error) {
	if len(b) < frameHeaderSize {
		return 0, nil, 0, errFrameShort
	}
	h := parseFrameHeader(b)
	if h.length > MaxRecordSize {
		return 0, nil, 0, errFrameTooLarge
	}
	n = frameSize(int(h.length))
	if len(b) < n {
		return 0, nil, 0, errFrameShort
	}
	payload = b[frameHeaderSize:n]
	if !h.verify(b[:frameHeaderSize], payload) {
		return 0, nil, 0, errFrameChecksum
	}
	return h.seq, payload, n, nil
}

// findValidFrame looks for a frame that decodes at any offset after the
// start of b and carries a sequence number a log could hold there: at least
// minSeq and at most minSeq plus the number of frames that fit in b. It is
// the test that tells a torn tail (nothing valid follows) from damage in
// the middle of the log. The sequence window is checked before the
// checksum, so zeroed or random tails are scanned at memory speed.
func findValidFrame(b []byte, minSeq uint64) (off int, seq uint64, ok bool) {
	maxSeq := minSeq + uint64(len(b)/frameHeaderSize)
	for p := 1; p+frameHeaderSize <= len(b); p++ {
		h := parseFrameHeader(b[p:])
		if h.seq < minSeq || h.seq > maxSeq || h.length > MaxRecordSize {
			continue
		}
		if s, _, _, err := decodeFrame(b[p:]); err == nil {
			return p, s, true
		}
	}
	return 0, 0, false
}
