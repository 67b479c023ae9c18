package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/journal"
)

// stopWalkthroughDesk runs the walkthrough's stop line through the shell, exactly as
// written, and checks that it stopped the desk process itself (the one the pid file names),
// and that afterwards the desk's port and its data directory's lock are free.
func stopWalkthroughDesk(t *testing.T, desk *process, work, line string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(work, "desk-data", pidFileName))
	if err != nil {
		t.Fatalf("the desk wrote no pid file: %v", err)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || pid != desk.cmd.Process.Pid {
		t.Fatalf("the pid file says %q, the desk is %d", b, desk.cmd.Process.Pid)
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%q failed: %v\n%s", line, err, out)
	}
	exited := make(chan error, 1)
	go func() { exited <- desk.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the desk did not exit cleanly after %q: %v", line, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the desk still runs 20s after %q", line)
	}
	addr := strings.TrimPrefix(desk.base, "http://")
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the desk's port %s is still taken after the stop step: %v", addr, err)
	}
	_ = l.Close()
	for _, sub := range []string{"desk", "ledger"} {
		j, err := journal.OpenDir(filepath.Join(work, "desk-data", sub), journal.Options{})
		if err != nil {
			t.Fatalf("the %s journal's lock is still held after the stop step: %v", sub, err)
		}
		_ = j.Close()
	}
	if _, err := os.Stat(filepath.Join(work, "desk-data", pidFileName)); !os.IsNotExist(err) {
		t.Fatalf("the pid file outlived the desk: %v", err)
	}
}
