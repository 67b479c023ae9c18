package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// buildLog writes records 1..n into a new directory and closes it.
func buildLog(t *testing.T, n int, opts Options) string {
	t.Helper()
	dir := t.TempDir()
	l := open(t, dir, opts)
	appendN(t, l, 1, n)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// damage rewrites bytes of a file.
type damage func(b []byte, at int) []byte

var tailDamages = map[string]damage{
	"truncate": func(b []byte, at int) []byte { return b[:at] },
	"zero-fill": func(b []byte, at int) []byte {
		clear(b[at:])
		return b
	},
	"invert": func(b []byte, at int) []byte {
		for i := at; i < len(b); i++ {
			b[i] = ^b[i]
		}
		return b
	},
}

func rewrite(t *testing.T, path string, d damage, at int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, d(b, at), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTornTailEveryOffset tears the last record at every byte offset, in
// three ways, in a one-segment and a many-segment log: recovery keeps the
// records before it, cuts the tail, reports it, and appends continue the
// sequence.
func TestTornTailEveryOffset(t *testing.T) {
	const n = 20
	layouts := map[string]Options{
		"one-segment":   {Sync: SyncNone},
		"many-segments": {Sync: SyncNone, SegmentSize: 200},
	}
	for layout, opts := range layouts {
		base := buildLog(t, n, opts)
		segs := segFiles(t, base)
		last := filepath.Base(segs[len(segs)-1])
		offs := frameOffsets(t, segs[len(segs)-1])
		start := int(offs[len(offs)-1])
		fi, err := os.Stat(segs[len(segs)-1])
		if err != nil {
			t.Fatal(err)
		}
		end := int(fi.Size())
		for how, d := range tailDamages {
			t.Run(layout+"/"+how, func(t *testing.T) {
				for at := start; at < end; at++ {
					dir := copyDir(t, base)
					rewrite(t, filepath.Join(dir, last), d, at)
					var logs logBuffer
					l, err := OpenDir(dir, Options{Sync: SyncNone, SegmentSize: opts.SegmentSize, Logger: logs.logger()})
					if err != nil {
						t.Fatalf("offset %d: OpenDir: %v", at, err)
					}
					r := l.Recovery()
					if r.LastSeq != n-1 {
						t.Fatalf("offset %d: recovered up to %d, want %d", at, r.LastSeq, n-1)
					}
					torn := !(how == "truncate" && at == start)
					if torn != (r.TornTail != nil) {
						t.Fatalf("offset %d: TornTail = %+v, want torn=%v", at, r.TornTail, torn)
					}
					if torn {
						if r.TornTail.Offset != int64(start) || !strings.Contains(logs.String(), "torn tail") {
							t.Fatalf("offset %d: TornTail = %+v, log %q", at, r.TornTail, logs.String())
						}
					}
					if seq, err := l.Append(context.Background(), rec(n)); err != nil || seq != n {
						t.Fatalf("offset %d: Append after recovery = %d, %v", at, seq, err)
					}
					l.Close()
					l = open(t, dir, Options{Sync: SyncNone})
					if l.Recovery().TornTail != nil {
						t.Fatalf("offset %d: second recovery found a torn tail", at)
					}
					wantRecords(t, l, 1, n)
					l.Close()
				}
			})
		}
	}
}

// TestTornTailSeveralRecords: a whole unsynced batch lost at the end.
func TestTornTailSeveralRecords(t *testing.T) {
	dir := buildLog(t, 20, noSync)
	seg := segFiles(t, dir)[0]
	offs := frameOffsets(t, seg)
	rewrite(t, seg, tailDamages["zero-fill"], int(offs[15])+3)
	l := open(t, dir, noSync)
	if r := l.Recovery(); r.LastSeq != 15 || r.TornTail == nil || r.TornTail.Offset != offs[15] {
		t.Fatalf("Recovery = %+v", r)
	}
	wantRecords(t, l, 1, 15)
}

// TestCorruptMiddleRecord damages one byte of a record that has valid
// records after it: the start stops with a CorruptionError naming the
// segment and the frame's offset, and nothing is cut.
func TestCorruptMiddleRecord(t *testing.T) {
	cases := []struct {
		name   string
		within int // byte within the frame
	}{
		{"checksum", 1},
		{"length-low", 4},
		{"length-high", 7},
		{"sequence", 9},
		{"payload", frameHeaderSize + 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := buildLog(t, 20, noSync)
			seg := segFiles(t, dir)[0]
			offs := frameOffsets(t, seg)
			before, _ := os.ReadFile(seg)
			flipByte(t, seg, offs[9]+int64(tc.within))
			_, err := OpenDir(dir, noSync)
			var ce *CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("OpenDir = %v, want a CorruptionError", err)
			}
			if ce.Path != seg || ce.Offset != offs[9] {
				t.Fatalf("CorruptionError names %s offset %d, want %s offset %d", ce.Path, ce.Offset, seg, offs[9])
			}
			if !strings.Contains(err.Error(), seg) {
				t.Fatalf("error %q does not name the segment", err)
			}
			after, _ := os.ReadFile(seg)
			after[offs[9]+int64(tc.within)] ^= 0x40
			if string(before) != string(after) {
				t.Fatal("the segment was modified")
			}
		})
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptOlderSegment: any bad frame in a segment that is not the
// last one is corruption, even its very last frame, and so is a torn one.
func TestCorruptOlderSegment(t *testing.T) {
	opts := Options{Sync: SyncNone, SegmentSize: 300}
	for how, d := range tailDamages {
		t.Run(how, func(t *testing.T) {
			dir := buildLog(t, 40, opts)
			segs := segFiles(t, dir)
			if len(segs) < 3 {
				t.Fatalf("%d segments", len(segs))
			}
			offs := frameOffsets(t, segs[1])
			at := offs[len(offs)-1]
			rewrite(t, segs[1], d, int(at)+5)
			_, err := OpenDir(dir, opts)
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Path != segs[1] || ce.Offset != at {
				t.Fatalf("OpenDir = %v, want corruption in %s at %d", err, segs[1], at)
			}
		})
	}
}

func TestSegmentStructure(t *testing.T) {
	opts := Options{Sync: SyncNone, SegmentSize: 300}
	cases := []struct {
		name   string
		break_ func(t *testing.T, segs []string)
		check  func(t *testing.T, err error, segs []string)
	}{
		{
			name:   "gap",
			break_: func(t *testing.T, segs []string) { os.Remove(segs[1]) },
			check:  wantCorruption(2, 0, "previous segment ends"),
		},
		{
			name:   "header checksum",
			break_: func(t *testing.T, segs []string) { flipByte(t, segs[1], 21) },
			check:  wantCorruption(1, 0, "checksum"),
		},
		{
			name:   "header magic",
			break_: func(t *testing.T, segs []string) { flipByte(t, segs[2], 0) },
			check:  wantCorruption(2, 0, "magic"),
		},
		{
			name: "renamed segment",
			break_: func(t *testing.T, segs []string) {
				last := segs[len(segs)-1]
				first, _ := parseSegName(filepath.Base(last))
				os.Rename(last, filepath.Join(filepath.Dir(last), segName(first+1000)))
			},
			check: func(t *testing.T, err error, _ []string) {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "file name") {
					t.Fatalf("OpenDir = %v", err)
				}
			},
		},
		{
			name: "newer version",
			break_: func(t *testing.T, segs []string) {
				b, _ := os.ReadFile(segs[0])
				h, _ := decodeSegHeader(b)
				h.version = FormatVersion + 1
				copy(b, h.encode())
				os.WriteFile(segs[0], b, 0o644)
			},
			check: func(t *testing.T, err error, segs []string) {
				if !errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segs[0]) {
					t.Fatalf("OpenDir = %v, want ErrUnsupportedVersion naming %s", err, segs[0])
				}
			},
		},
		{
			name: "older version",
			break_: func(t *testing.T, segs []string) {
				b, _ := os.ReadFile(segs[0])
				h, _ := decodeSegHeader(b)
				h.version = FormatVersion - 1
				copy(b, h.encode())
				os.WriteFile(segs[0], b, 0o644)
			},
			check: func(t *testing.T, err error, segs []string) {
				want := fmt.Sprintf("segment version %d, this code reads only version %d", FormatVersion-1, FormatVersion)
				if !errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segs[0]) ||
					!strings.Contains(err.Error(), want) {
					t.Fatalf("OpenDir = %v, want ErrUnsupportedVersion naming %s and %q", err, segs[0], want)
				}
			},
		},
		{
			name: "leftover temporary segment",
			break_: func(t *testing.T, segs []string) {
				os.WriteFile(filepath.Join(filepath.Dir(segs[0]), segName(999)+tmpSuffix), []byte("RFQD"), 0o644)
			},
			check: func(t *testing.T, err error, _ []string) {
				if err != nil {
					t.Fatalf("OpenDir = %v", err)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := buildLog(t, 40, opts)
			segs := segFiles(t, dir)
			tc.break_(t, segs)
			l, err := OpenDir(dir, opts)
			if err == nil {
				defer l.Close()
			}
			tc.check(t, err, segs)
		})
	}
}

func wantCorruption(seg int, off int64, reason string) func(*testing.T, error, []string) {
	return func(t *testing.T, err error, segs []string) {
		t.Helper()
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.Path != segs[seg] || ce.Offset != off || !strings.Contains(ce.Reason, reason) {
			t.Fatalf("OpenDir = %v, want corruption in %s at %d (%s)", err, segs[seg], off, reason)
		}
	}
}

func TestLockContention(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, noSync)
	_, err := OpenDir(dir, noSync)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second OpenDir = %v, want ErrLocked", err)
	}
	appendN(t, l, 1, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, noSync)
	wantRecords(t, l, 1, 3)
}
