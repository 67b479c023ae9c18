package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pidFileName is the file in the data directory that names the running desk's process, so
// that a script, or the README's walkthrough, can stop exactly that process with
// `kill $(cat desk-data/desk.pid)`. `go run ./cmd/desk &` makes the shell's job the go
// command, not the desk: killing the job leaves the desk running, holding the port and the
// data directory's lock.
const pidFileName = "desk.pid"

// writePIDFile writes the process id into the data directory. It is called once the
// journals' locks are held, so no other desk on this directory is running and a file left
// behind by a desk that died is overwritten. The returned function removes the file if it
// still names this process.
func writePIDFile(dir string) (remove func(), err error) {
	path := filepath.Join(dir, pidFileName)
	pid := strconv.Itoa(os.Getpid())
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(pid+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write the pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write the pid file: %w", err)
	}
	return func() {
		b, err := os.ReadFile(path)
		if err == nil && strings.TrimSpace(string(b)) == pid {
			err = os.Remove(path)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "desk: remove the pid file:", err)
		}
	}, nil
}
