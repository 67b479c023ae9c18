// Package buildinfo says what a binary was built from, as the Go toolchain recorded it: the
// main module's version, the VCS revision and commit time, and whether the tree had
// uncommitted changes. Every command under cmd/ prints it for -version.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Info is the build information of the running binary. Fields the toolchain did not record
// (a `go run` or `go test` binary, a build with -buildvcs=false, a tree outside a
// repository) are empty.
type Info struct {
	Module    string // main module path, e.g. github.com/deskco/rfqdesk
	Version   string // main module version: a tag, a pseudo-version, or "(devel)"
	GoVersion string // toolchain, e.g. go1.26.8
	Revision  string // vcs.revision: the commit hash
	Time      string // vcs.time: the commit time, RFC 3339
	Modified  bool   // vcs.modified: the tree had uncommitted changes
}

// Read returns the running binary's build information; without any (a binary built
// without module support) it returns an Info whose fields are all empty.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts an Info from what runtime/debug reports.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Module: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// Line is the one line a command prints for -version, led by the command's name:
//
//	desk github.com/deskco/rfqdesk v0.0.0-20261125202000-d9f5424abcde revision d9f5424abcde… 2026-11-25T20:20:00Z modified go1.26.8
//
// Fields the toolchain did not record are written "unknown" (the tree's state too, when
// there is no VCS information), so the line always has the same shape.
func (i Info) Line(command string) string {
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	state := "clean"
	switch {
	case i.Modified:
		state = "modified"
	case i.Revision == "":
		state = "unknown" // no VCS information at all
	}
	return fmt.Sprintf("%s %s %s revision %s %s %s %s", command, orUnknown(i.Module), orUnknown(i.Version),
		orUnknown(i.Revision), orUnknown(i.Time), state, orUnknown(i.GoVersion))
}

// Requested reports whether a command's arguments ask for its version: the first argument
// is -version or --version. Commands check it before parsing anything else, so -version
// works whatever other flags or subcommands the command has.
func Requested(args []string) bool {
	return len(args) > 0 && (args[0] == "-version" || args[0] == "--version")
}
