package pglog

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
)

// TestBadConfiguration: an unreachable database, refused credentials, a missing database
// and a schema written by a newer desk each fail Open with an error that says so, and
// never show the password.
func TestBadConfiguration(t *testing.T) {
	dsn := newDB(t)
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now
	cluster := pg.Cluster(t)
	wrongPW := *cluster
	wrongPW.Password = "not-the-password"
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"unreachable", "postgres://postgres:secret-pw@127.0.0.1:" + strconv.Itoa(port) + "/x?sslmode=disable", "cannot reach"},
		{"credentials", wrongPW.URL("postgres"), "refused the credentials"},
		{"no database", cluster.URL("nosuchdb"), "does not exist"},
		{"not a URL", "postgres://%zz", "not a valid PostgreSQL URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(ctx, tc.dsn, Options{ConnectTimeout: 3 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want an error saying %q", err, tc.want)
			}
			for _, secret := range []string{"secret-pw", "not-the-password", cluster.Password} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error shows a password: %v", err)
				}
			}
		})
	}
	t.Run("newer schema", func(t *testing.T) {
		s := openStore(t, dsn, Options{})
		if _, err := s.pool.Exec(ctx, `UPDATE rfqdesk_schema SET version = $1`, SchemaVersion+1); err != nil {
			t.Fatal(err)
		}
		_, err := Open(ctx, dsn, Options{})
		if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "version 2") {
			t.Fatalf("Open: %v, want ErrSchemaTooNew naming version 2", err)
		}
	})
}

// TestSchemaReopen: a second Open of a set-up database changes nothing and keeps the
// logs.
func TestSchemaReopen(t *testing.T) {
	dsn := newDB(t)
	ctx := context.Background()
	a := openStore(t, dsn, Options{})
	l, err := a.Log(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TakeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, []byte("one")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	b := openStore(t, dsn, Options{})
	l2, err := b.Log(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LastSeq() != 1 {
		t.Fatalf("LastSeq after reopening: %d", l2.LastSeq())
	}
	// A follower may not write.
	if _, err := l2.Append(ctx, []byte("two")); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("a follower's Append: %v, want ErrFenced", err)
	}
}

// TestLease: one leader at a time; a released lease lets the next one in; a leader whose
// session goes silent (a paused process) loses the lock after the lease timeout.
func TestLease(t *testing.T) {
	dsn := newDB(t)
	ctx := context.Background()
	a, b := openStore(t, dsn, Options{}), openStore(t, dsn, Options{})
	la, ok, err := a.TryLead(ctx, time.Second)
	if err != nil || !ok {
		t.Fatalf("first TryLead: %v %v", ok, err)
	}
	if _, ok, err := b.TryLead(ctx, time.Second); err != nil || ok {
		t.Fatalf("second TryLead while held: %v %v", ok, err)
	}
	la.Release()
	lb, err := b.Lead(ctx, time.Second, 20*time.Millisecond)
	if err != nil {
		t.Fatalf("Lead after release: %v", err)
	}
	// Pause lb's keep-alive as a SIGSTOP would: its session times out.
	close(lb.stop)
	<-lb.done
	start := time.Now()
	lc, err := a.Lead(ctx, time.Second, 20*time.Millisecond)
	if err != nil {
		t.Fatalf("Lead after the leader went silent: %v", err)
	}
	defer lc.Release()
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("took %v to take a silent leader's lock", took)
	}
	_ = lb.conn.Close(ctx)
}

// TestWriteFailureReported: an append whose connection breaks fails for good (its outcome
// is unknown), every later append fails too, and OnWriteFailure hears of it once.
func TestWriteFailureReported(t *testing.T) {
	dsn := newDB(t)
	ctx := context.Background()
	var mu sync.Mutex
	var failures []string
	s := openStore(t, dsn, Options{OnWriteFailure: func(log string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, log+": "+err.Error())
	}})
	l, err := s.Log(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.TakeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, []byte("one")); err != nil {
		t.Fatal(err)
	}
	// Break every connection of the pool from the server's side.
	admin := openStore(t, dsn, Options{})
	if _, err := admin.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND datname = current_database() AND backend_type = 'client backend'`); err != nil {
		t.Fatal(err)
	}
	_, err1 := l.Append(ctx, []byte("two"))
	_, err2 := l.Append(ctx, []byte("three"))
	mu.Lock()
	defer mu.Unlock()
	if err1 == nil {
		// The pool checked the connection before lending it (it had been idle for a
		// while on a slow machine) and replaced it: nothing failed, nothing is reported.
		if err2 != nil || len(failures) != 0 {
			t.Fatalf("appends on a replaced connection: %v; reported %v", err2, failures)
		}
		t.Skip("the pool replaced the broken connection before the append")
	}
	if err2 == nil || len(failures) != 1 || !strings.Contains(failures[0], "outcome unknown") {
		t.Fatalf("after a failed append: the next one %v; reported %v", err2, failures)
	}
}
