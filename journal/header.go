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
	b := segLayout.start(h.version)
	b = binary.LittleEndian.AppendUint64(b, h.epoch)
	b = binary.LittleEndian.AppendUint64(b, h.firstSeq)
	return seal(b)
}

// decodeSegHeader decodes and checks a segment header. The version is
// checked after the checksum, so a newer header is told apart from damage.
func decodeSegHeader(b []byte) (segHeader, error) {
	if err := segLayout.check(b); err != nil {
		return segHeader{}, err
	}
	h := segHeader{
		version:  binary.LittleEndian.Uint16(b[8:10]),
		epoch:    binary.LittleEndian.Uint64(b[12:20]),
		firstSeq: binary.LittleEndian.Uint64(b[20:28]),
	}
	if err := segLayout.checkVersion(b); err != nil {
		return h, err
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
	b := snapLayout.start(h.version)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, h.seq)
	b = binary.LittleEndian.AppendUint64(b, h.epoch)
	b = binary.LittleEndian.AppendUint64(b, h.length)
	b = binary.LittleEndian.AppendUint32(b, h.dataCRC)
	return seal(b)
}

func decodeSnapHeader(b []byte) (snapHeader, error) {
	if err := snapLayout.check(b); err != nil {
		return snapHeader{}, err
	}
	h := snapHeader{
		version: binary.LittleEndian.Uint16(b[8:10]),
		seq:     binary.LittleEndian.Uint64(b[16:24]),
		epoch:   binary.LittleEndian.Uint64(b[24:32]),
		length:  binary.LittleEndian.Uint64(b[32:40]),
		dataCRC: binary.LittleEndian.Uint32(b[40:44]),
	}
	return h, snapLayout.checkVersion(b)
}

// headerLayout is what the segment and the snapshot header share: size bytes that begin
// with the magic, the version and the flags (uint16 LE each, flags 0) and end with the
// crc32c (uint32 LE) of the bytes before it.
type headerLayout struct {
	name  string // in errors: "segment", "snapshot"
	magic [8]byte
	size  int
}

var (
	segLayout  = headerLayout{name: "segment", magic: segMagic, size: segHeaderSize}
	snapLayout = headerLayout{name: "snapshot", magic: snapMagic, size: snapHeaderSize}
)

// start begins a header: the magic, version and zero flags.
func (l headerLayout) start(version uint16) []byte {
	b := make([]byte, 0, l.size)
	b = append(b, l.magic[:]...)
	b = binary.LittleEndian.AppendUint16(b, version)
	return binary.LittleEndian.AppendUint16(b, 0)
}

// seal ends a header with the crc32c of b.
func seal(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// check checks a header's size, magic and checksum.
func (l headerLayout) check(b []byte) error {
	if len(b) < l.size {
		return fmt.Errorf("%s header: %d bytes, want %d", l.name, len(b), l.size)
	}
	if [8]byte(b[:8]) != l.magic {
		return fmt.Errorf("%s header: bad magic %q", l.name, b[:8])
	}
	end := l.size - 4
	if got, want := binary.LittleEndian.Uint32(b[end:l.size]), crc32.Checksum(b[:end], castagnoli); got != want {
		return fmt.Errorf("%s header: checksum mismatch", l.name)
	}
	return nil
}

// checkVersion checks, after check, that a header is of the version this code reads and
// has no flags set.
func (l headerLayout) checkVersion(b []byte) error {
	if v := binary.LittleEndian.Uint16(b[8:10]); v != FormatVersion {
		return fmt.Errorf("%w: %s version %d, this code reads only version %d", ErrUnsupportedVersion, l.name, v, FormatVersion)
	}
	if flags := binary.LittleEndian.Uint16(b[10:12]); flags != 0 {
		return fmt.Errorf("%s header: unknown flags %#x", l.name, flags)
	}
	return nil
}
