package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/deskco/rfqdesk", Version: "v0.0.0-20261125202000-d9f5424abcde+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "d9f5424abcdef0123456789abcdef0123456789a"},
			{Key: "vcs.time", Value: "2026-11-25T20:20:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	want := Info{
		Module:    "github.com/deskco/rfqdesk",
		Version:   "v0.0.0-20261125202000-d9f5424abcde+dirty",
		GoVersion: "go1.26.8",
		Revision:  "d9f5424abcdef0123456789abcdef0123456789a",
		Time:      "2026-11-25T20:20:00Z",
		Modified:  true,
	}
	got := FromBuildInfo(bi)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("FromBuildInfo (-want +got):\n%s", diff)
	}
	wantLine := "desk github.com/deskco/rfqdesk v0.0.0-20261125202000-d9f5424abcde+dirty revision " +
		"d9f5424abcdef0123456789abcdef0123456789a 2026-11-25T20:20:00Z modified go1.26.8"
	if line := got.Line("desk"); line != wantLine {
		t.Errorf("Line:\n got %q\nwant %q", line, wantLine)
	}

	bi.Settings[4].Value = "false"
	if line := FromBuildInfo(bi).Line("desk"); !strings.Contains(line, " 2026-11-25T20:20:00Z clean go1.26.8") {
		t.Errorf("an unmodified tree: %q", line)
	}
}

// TestLineWithoutVCS: a binary without VCS stamps (go run, go test, -buildvcs=false) still
// prints a line of the same shape, saying what it does not know.
func TestLineWithoutVCS(t *testing.T) {
	info := FromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/deskco/rfqdesk", Version: "(devel)"}})
	want := "sim github.com/deskco/rfqdesk (devel) revision unknown unknown unknown go1.26.8"
	if got := info.Line("sim"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := (Info{}).Line("x"), "x unknown unknown revision unknown unknown unknown unknown"; got != want {
		t.Errorf("empty Info: got %q, want %q", got, want)
	}
	if n := len(strings.Fields(Info{}.Line("x"))); n != len(strings.Fields(info.Line("x"))) {
		t.Errorf("lines of different shapes")
	}
}

// TestReadInTest: a test binary has build information, and the toolchain's version is in it.
func TestReadInTest(t *testing.T) {
	if got := Read(); !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("Read in a test binary: %+v", got)
	}
}

func TestRequested(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{}, false},
		{[]string{"-version"}, true},
		{[]string{"--version"}, true},
		{[]string{"-version", "-addr", ":0"}, true},
		{[]string{"version"}, false},
		{[]string{"---version"}, false},
		{[]string{"-addr", ":0", "-version"}, false},
		{[]string{"rfq", "-version"}, false},
	} {
		if got := Requested(c.args); got != c.want {
			t.Errorf("Requested(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
