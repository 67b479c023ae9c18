// Package pglog serves the desk's logs (journal.Shared) from PostgreSQL, through
// github.com/jackc/pgx/v5: both logs of a desk (its inputs and its embedded ledger's)
// and their snapshots live in one database, where a hot standby follows them and takes
// them over.
//
// Each log is a row of rfqdesk_log (its epoch, its head: the last durable sequence
// number, and its first held record) and its records are rows of rfqdesk_record, in the
// same bytes the file log frames. An append is one statement that updates the head only
// if the row's (epoch, head) is still what the writer expects, and inserts the records
// only if it did: a writer that another one took over from has its appends refused
// (journal.ErrFenced), and never writes after the new writer's records. Appends are
// group-committed: every record queued while one statement runs goes in the next.
// A trigger notifies channel rfqdesk_log on every change of a head; followers take it as
// a wake-up only and always read by position.
package pglog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deskco/rfqdesk/journal"
)

// SchemaVersion is the version of the tables this code reads and writes. A database
// whose schema is newer is refused at start.
const SchemaVersion = 1

// NotifyChannel is the channel every change of a log's head is notified on (the log's
// name is the payload).
const NotifyChannel = "rfqdesk_log"

// schema creates the tables (idempotent). rfqdesk_schema holds one row: the version.
const schema = `
CREATE TABLE IF NOT EXISTS rfqdesk_schema (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS rfqdesk_log (
	name      text PRIMARY KEY,
	epoch     bigint NOT NULL DEFAULT 0,
	head      bigint NOT NULL DEFAULT 0,
	first_seq bigint NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS rfqdesk_record (
	log   text   NOT NULL,
	seq   bigint NOT NULL,
	epoch bigint NOT NULL,
	rec   bytea  NOT NULL,
	PRIMARY KEY (log, seq)
);
CREATE TABLE IF NOT EXISTS rfqdesk_snapshot (
	log   text   NOT NULL,
	seq   bigint NOT NULL,
	epoch bigint NOT NULL,
	data  bytea  NOT NULL,
	PRIMARY KEY (log, seq)
);
CREATE OR REPLACE FUNCTION rfqdesk_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('rfqdesk_log', NEW.name);
	RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS rfqdesk_log_notify ON rfqdesk_log;
CREATE TRIGGER rfqdesk_log_notify AFTER UPDATE OF head, epoch ON rfqdesk_log
	FOR EACH ROW EXECUTE FUNCTION rfqdesk_notify();
`

// schemaLockKey serializes schema creation between desks starting at once
// (pg_advisory_xact_lock).
const schemaLockKey = 0x7266716465736b00 // "rfqdesk\0"

// LeaderLockKey is the session advisory lock that decides which desk of a database
// should lead (Store.Lead).
const LeaderLockKey = 0x7266716465736b01

// ErrSchemaTooNew means the database was set up by a newer desk.
var ErrSchemaTooNew = errors.New("pglog: the database's schema is newer than this desk")

// Options configure a Store. The zero value is usable.
type Options struct {
	// MaxBatchBytes bounds the record bytes one append statement carries, and the bytes
	// queued for the writer (journal.DefaultMaxBatchBytes when 0).
	MaxBatchBytes int
	// KeepSnapshots is how many snapshots Prune keeps (journal.DefaultKeepSnapshots
	// when 0).
	KeepSnapshots int
	// MaxSnapshotSize bounds a snapshot (journal.DefaultMaxSnapshot when 0).
	MaxSnapshotSize int64
	// PollInterval is how long Follow waits for a notification before it reads anyway
	// (1 s when 0): a lost notification delays a follower by at most this much.
	PollInterval time.Duration
	// ConnectTimeout bounds the first connection (10 s when 0).
	ConnectTimeout time.Duration
	// OnCommit, if set, hears of every group commit: how many records one statement
	// carried and how long it took. It runs on the writer goroutine and must be quick.
	OnCommit func(log string, records int, took time.Duration)
	// OnFenced, if set, hears once per log handle that another writer took the log
	// over: the first append, snapshot or prune that was refused. A desk stops serving.
	OnFenced func(log string, err error)
	// OnWriteFailure, if set, hears once per log handle of the first append that failed
	// for good: fenced, or of unknown outcome (a broken connection), after which the
	// handle writes nothing more until it is taken over again. A desk stops serving.
	OnWriteFailure func(log string, err error)
}

