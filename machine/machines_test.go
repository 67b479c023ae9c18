package machine

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestMachineGraphs keeps a DOT diagram of every entity machine in testdata/, generated from
// the configured machines, so the docs are always the code. Run with -update after a change.
func TestMachineGraphs(t *testing.T) {
	for kind, dot := range buildMachines().graphs() {
		path := filepath.Join("testdata", "machines", kind+".dot")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(dot), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./machine -run TestMachineGraphs -update)", err)
		}
		if string(want) != dot {
			t.Errorf("%s machine changed; review and run with -update:\n%s", kind, dot)
		}
	}
}
