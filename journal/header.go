package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// FormatVersion is the version of the segment and snapshot formats this code writes, and
// the only one it reads. Version 1 data directories held the desk's JSON journal records
// and JSON or binary desk snapshots; version 2 holds binary records and snapshots only
// (docs/journal.md). A directory of another version is refused (ErrUnsupportedVersion)
// with a message naming both versions.
const FormatVersion = 2

// Segment header, segHeaderSize bytes at the start of every segment file:
//
//	magic    [8]byte  "RFQDJSEG"
//	version  uint16 LE
//	flags    uint16 LE (0)
//	epoch    uint64 LE
//	firstSeq uint64 LE
//	crc32c   uint32 LE over the 28 bytes before it
const segHeaderSize = 32

var segMagic = [8]byte{'R', 'F', 'Q', 'D', 'J', 'S', 'E', 'G'}

// segHeader is the decoded header of a segment.
type segHeader struct {
	version  uint16
	epoch    uint64
	firstSeq uint64
}

func (h segHeader) encode() []byte {
	b := make([]byte, 0, segHeaderSize)
	b = append(b, segMagic[:]...)
	b = binary.LittleEndian.AppendUint16(b, h.version)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, h.epoch)
	b = binary.LittleEndian.AppendUint64(b, h.firstSeq)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeSegHeader decodes and checks a segment header. The version is
// checked after the checksum, so a newer header is told apart from damage.
func decodeSegHeader(b []byte) (segHeader, error) {
	if len(b) < segHeaderSize {
		return segHeader{}, fmt.Errorf("segment header: %d bytes, want %d", len(b), segHeaderSize)
	}
	if [8]byte(b[:8]) != segMagic {
		return segHeader{}, fmt.Errorf("segment header: bad magic %q", b[:8])
	}
	if got, want := binary.LittleEndian.Uint32(b[28:32]), crc32.Checksum(b[:28], castagnoli); got != want {
		return segHeader{}, fmt.Errorf("segment header: checksum mismatch")
	}
	h := segHeader{
		version:  binary.LittleEndian.Uint16(b[8:10]),
		epoch:    binary.LittleEndian.Uint64(b[12:20]),
		firstSeq: binary.LittleEndian.Uint64(b[20:28]),
	}
	if h.version != FormatVersion {
		return h, fmt.Errorf("%w: segment version %d, this code reads only version %d", ErrUnsupportedVersion, h.version, FormatVersion)
	}
	if flags := binary.LittleEndian.Uint16(b[10:12]); flags != 0 {
		return h, fmt.Errorf("segment header: unknown flags %#x", flags)
	}
	if h.firstSeq == 0 {
		return h, fmt.Errorf("segment header: first sequence number 0")
	}
	return h, nil
}

// Snapshot header, snapHeaderSize bytes before the snapshot data:
//
//	magic    [8]byte  "RFQDSNAP"
//	version  uint16 LE
//	flags    uint16 LE (0)
//	reserved uint32 LE (0)
//	seq      uint64 LE  last record the snapshot includes
//	epoch    uint64 LE  epoch of the writer
//	length   uint64 LE  data length
//	dataCRC  uint32 LE  crc32c of the data
//	crc32c   uint32 LE  over the 44 bytes before it
const snapHeaderSize = 48

var snapMagic = [8]byte{'R', 'F', 'Q', 'D', 'S', 'N', 'A', 'P'}

// snapHeader is the decoded header of a snapshot.
type snapHeader struct {
	version uint16
	seq     uint64
	epoch   uint64
	length  uint64
	dataCRC uint32
}

func (h snapHeader) encode() []byte {
	b := make([]byte, 0, snapHeaderSize)
	b = append(b, snapMagic[:]...)
	b = binary.LittleEndian.AppendUint16(b, h.version)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, h.seq)
	b = binary.LittleEndian.AppendUint64(b, h.epoch)
	b = binary.LittleEndian.AppendUint64(b, h.length)
	b = binary.LittleEndian.AppendUint32(b, h.dataCRC)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeSnapHeader(b []byte) (snapHeader, error) {
	if len(b) < snapHeaderSize {
		return snapHeader{}, fmt.Errorf("snapshot header: %d bytes, want %d", len(b), snapHeaderSize)
	}
	if [8]byte(b[:8]) != snapMagic {
		return snapHeader{}, fmt.Errorf("snapshot header: bad magic %q", b[:8])
	}
	if got, want := binary.LittleEndian.Uint32(b[44:48]), crc32.Checksum(b[:44], castagnoli); got != want {
		return snapHeader{}, fmt.Errorf("snapshot header: checksum mismatch")
	}
	h := snapHeader{
		version: binary.LittleEndian.Uint16(b[8:10]),
		seq:     binary.LittleEndian.Uint64(b[16:24]),
		epoch:   binary.LittleEndian.Uint64(b[24:32]),
		length:  binary.LittleEndian.Uint64(b[32:40]),
		dataCRC: binary.LittleEndian.Uint32(b[40:44]),
	}
	if h.version != FormatVersion {
		return h, fmt.Errorf("%w: snapshot version %d, this code reads only version %d", ErrUnsupportedVersion, h.version, FormatVersion)
	}
	if flags := binary.LittleEndian.Uint16(b[10:12]); flags != 0 {
		return h, fmt.Errorf("snapshot header: unknown flags %#x", flags)
	}
	return h, nil
}