// Store is a database holding the desk's logs: a pool of connections shared by its logs.
type Store struct {
	pool *pgxpool.Pool
	cfg  *pgx.ConnConfig
	opts Options
	// where names the database without the password, for messages.
	where string
}

// IsURL reports whether s is a PostgreSQL connection URL (postgres:// or postgresql://).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns the URL with its password replaced, for messages and logs.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(an unparsable PostgreSQL URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Open connects to the database at dsn (a postgres:// URL), creates the tables when they
// are missing and checks their version. Every failure is an error that says what to fix
// (unreachable, refused credentials, a newer schema), with the password redacted.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	where := Redact(dsn)
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pglog: %s is not a valid PostgreSQL URL: %w", where, errors.Unwrap(err))
	}
	pc.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	pc.MaxConns = max(pc.MaxConns, 8)
	cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(cctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pglog: connect to %s: %w", where, err)
	}
	s := &Store{pool: pool, cfg: pc.ConnConfig, opts: opts, where: where}
	if err := s.setup(cctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// connectError explains a failure to reach or log in to the database.
func (s *Store) connectError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01", "28000":
			return fmt.Errorf("pglog: %s refused the credentials (%s): check the user and password in -journal", s.where, pe.Message)
		case "3D000":
			return fmt.Errorf("pglog: %s: the database does not exist (%s): create it first", s.where, pe.Message)
		}
	}
	return fmt.Errorf("pglog: cannot reach %s: %w", s.where, err)
}

// setup creates the schema when missing and refuses a newer one.
func (s *Store) setup(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.connectError(err)
	}
	defer conn.Release()
	var version *int
	err = conn.QueryRow(ctx, `SELECT max(version) FROM rfqdesk_schema`).Scan(&version)
	var pe *pgconn.PgError
	switch {
	case err == nil && version != nil:
		if *version > SchemaVersion {
			return fmt.Errorf("%w: %s holds schema version %d, this desk reads only version %d: run a desk at least as new as the one that wrote it",
				ErrSchemaTooNew, s.where, *version, SchemaVersion)
		}
		if *version == SchemaVersion {
			return nil
		}
	case err == nil, errors.As(err, &pe) && pe.Code == "42P01": // empty, or no table yet
	default:
		return fmt.Errorf("pglog: read the schema version in %s: %w", s.where, err)
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLockKey)); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'rfqdesk_schema'`).Scan(&n); err != nil {
			return err
		}
		if n == 1 {
			var v *int
			if err := tx.QueryRow(ctx, `SELECT max(version) FROM rfqdesk_schema`).Scan(&v); err != nil {
				return err
			}
			if v != nil && *v >= SchemaVersion {
				return nil // another desk set it up meanwhile
			}
		}
		if _, err := tx.Exec(ctx, schema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM rfqdesk_schema; INSERT INTO rfqdesk_schema (version) VALUES (1)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("pglog: create the tables in %s: %w", s.where, err)
	}
	return nil
}

// Where names the database (without its password).
func (s *Store) Where() string { return s.where }

// Close closes the store's connections. Close its logs first.
func (s *Store) Close() { s.pool.Close() }

// dedicated opens a connection of its own (LISTEN, the leader's lock): not from the pool,
// whose connections are shared.
func (s *Store) dedicated(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg.Copy())
	if err != nil {
		return nil, s.connectError(err)
	}
	return conn, nil
}

// OpenLog opens the log called name as a follower (node.Journals).
func (s *Store) OpenLog(ctx context.Context, name string) (journal.Shared, error) {
	return s.Log(ctx, name)
}
