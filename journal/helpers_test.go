package journal

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// rec is the test record number i: its length varies with i so frames
// do not line up on round offsets.
func rec(i int) []byte {
	return fmt.Appendf(nil, "record-%d-%s", i, bytes.Repeat([]byte{'x'}, i%37))
}

// logBuffer collects what a FileLog reports.
type logBuffer struct{ bytes.Buffer }

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(&b.Buffer, nil)) }

// open opens dir with SyncNone unless opts says otherwise and closes the
// log at the end of the test.
func open(t testing.TB, dir string, opts Options) *FileLog {
	t.Helper()
	l, err := OpenDir(dir, opts)
	if err != nil {
		t.Fatalf("OpenDir(%s): %v", dir, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// appendN appends records from..to (inclusive) one Append each and checks
// the sequence numbers they get.
func appendN(t testing.TB, l Log, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		seq, err := l.Append(context.Background(), rec(i))
		if err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
		if seq != uint64(i) {
			t.Fatalf("Append(%d) got sequence %d", i, seq)
		}
	}
}

type entry struct {
	seq uint64
	rec string
}

func readAll(t testing.TB, l Log, from uint64) []entry {
	t.Helper()
	var out []entry
	if err := l.ReadFrom(from, func(seq uint64, r []byte) error {
		out = append(out, entry{seq, string(r)})
		return nil
	}); err != nil {
		t.Fatalf("ReadFrom(%d): %v", from, err)
	}
	return out
}

// wantRecords checks that l holds exactly records from..to, and no more
// when to is l's last record.
func wantRecords(t testing.TB, l Log, from, to int) {
	t.Helper()
	got := readAll(t, l, uint64(from))
	if l.LastSeq() > uint64(to) {
		got = slices.DeleteFunc(got, func(e entry) bool { return e.seq > uint64(to) })
	}
	var want []entry
	for i := from; i <= to; i++ {
		want = append(want, entry{uint64(i), string(rec(i))})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ReadFrom(%d): got %d records %v..., want %d (%d..%d)", from, len(got), head(got), len(want), from, to)
	}
}

func head(e []entry) []entry { return e[:min(len(e), 3)] }

// segFiles lists the segment files of dir in order.
func segFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// frameOffsets returns the byte offset of every frame in a segment file.
func frameOffsets(t testing.TB, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for off := segHeaderSize; off < len(b); {
		_, _, n, err := decodeFrame(b[off:])
		if err != nil {
			t.Fatalf("%s offset %d: %v", path, off, err)
		}
		offs = append(offs, int64(off))
		off += n
	}
	return offs
}
