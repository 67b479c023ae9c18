package journal_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/journal/journaltest"
)

// TestConformance runs the suite every backend of journal.Shared passes against the file
// log (small segments, so that pruning has whole segments to drop).
func TestConformance(t *testing.T) {
	dirs := map[string]string{}
	dir := func(t *testing.T, name string) string {
		if _, ok := dirs[t.Name()+"/"+name]; !ok {
			dirs[t.Name()+"/"+name] = filepath.Join(t.TempDir(), name)
		}
		return dirs[t.Name()+"/"+name]
	}
	journaltest.Run(t, journaltest.Backend{
		Open: func(t *testing.T, name string, epoch uint64) (journal.Shared, error) {
			return journal.OpenDir(dir(t, name), journal.Options{Epoch: epoch, Sync: journal.SyncNone, SegmentSize: 512})
		},
		Tear: func(t *testing.T, name string) {
			d := dir(t, name)
			entries, err := os.ReadDir(d)
			if err != nil {
				t.Fatal(err)
			}
			var segs []string
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".seg") {
					segs = append(segs, e.Name())
				}
			}
			slices.Sort(segs)
			// The last segment holding records: a take over may have started an empty one.
			for i := len(segs) - 1; i >= 0; i-- {
				p := filepath.Join(d, segs[i])
				st, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if st.Size() > 32 { // more than the segment header
					if err := os.Truncate(p, st.Size()-3); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
			t.Fatal("no segment with records to tear")
		},
	})
}

// TestConformanceMem runs the suite against MemLog handles (autoSync): the in-memory
// backend the simulator's takeover uses.
func TestConformanceMem(t *testing.T) {
	logs := map[string]*journal.MemLog{}
	journaltest.Run(t, journaltest.Backend{
		Concurrent: true,
		Open: func(t *testing.T, name string, _ uint64) (journal.Shared, error) {
			key := t.Name() + "/" + name
			if logs[key] == nil {
				logs[key] = journal.NewMemLog(true)
			}
			return logs[key].Handle(), nil
		},
	})
}
