package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepositoryMutantsApply keeps testdata/mutants.txt in step with the code: every
// mutant's lines occur exactly once in its file and the mutated file still parses. An edit
// that moves a mutant's lines fails here, not in the middle of a long `make mutate`.
func TestRepositoryMutantsApply(t *testing.T) {
	root := filepath.Join("..", "..")
	f, err := os.Open(filepath.Join(root, "testdata", "mutants.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := ParseMutants(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 30 {
		t.Fatalf("only %d mutants: the list is the measure of the simulator's teeth, keep it broad", len(ms))
	}
	perClass := map[string]int{}
	for _, m := range ms {
		perClass[m.Class]++
		if err := CheckMutant(root, m); err != nil {
			t.Error(err)
		}
	}
	for c := range classes {
		if perClass[c] == 0 {
			t.Errorf("no mutant of class %s (%s)", c, classes[c])
		}
	}
}

func TestParseMutants(t *testing.T) {
	good := "# a comment\n\n== a-b (answer) machine/x.go\n-\told\n-\tlines\n+\tnew\n\n== c (read) y.go\n-gone\n"
	ms, err := ParseMutants(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Name != "a-b" || ms[0].Class != "answer" || ms[0].File != "machine/x.go" ||
		ms[0].Old != "\told\n\tlines" || ms[0].New != "\tnew" || ms[0].Line != 3 || ms[1].New != "" || ms[1].Old != "gone" {
		t.Fatalf("parsed %+v", ms)
	}
	for name, bad := range map[string]string{
		"no header":      "-old\n",
		"bad header":     "== Name (answer) x.go\n-a\n",
		"unknown class":  "== a (nope) x.go\n-a\n",
		"duplicate":      "== a (read) x.go\n-a\n\n== a (read) y.go\n-b\n",
		"absolute path":  "== a (read) /etc/x.go\n-a\n",
		"parent path":    "== a (read) ../x.go\n-a\n",
		"nothing to cut": "== a (read) x.go\n+b\n",
		"no change":      "== a (read) x.go\n-b\n+b\n",
		"minus after":    "== a (read) x.go\n-a\n+b\n-c\n",
		"stray line":     "== a (read) x.go\n-a\nplain\n",
	} {
		if _, err := ParseMutants(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error for %q", name, bad)
		}
	}
}

func TestApply(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.go"), []byte("package f\n\nvar a = 1\nvar b = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Mutant{Name: "m", File: "f.go", Old: "var a = 1", New: "var a = 2"}.Apply(dir)
	if err != nil || string(got) != "package f\n\nvar a = 2\nvar b = 1\n" {
		t.Fatalf("Apply = %q, %v", got, err)
	}
	if _, err := (Mutant{Name: "m", File: "f.go", Old: "= 1", New: "= 2"}).Apply(dir); err == nil {
		t.Error("an ambiguous mutant applied")
	}
	if _, err := (Mutant{Name: "m", File: "f.go", Old: "var c", New: "var d"}).Apply(dir); err == nil {
		t.Error("a mutant whose lines are gone applied")
	}
	if err := CheckMutant(dir, Mutant{Name: "m", File: "f.go", Old: "var a = 1", New: "var a = "}); err == nil {
		t.Error("a mutant that breaks the syntax passed the check")
	}
}

// FuzzParseMutants: the parser never panics, and what it accepts is well formed.
func FuzzParseMutants(f *testing.F) {
	f.Add("== a (answer) x.go\n-a\n+b\n")
	f.Add("# c\n\n== a-1 (state) m/q.go\n-\tx\n")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMutants(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.Old == "" || m.Old == m.New || classes[m.Class] == "" || m.Name == "" {
				t.Fatalf("accepted a malformed mutant %+v", m)
			}
		}
	})
}
