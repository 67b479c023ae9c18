// Package pgcluster starts a throwaway PostgreSQL cluster from the machine's own
// binaries (Debian's postgresql package): initdb into a temporary directory, listening on
// 127.0.0.1 and a free port only, password authentication over TCP. The conformance
// tests of the PostgreSQL log, the standby's tests and `make ha` use it; it is never part
// of a desk.
package pgcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv names the environment variable that makes a missing PostgreSQL a test
// failure instead of a skip (CI sets it, having installed the package).
const RequireEnv = "RFQDESK_REQUIRE_POSTGRES"

// ErrNoBinaries means no PostgreSQL server binaries were found.
var ErrNoBinaries = errors.New("pgcluster: no PostgreSQL binaries (initdb, pg_ctl) on PATH or under /usr/lib/postgresql/*/bin; install Debian's postgresql package")

// User is the cluster's superuser.
const User = "postgres"

// Cluster is a running cluster. Stop it when done.
type Cluster struct {
	// Port is the TCP port on 127.0.0.1.
	Port int
	// Password is the superuser's password.
	Password string
	dir, bin string
	runAs    []string // runuser prefix when started as root
}

// findBin returns the directory holding initdb and pg_ctl.
func findBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { // the newest major version first
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

// Available reports whether Start can find the binaries.
func Available() bool {
	_, err := findBin()
	return err == nil
}

// Start initializes and starts a cluster. As root it runs the server as the postgres
// user (PostgreSQL refuses root), in a directory owned by it.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rfqdesk-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: temp dir: %w", err)
	}
	c := &Cluster{dir: dir, bin: bin}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgcluster: running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("pgcluster: chown %s: %w", dir, err)
		}
		c.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	var pw [12]byte
	_, _ = rand.Read(pw[:])
	c.Password = hex.EncodeToString(pw[:])
	pwfile := filepath.Join(dir, "pw")
	if err := c.writeOwned(pwfile, c.Password+"\n"); err != nil {
		return nil, err
	}
	if out, err := c.cmd(ctx, "initdb", "-D", filepath.Join(dir, "data"), "-U", User, "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgcluster: initdb: %w\n%s", err, out)
	}
	for attempt := 0; ; attempt++ {
		c.Port, err = freePort()
		if err != nil {
			return nil, err
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c max_connections=200", c.Port, dir)
		out, err := c.cmd(ctx, "pg_ctl", "-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "log"),
			"-o", opts, "-w", "-t", "60", "start").CombinedOutput()
		if err == nil {
			break
		}
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			return nil, fmt.Errorf("pgcluster: pg_ctl start: %w\n%s\n%s", err, out, log)
		}
	}
	ok = true
	return c, nil
}

func (c *Cluster) writeOwned(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if c.runAs != nil {
		u, _ := user.Lookup("postgres")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(path, uid, gid); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
	}
	return nil
}

func (c *Cluster) cmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := append(slices.Clone(c.runAs), append([]string{filepath.Join(c.bin, name)}, args...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.dir
	return cmd
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL is the connection string of database db for the superuser.
func (c *Cluster) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(User, c.Password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateDatabase creates database db and returns its connection string.
func (c *Cluster) CreateDatabase(ctx context.Context, db string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgcluster: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgcluster: create database %s: %w", db, err)
	}
	return c.URL(db), nil
}

// Stop stops the server (fast shutdown) and removes its directory.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := c.cmd(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgcluster: pg_ctl stop: %w\n%s", err, out)
	}
	return os.RemoveAll(c.dir)
}

// ForTests starts a cluster for a package's tests (call it from TestMain, and Stop the
// cluster after m.Run). Without binaries it returns nil and a reason, and Need skips
// every test that needs PostgreSQL, unless RequireEnv is set.
func ForTests() (*Cluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return Start(ctx)
}

// Need returns c, skipping t when there is no cluster (why says why) or failing it when
// RequireEnv is set.
func Need(t testing.TB, c *Cluster, why error) *Cluster {
	t.Helper()
	if c != nil {
		return c
	}
	if v := strings.TrimSpace(os.Getenv(RequireEnv)); v != "" && v != "0" {
		t.Fatalf("PostgreSQL is required (%s=%s) but could not be started: %v", RequireEnv, v, why)
	}
	t.Skipf("no PostgreSQL to test against (%v); set %s=1 to make this a failure", why, RequireEnv)
	return nil
}

// Lazy is a test package's cluster: started by the first test that asks for a database,
// stopped by the package's TestMain after m.Run (Stop). The zero value is ready to use.
type Lazy struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// Database creates a database of the test's own and returns its URL, starting the cluster
// on first use; without PostgreSQL it skips t (or fails it under RequireEnv, as Need).
func (l *Lazy) Database(t testing.TB) string {
	t.Helper()
	c := l.Cluster(t)
	name := strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	dsn, err := c.CreateDatabase(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Cluster returns the cluster, starting it on first use; without PostgreSQL it skips t (or
// fails it under RequireEnv, as Need).
func (l *Lazy) Cluster(t testing.TB) *Cluster {
	t.Helper()
	l.once.Do(func() { l.cluster, l.err = ForTests() })
	return Need(t, l.cluster, l.err)
}

// Run is the body of the package's TestMain: it runs the tests, stops the cluster if one
// started, and returns the exit code, 1 when the tests passed but the cluster would not
// stop (the error goes to stderr).
func (l *Lazy) Run(m *testing.M) int {
	code := m.Run()
	if err := l.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// Stop stops the cluster if a test started one.
func (l *Lazy) Stop() error {
	if l.cluster == nil {
		return nil
	}
	return l.cluster.Stop()
}
