package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// Defaults of the common flags.
const (
	defaultURL      = "http://127.0.0.1:8080"
	defaultIdentity = "./deskctl-identity.json"
	defaultTimeout  = 60 * time.Second
)

// apiError is the desk's refusal, as the client reports it.
type apiError = client.APIError

// errTimeout is wrapped by every wait that ran out of time (exit code 4).
var errTimeout = errors.New("timed out")

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func isTransport(err error) bool {
	var te *client.TransportError
	return errors.As(err, &te)
}

// env is one invocation: its flags, output and context.
type env struct {
	ctx            context.Context
	name           string
	stdout, stderr io.Writer
	getenv         func(string) string

	url, identity, apiKey string
	urlSet                bool
	json                  bool
	timeout               time.Duration
	idemKey               string // --idempotency-key of a write command (idempotency.go)
}

// flags returns the subcommand's flag set with the common flags registered.
func (e *env) flags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet("deskctl "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: deskctl %s [flags] %s\n", name, args)
		fs.PrintDefaults()
	}
	fs.Func("url", "desk base URL (env DESK_URL; default "+defaultURL+", or the identity file's)", func(s string) error {
		e.url, e.urlSet = s, true
		return nil
	})
	fs.StringVar(&e.identity, "identity", or(e.getenv("DESK_IDENTITY"), defaultIdentity), "identity file (env DESK_IDENTITY)")
	fs.StringVar(&e.apiKey, "api-key", e.getenv("DESK_API_KEY"), "act with this API key instead of the identity file (env DESK_API_KEY)")
	fs.BoolVar(&e.json, "json", false, "print JSON instead of tables")
	fs.DurationVar(&e.timeout, "timeout", defaultTimeout, "bound on every wait")
	return fs
}

// parse parses the flags; -h is success, a bad flag a usage error.
func (e *env) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return usageError{}
		}
		return usageError{}
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// baseURL is the desk address: -url, then DESK_URL, then the identity's, then the default.
func (e *env) baseURL(id *client.Identity) string {
	switch {
	case e.urlSet:
		return e.url
	case e.getenv("DESK_URL") != "":
		return e.getenv("DESK_URL")
	case id != nil && id.BaseURL != "":
		return id.BaseURL
	}
	return defaultURL
}

// anonymous returns a client without credentials (registration, wait).
func (e *env) anonymous() (*client.Client, error) {
	c, err := client.New(e.baseURL(nil))
	if err != nil {
		return nil, usagef("%v", err)
	}
	return c, nil
}

// client returns a client acting as the party: with -api-key, or from the identity file.
func (e *env) client() (*client.Client, *client.Identity, error) {
	if e.apiKey != "" {
		c, err := client.New(e.baseURL(nil), client.WithAPIKey(e.apiKey))
		if err != nil {
			return nil, nil, usagef("%v", err)
		}
		return c, nil, nil
	}
	id, err := client.LoadIdentity(e.identity)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, usagef("no identity file %s: run `deskctl register` first (or pass -identity / -api-key)", e.identity)
		}
		return nil, nil, usagef("%v", err)
	}
	c, err := client.New(e.baseURL(id), client.WithIdentity(id))
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	return c, id, nil
}

// call bounds one REST call.
func (e *env) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(e.ctx, e.timeout)
}

// session returns the party's client (client) and a context bounding one call (call),
// which the caller cancels.
func (e *env) session() (*client.Client, context.Context, context.CancelFunc, error) {
	c, _, err := e.client()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := e.call()
	return c, ctx, cancel, nil
}

// connect parses the subcommand's flags and, unless check (nil: none) refuses them, opens
// a session: the party's client and a context bounding one call, which the caller cancels.
func (e *env) connect(fs *flag.FlagSet, args []string, check func() error) (*client.Client, context.Context, context.CancelFunc, error) {
	if err := e.parse(fs, args); err != nil {
		return nil, nil, nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, nil, nil, err
		}
	}
	return e.session()
}

// emit prints v as JSON (with -json) or runs table.
func (e *env) emit(v any, table func(w *tabwriter.Writer)) error {
	if e.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// row writes one tab-separated table row.
func row(w io.Writer, cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(w, strings.Join(parts, "\t"))
}

// progress prints a waiting line to stderr (never to stdout, which scripts read).
func (e *env) progress(format string, args ...any) {
	fmt.Fprintf(e.stderr, format+"\n", args...)
}

// waitFor polls check every interval until it reports done, the -timeout passes (an error
// wrapping errTimeout) or check fails. It prints what it waits for every few seconds.
func (e *env) waitFor(what string, interval time.Duration, check func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(e.ctx, e.timeout)
	defer cancel()
	start := time.Now()
	lastNote := start
	for {
		done, err := check(ctx)
		if err != nil {
			if ctx.Err() != nil && e.ctx.Err() == nil {
				return fmt.Errorf("%w after %s waiting for %s", errTimeout, e.timeout, what)
			}
			return err
		}
		if done {
			return nil
		}
		if time.Since(lastNote) >= 2*time.Second {
			lastNote = time.Now()
			e.progress("… waiting for %s (%s)", what, time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			if e.ctx.Err() != nil {
				return e.ctx.Err()
			}
			return fmt.Errorf("%w after %s waiting for %s", errTimeout, e.timeout, what)
		case <-time.After(interval):
		}
	}
}

// show runs a subcommand that takes only the common flags: it fetches one answer within
// the call timeout and prints it as JSON or as the table that table draws.
func show[T any](e *env, name string, args []string, fetch func(*client.Client, context.Context) (T, error), table func(T, *tabwriter.Writer)) error {
	return query(e, e.flags(name, ""), args, fetch, table)
}

// query is show for a subcommand with flags of its own in fs, which fetch reads.
func query[T any](e *env, fs *flag.FlagSet, args []string, fetch func(*client.Client, context.Context) (T, error), table func(T, *tabwriter.Writer)) error {
	c, ctx, cancel, err := e.connect(fs, args, nil)
	if err != nil {
		return err
	}
	defer cancel()
	v, err := fetch(c, ctx)
	if err != nil {
		return err
	}
	return e.emit(v, func(w *tabwriter.Writer) { table(v, w) })
}

// onID runs a subcommand that takes one id (usage "name ID"): do acts on it as the party
// within the call timeout, and the answer is {verb: id}.
func onID(e *env, name, id, verb string, args []string, do func(*client.Client, context.Context, string) error) error {
	fs := e.flags(name, id)
	e.keyFlag(fs)
	c, ctx, cancel, err := e.connect(fs, args, func() error {
		if fs.NArg() != 1 {
			return usagef("%s %s", name, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer cancel()
	if err := do(c, e.keyed(ctx), fs.Arg(0)); err != nil {
		return err
	}
	return e.emit(map[string]string{verb: fs.Arg(0)}, func(w *tabwriter.Writer) { row(w, verb, fs.Arg(0)) })
}
