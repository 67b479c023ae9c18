package pglog

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/internal/pgcluster"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/journal/journaltest"
)

// cluster is the package's PostgreSQL, started by TestMain (nil without binaries:
// clusterErr says why).
var (
	cluster    *pgcluster.Cluster
	clusterErr error
)

func TestMain(m *testing.M) {
	cluster, clusterErr = pgcluster.ForTests()
	code := m.Run()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// newDB creates a database of the test's own and returns its URL.
func newDB(t testing.TB) string {
	c := pgcluster.Need(t, cluster, clusterErr)
	name := strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	dsn, err := c.CreateDatabase(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

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
