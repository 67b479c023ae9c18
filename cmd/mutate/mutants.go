package main

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Mutant is one planted bug: the lines Old of File, which must occur there exactly once,
// replaced by the lines New.
type Mutant struct {
	Name  string // short, unique, [a-z0-9-]
	Class string // which blind spot of the issue it probes (see classes)
	File  string // slash-separated path from the repository root
	Old   string // the exact text replaced (lines joined by "\n")
	New   string // its replacement
	Line  int    // where the mutant starts in the mutants file, for messages
}

// classes are the six kinds of bug the simulator was blind to (issue 16), plus "state" for
// bugs in the entity machines' transitions and bookkeeping.
var classes = map[string]string{
	"answer":    "whether an answer is right (status, code, body)",
	"authz":     "a missing ownership or authentication check",
	"read":      "a read that differs from the truth",
	"ledger":    "ledger state the desk forgot or misstated",
	"oracle":    "a formula the simulator used to take from the code under test",
	"boundary":  "an input at a boundary (tier, minimum, deadline, bound)",
	"state":     "a transition or bookkeeping slip in an entity machine",
	"lifecycle": "an expiry, window or retention slip",
}

var (
	headerRE = regexp.MustCompile(`^== ([a-z0-9][a-z0-9-]*) \(([a-z]+)\) (\S+)$`)
	maxBlock = 200 // lines of one side of a mutant: a limit on everything
)

// ParseMutants reads the mutants file format (see testdata/mutants.txt's header):
//
//	== name (class) path/to/file.go
//	-old line
//	+new line
//
// Lines starting with '#' and blank lines between mutants are ignored. Inside a mutant
// every line is '-' or '+' followed by the line's text as it stands in the file.
func ParseMutants(r io.Reader) ([]Mutant, error) {
	var (
		out  []Mutant
		cur  *Mutant
		olds []string
		news []string
		seen = map[string]int{}
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		if len(olds) == 0 {
			return fmt.Errorf("line %d: mutant %s has no '-' line to replace", cur.Line, cur.Name)
		}
		cur.Old, cur.New = strings.Join(olds, "\n"), strings.Join(news, "\n")
		if cur.Old == cur.New {
			return fmt.Errorf("line %d: mutant %s changes nothing", cur.Line, cur.Name)
		}
		out = append(out, *cur)
		cur, olds, news = nil, nil, nil
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "=="):
			if err := flush(); err != nil {
				return nil, err
			}
			m := headerRE.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("line %d: want '== name (class) path', got %q", n, line)
			}
			if _, ok := classes[m[2]]; !ok {
				return nil, fmt.Errorf("line %d: unknown class %q (one of %s)", n, m[2], classList())
			}
			if first, dup := seen[m[1]]; dup {
				return nil, fmt.Errorf("line %d: mutant %s already defined at line %d", n, m[1], first)
			}
			if filepath.IsAbs(m[3]) || strings.Contains(m[3], "..") {
				return nil, fmt.Errorf("line %d: path %q must be relative to the repository root", n, m[3])
			}
			seen[m[1]] = n
			cur = &Mutant{Name: m[1], Class: m[2], File: m[3], Line: n}
		case strings.HasPrefix(line, "-") && cur != nil:
			if len(news) > 0 {
				return nil, fmt.Errorf("line %d: mutant %s: '-' lines come before '+' lines", n, cur.Name)
			}
			if olds = append(olds, line[1:]); len(olds) > maxBlock {
				return nil, fmt.Errorf("line %d: mutant %s replaces more than %d lines", n, cur.Name, maxBlock)
			}
		case strings.HasPrefix(line, "+") && cur != nil:
			if news = append(news, line[1:]); len(news) > maxBlock {
				return nil, fmt.Errorf("line %d: mutant %s adds more than %d lines", n, cur.Name, maxBlock)
			}
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
			if err := flush(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("line %d: want a '==' header, a '-' or '+' line, a comment or a blank line, got %q", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mutants: %w", err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func classList() string {
	names := make([]string, 0, len(classes))
	for _, c := range []string{"answer", "authz", "read", "ledger", "oracle", "boundary", "state", "lifecycle"} {
		if _, ok := classes[c]; ok {
			names = append(names, c)
		}
	}
	return strings.Join(names, ", ")
}

// Apply returns the mutated content of m's file under root, or an error naming why the
// mutant no longer applies (its lines are gone or appear more than once).
func (m Mutant) Apply(root string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.File)))
	if err != nil {
		return nil, fmt.Errorf("mutant %s: %w", m.Name, err)
	}
	src := string(b)
	switch n := strings.Count(src, m.Old); n {
	case 1:
		return []byte(strings.Replace(src, m.Old, m.New, 1)), nil
	case 0:
		return nil, fmt.Errorf("mutant %s (line %d): its lines are not in %s any more: update the mutant", m.Name, m.Line, m.File)
	default:
		return nil, fmt.Errorf("mutant %s (line %d): its lines occur %d times in %s: give more context", m.Name, m.Line, n, m.File)
	}
}

// parses reports whether src is still a Go file, so a mutant that the file's next edit
// broke is found by `-check` and the test rather than by a failed build in the middle of
// a long run.
func parses(name string, src []byte) error {
	if _, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution); err != nil {
		return fmt.Errorf("the mutated %s does not parse: %w", name, err)
	}
	return nil
}
