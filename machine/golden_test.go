package machine

import (
	"os"
	"path/filepath"
)

// restoreGolden reads the golden snapshot testdata/formats/name, written by an older desk,
// and restores it; it fails the test unless both work. It returns the bytes and the desk.
func restoreGolden(t tb, name string) ([]byte, *Desk) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "formats", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Restore(b)
	if err != nil {
		t.Fatalf("golden snapshot %s: %v", name, err)
	}
	return b, d
}

// encodeRestore is d's binary snapshot and the desk restored from it; it fails the test
// unless both work.
func encodeRestore(t tb, d *Desk) ([]byte, *Desk) {
	t.Helper()
	b, err := d.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Restore(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, back
}
