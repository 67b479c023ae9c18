package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds a command of this module into dir and returns its path.
func buildBinary(t testing.TB, dir, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// walkthroughCommands returns the command lines of the first ```sh block of the README's
// walkthrough section, comments stripped.
func walkthroughCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Walkthrough: from clone to a settled trade")
	if !ok {
		t.Fatal("README has no walkthrough section")
	}
	_, block, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		t.Fatal("the walkthrough has no ```sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// splitArgs splits a shell command line on spaces, honouring double quotes.
func splitArgs(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, has := false, false
	for _, r := range line {
		switch {
		case r == '"':
			inQuote, has = !inQuote, true
		case r == ' ' && !inQuote:
			if has {
				args = append(args, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteRune(r)
			has = true
		}
	}
	if has {
		args = append(args, cur.String())
	}
	return args
}

// TestREADMEWalkthrough runs the README walkthrough's literal commands as a new user would,
// in a fresh directory, with `go run ./cmd/X` replaced by the built binary (and the desk
// moved to free ports): every step must succeed, and the trade must settle with the house
// maker and show in the balances.
func TestREADMEWalkthrough(t *testing.T) {
	lines := walkthroughCommands(t)
	if len(lines) < 5 {
		t.Fatalf("walkthrough too short: %q", lines)
	}
	dir := t.TempDir()
	bins := map[string]string{
		"./cmd/desk":    buildBinary(t, dir, ".", "desk"),
		"./cmd/deskctl": buildBinary(t, dir, "../deskctl", "deskctl"),
	}
	work := filepath.Join(dir, "clone")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	var url string
	var desk *process
	outputs := map[string]string{}
	stopped := false
	for _, line := range lines {
		if strings.HasPrefix(line, "kill ") {
			if desk == nil {
				t.Fatalf("%q runs before the desk was started", line)
			}
			stopWalkthroughDesk(t, desk, work, line)
			stopped = true
			continue
		}
		background := strings.HasSuffix(line, "&")
		args := splitArgs(strings.TrimSpace(strings.TrimSuffix(line, "&")))
		if len(args) < 3 || args[0] != "go" || args[1] != "run" || bins[args[2]] == "" {
			t.Fatalf("walkthrough line %q is not `go run ./cmd/desk|deskctl …`", line)
		}
		bin, rest := bins[args[2]], args[3:]
		if background {
			if args[2] != "./cmd/desk" {
				t.Fatalf("only the desk runs in the background: %q", line)
			}
			desk = startWalkthroughDesk(t, bin, work, rest)
			url = desk.base
			continue
		}
		if url == "" {
			t.Fatalf("%q runs before the desk was started", line)
		}
		cmd := exec.Command(bin, rest...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "DESK_URL="+url)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("$ %s   (%s)\n%s%s", line, time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
		if err != nil {
			t.Fatalf("%q failed: %v\n%s%s", line, err, stdout.String(), stderr.String())
		}
		outputs[strings.Join(rest, " ")] = stdout.String()
	}
	if !stopped {
		t.Fatal("the walkthrough has no step that stops the desk")
	}
	trades := outputs["trades"]
	if !strings.Contains(trades, "settled") || !strings.Contains(trades, "house-maker") {
		t.Fatalf("no settled trade with the house maker:\n%s", trades)
	}
	if bal := outputs["balances"]; !strings.Contains(bal, "cbtc    0.09") {
		t.Fatalf("balances after the trade:\n%s", bal)
	}
	st, err := os.Stat(filepath.Join(work, "deskctl-identity.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("identity file: %v %v", st, err)
	}
}

// startWalkthroughDesk starts the desk binary in the user's directory on free ports, and
// stops it with SIGTERM at the end of the test.
func startWalkthroughDesk(t *testing.T, bin, work string, args []string) *process {
	t.Helper()
	cmd := exec.Command(bin, append(args, "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0")...)
	cmd.Dir = work
	p := launch(t, cmd, false)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	return p
}
