//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package journal

import (
	"errors"
	"os"
)

var errUnsupportedOS = errors.New("journal: file log not supported on this operating system")

func lockDir(string) (*os.File, error) { return nil, errUnsupportedOS }

func syncDir(string) error { return errUnsupportedOS }
