package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// desk is one desk process slot: its addresses and data directory stay, the process is
// started again after each failure. Every incarnation logs to a file of its own.
type desk struct {
	name, bin, cfg, dsn, dir string
	addr, admin              string

	mu          sync.Mutex
	cmd         *exec.Cmd
	incarnation int
	logPath     string
	exited      chan struct{}
	exitErr     error
	logs        []string // every incarnation's log file
}

func newDesk(name, bin, cfg, dsn, root string) (*desk, error) {
	d := &desk{name: name, bin: bin, cfg: cfg, dsn: dsn, dir: filepath.Join(root, "desk-"+name)}
	var err error
	if d.addr, err = freeAddr(); err != nil {
		return nil, err
	}
	if d.admin, err = freeAddr(); err != nil {
		return nil, err
	}
	return d, os.MkdirAll(d.dir, 0o700)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (d *desk) base() string { return "http://" + d.addr }

// start starts a new incarnation with -role auto.
func (d *desk) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.incarnation++
	d.logPath = filepath.Join(d.dir, fmt.Sprintf("desk-%s-%03d.log", d.name, d.incarnation))
	f, err := os.Create(d.logPath)
	if err != nil {
		return err
	}
	d.logs = append(d.logs, d.logPath)
	cmd := exec.Command(d.bin, "-addr", d.addr, "-admin-addr", d.admin, "-data", filepath.Join(d.dir, "data"),
		"-config", d.cfg, "-journal", d.dsn, "-role", "auto", "-log-level", "info")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start desk %s: %w", d.name, err)
	}
	d.cmd, d.exited, d.exitErr = cmd, make(chan struct{}), nil
	exited := d.exited
	go func() {
		err := cmd.Wait()
		f.Close()
		d.mu.Lock()
		d.exitErr = err
		d.mu.Unlock()
		close(exited)
	}()
	return nil
}

// signal sends sig to the running incarnation.
func (d *desk) signal(sig syscall.Signal) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || d.cmd.Process == nil {
		return errors.New("not running")
	}
	return d.cmd.Process.Signal(sig)
}

// done is closed when the running incarnation exits.
func (d *desk) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.exited
}

// exitCode is the exit status of the last incarnation once done (-1 for a signal).
func (d *desk) exitCode() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(d.exitErr, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// log is the running (or last) incarnation's log.
func (d *desk) log() string {
	d.mu.Lock()
	p := d.logPath
	d.mu.Unlock()
	b, _ := os.ReadFile(p)
	return string(b)
}

// terminate stops the running incarnation: SIGCONT (in case it is paused), SIGTERM, then
// SIGKILL after 10 s.
func (d *desk) terminate() {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

var httpc = &http.Client{Timeout: 2 * time.Second}

// status is the answer of GET path on the admin listener (0 when it does not answer).
func (d *desk) status(path string) int {
	resp, err := httpc.Get("http://" + d.admin + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReady waits until /readyz answers 200.
func (d *desk) waitReady(ctx context.Context, within time.Duration) error {
	return d.waitStatus(ctx, within, "/readyz", http.StatusOK, "serve")
}

// waitStandby waits until the admin listener answers (/healthz) with /readyz not ready.
func (d *desk) waitStandby(ctx context.Context, within time.Duration) error {
	if err := d.waitStatus(ctx, within, "/healthz", http.StatusOK, "stand by"); err != nil {
		return err
	}
	if s := d.status("/readyz"); s != http.StatusServiceUnavailable {
		return fmt.Errorf("desk %s should stand by, its /readyz answers %d", d.name, s)
	}
	return nil
}

func (d *desk) waitStatus(ctx context.Context, within time.Duration, path string, want int, what string) error {
	deadline := time.Now().Add(within)
	for {
		if d.status(path) == want {
			return nil
		}
		select {
		case <-d.done():
			return fmt.Errorf("desk %s exited (%d) before it could %s:\n%s", d.name, d.exitCode(), what, tail(d.log(), 20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("desk %s did not %s within %v:\n%s", d.name, what, within, tail(d.log(), 20))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// leadsRE finds the epochs a desk incarnation logged it leads under.
var leadsRE = regexp.MustCompile(`msg="desk leads".*desk_epoch=(\d+) ledger_epoch=(\d+)`)

// epochs returns, for every incarnation of this desk, the (desk, ledger) epochs it led
// under, keyed by "<name>#<incarnation>".
func (d *desk) epochs() map[string][2]uint64 {
	d.mu.Lock()
	logs := append([]string(nil), d.logs...)
	d.mu.Unlock()
	out := map[string][2]uint64{}
	for i, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if m := leadsRE.FindSubmatch(line); m != nil {
				de, _ := strconv.ParseUint(string(m[1]), 10, 64)
				le, _ := strconv.ParseUint(string(m[2]), 10, 64)
				out[fmt.Sprintf("%s#%d", d.name, i+1)] = [2]uint64{de, le}
			}
		}
	}
	return out
}
