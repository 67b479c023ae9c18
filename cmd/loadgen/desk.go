package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// deskConfig is the desk's configuration under load: a low minimum ticket, no faucet
// cooldown, generous faucet amounts, a per-IP limit high enough for hundreds of
// registrations from one address, and no house parties.
const deskConfig = `
min_notional_usd = "1"
faucet_cooldown = "0s"
per_ip_per_minute = 100000
house = []

[[instrument]]
symbol = "cbtc"
display = "CBTC"
decimals = 8
usd_price = "100000"
faucet_amount = "10"

[[instrument]]
symbol = "usdcx"
display = "USDCx"
decimals = 6
usd_price = "1"
faucet_amount = "1000000"
`

// checkLoopback refuses a base URL whose host is not a loopback address: the load
// generator never loads anything but the local machine.
func checkLoopback(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("-url %q: only http on loopback is allowed", base)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-url %q: host %q is not a loopback address; loadgen only drives a desk on this machine", base, host)
	}
	return nil
}

// deskProc is a desk process the load generator started.
type deskProc struct {
	base string
	cmd  *exec.Cmd
	dir  string
	done chan error
	// admin is the admin listener's base URL (its /metrics), "" when the log did not say.
	admin string
}

var (
	servingRE = regexp.MustCompile(`msg="desk serving" addr=(\S+)`)
	adminRE   = regexp.MustCompile(` admin=(\S+)`)
)

// startDesk builds cmd/desk (unless bin names a binary) and runs it on loopback ports
// with a fresh data directory, deskConfig and the extra flags; it returns once the desk
// serves.
func startDesk(ctx context.Context, bin string, extra []string, stderr io.Writer) (*deskProc, error) {
	dir, err := os.MkdirTemp("", "loadgen-desk-")
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if bin == "" {
		bin = filepath.Join(dir, "desk")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/desk")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("build cmd/desk (run from the module root, or pass -desk-bin): %w", err)
		}
	}
	cfg := filepath.Join(dir, "desk.toml")
	if err := os.WriteFile(cfg, []byte(deskConfig), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("write desk config: %w", err)
	}
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0",
		"-data", filepath.Join(dir, "data"), "-config", cfg, "-log-level", "info"}, extra...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("desk stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start desk: %w", err)
	}
	p := &deskProc{cmd: cmd, dir: dir, done: make(chan error, 1)}
	addr := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if m := servingRE.FindStringSubmatch(line); m != nil && !sent {
				var admin string
				if a := adminRE.FindStringSubmatch(line); a != nil {
					admin = a[1]
				}
				addr <- [2]string{m[1], admin}
				sent = true
				continue
			}
			if strings.Contains(line, "level=ERROR") {
				fmt.Fprintln(stderr, "desk:", line)
			}
		}
	}()
	go func() { p.done <- cmd.Wait() }()
	select {
	case a := <-addr:
		p.base = "http://" + a[0]
		if a[1] != "" {
			p.admin = "http://" + a[1]
		}
		return p, nil
	case err := <-p.done:
		os.RemoveAll(dir)
		return nil, fmt.Errorf("desk exited before serving: %v", err)
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("desk did not serve within 60s")
	}
}

// stop ends the desk with SIGTERM (a graceful shutdown), then SIGKILL after 20 s, and
// removes its data directory.
func (p *deskProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	os.RemoveAll(p.dir)
}

// perf starts `perf record` on the desk process (call graphs, 499 Hz) into path and
// returns the function that stops it and waits for the file. Without perf it warns and
// returns a no-op.
func (p *deskProc) perf(path string, stderr io.Writer) func() {
	cmd := exec.Command("perf", "record", "-F", "499", "-g", "-p", strconv.Itoa(p.cmd.Process.Pid), "-o", path)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "loadgen: no desk profile:", err)
		return func() {}
	}
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}
