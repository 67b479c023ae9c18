// Package docs holds the repository's documents; its only Go file is this test, which keeps
// them standing alone: every link resolves inside the repository and every document they
// name exists in it.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// mdLink is a Markdown link's target: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// docName is a file name ending in .md or .yaml as prose mentions one (SPEC.md, stream.md).
	docName = regexp.MustCompile(`[A-Za-z0-9_./-]+\.(?:md|yaml)\b`)
)

// documents are the files a newcomer reads: the README, the changelog and docs/.
func documents(t *testing.T) []string {
	t.Helper()
	files := []string{"../README.md", "../CHANGELOG.md"}
	for _, pattern := range []string{"*.md", "*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

// repoNames is the base name of every file in the repository (outside .git and node_modules).
func repoNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == ".npm-cache") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			names[d.Name()] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestDocumentsStandAlone: the README, the changelog and docs/ link only to files of the
// repository (or to web addresses), and every .md or .yaml document they name exists here:
// nothing points at a document a reader of the repository does not have.
func TestDocumentsStandAlone(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	names := repoNames(t)
	for _, file := range documents(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(file), target))
			if err != nil {
				t.Fatal(err)
			}
			if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %q leaves the repository", file, m[1])
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s: link %q: %v", file, m[1], err)
			}
		}
		for _, name := range docName.FindAllString(text, -1) {
			if strings.Contains(name, "://") || strings.HasPrefix(name, "//") {
				continue
			}
			if strings.Contains(name, "shared/") || !names[filepath.Base(name)] {
				t.Errorf("%s: names %q, which is not in the repository", file, name)
			}
		}
	}
}
