package pglog

import (
	"context"
	"os"
	"testing"

	"github.com/deskco/rfqdesk/internal/pgcluster"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/journal/journaltest"
)

// pg is the package's PostgreSQL cluster, started by the first test that needs it and
// stopped by TestMain (pgcluster.Lazy.Run).
var pg pgcluster.Lazy

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// newDB creates a database of the test's own and returns its URL.
func newDB(t testing.TB) string { return pg.Database(t) }

// openStore opens a Store on dsn, closed at the end of the test.
func openStore(t testing.TB, dsn string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestConformance runs the suite every backend of journal.Shared passes against
// PostgreSQL: each open is a Store of its own, as a second process would have.
func TestConformance(t *testing.T) {
	dsn := newDB(t)
	journaltest.Run(t, journaltest.Backend{
		Concurrent: true,
		Open: func(t *testing.T, name string, _ uint64) (journal.Shared, error) {
			s := openStore(t, dsn, Options{})
			return s.Log(context.Background(), t.Name()+"/"+name)
		},
	})
}
