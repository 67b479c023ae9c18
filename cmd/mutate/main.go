// Command mutate measures the simulator's teeth: it plants each mutant of a list (one
// plausible bug in the desk's code, testdata/mutants.txt) and reports which ones the
// simulator and the rapid property tests catch within a fixed seed budget.
//
//	go run ./cmd/mutate                       # every mutant, the default budget
//	go run ./cmd/mutate -only 'fee|tier' -v   # a few, with each check's output
//	go run ./cmd/mutate -check                # only check that every mutant still applies
//
// A mutant is never written into the work tree: it is planted through the go command's
// -overlay flag, so an interrupted run leaves nothing behind and runs can go side by side.
// For each mutant it builds cmd/sim with the mutant, runs -seeds seeds with harsh faults and
// crashes, then -seeds seeds without faults, and then the rapid tests (-rapid): the first
// check that fails catches the mutant (-all runs every check). It prints one row per mutant
// and the share caught, and exits 0 when the share is at least -min (default 0.9), 1 when
// it is below, 2 for bad flags or a mutant that no longer applies or compiles.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/internal/cli"
)

func main() { cli.Main("mutate", run) }

// budget is what each mutant gets.
type budget struct {
	seeds     int
	duration  time.Duration
	crashRate float64
	rapid     int // RAPID_CHECKS for the rapid tests; 0 skips them
	jobs      int
	timeout   time.Duration // per check
	all       bool
	verbose   bool
}

// rapidTests are the property and state-machine tests the mutants are run against.
const (
	rapidPattern = "Property|StateMachine"
	rapidPkgs    = "./sim/... ./machine/... ./money/..."
)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("mutants", "testdata/mutants.txt", "the mutants `file`")
	only := fs.String("only", "", "run only the mutants whose name matches this `regexp`")
	check := fs.Bool("check", false, "only check that every mutant applies and its file still parses; run nothing")
	min := fs.Float64("min", 0.9, "the share of mutants that must be caught (exit 1 below it)")
	var b budget
	fs.IntVar(&b.seeds, "seeds", 10, "seeds of each simulation phase (harsh with crashes, then no faults)")
	fs.DurationVar(&b.duration, "duration", 10*time.Minute, "simulated busy time of each seed")
	fs.Float64Var(&b.crashRate, "crash-rate", 0.0005, "crash rate of the harsh phase")
	fs.IntVar(&b.rapid, "rapid", 100, "RAPID_CHECKS of the rapid tests (0: skip them)")
	fs.IntVar(&b.jobs, "jobs", 2, "seeds a simulation phase runs at once")
	fs.DurationVar(&b.timeout, "timeout", 10*time.Minute, "limit on one check; a check that runs longer is an ERROR row, not a catch")
	fs.BoolVar(&b.all, "all", false, "run every check of every mutant, not only up to the first that catches it")
	fs.BoolVar(&b.verbose, "v", false, "print the output of each failing check")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mutate: unexpected arguments %q\n", fs.Args())
		return 2
	}
	switch {
	case b.seeds < 0 || b.jobs < 1 || b.rapid < 0 || b.duration <= 0 || b.timeout <= 0:
		fmt.Fprintln(stderr, "mutate: -seeds and -rapid must be >= 0, -jobs >= 1, -duration and -timeout > 0")
		return 2
	case b.crashRate < 0 || b.crashRate > 1 || *min < 0 || *min > 1:
		fmt.Fprintln(stderr, "mutate: -crash-rate and -min must be within [0, 1]")
		return 2
	case b.seeds == 0 && b.rapid == 0:
		fmt.Fprintln(stderr, "mutate: with -seeds 0 and -rapid 0 nothing could catch a mutant")
		return 2
	}
	var filter *regexp.Regexp
	if *only != "" {
		var err error
		if filter, err = regexp.Compile(*only); err != nil {
			fmt.Fprintf(stderr, "mutate: -only: %v\n", err)
			return 2
		}
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	f, err := os.Open(*file)
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	mutants, err := ParseMutants(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %s: %v\n", *file, err)
		return 2
	}
	var selected []Mutant
	for _, m := range mutants {
		if filter == nil || filter.MatchString(m.Name) {
			selected = append(selected, m)
		}
	}
	if len(selected) == 0 {
		fmt.Fprintln(stderr, "mutate: no mutant selected")
		return 2
	}
	var bad []string
	for _, m := range selected {
		if err := CheckMutant(root, m); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "mutate: %d mutants no longer apply:\n  %s\n", len(bad), strings.Join(bad, "\n  "))
		return 2
	}
	if *check {
		fmt.Fprintf(stdout, "%d mutants apply\n", len(selected))
		return 0
	}
	tmp, err := os.MkdirTemp("", "rfqdesk-mutate-")
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(stdout, "%d mutants; each: %d seeds x %s harsh (crash rate %g) + %d seeds x %s no faults + rapid (RAPID_CHECKS=%d) of %s\n",
		len(selected), b.seeds, b.duration, b.crashRate, b.seeds, b.duration, b.rapid, rapidPkgs)
	fmt.Fprintf(stdout, "%-34s %-9s %-8s %-28s %s\n", "mutant", "class", "result", "caught by", "time")
	caught, broken := 0, 0
	byClass := map[string][2]int{}
	for i, m := range selected {
		dir := filepath.Join(tmp, fmt.Sprint(i))
		start := time.Now()
		res, err := runMutant(root, dir, m, b, stderr)
		c := byClass[m.Class]
		c[1]++
		switch {
		case err != nil:
			broken++
			fmt.Fprintf(stdout, "%-34s %-9s %-8s %v\n", m.Name, m.Class, "ERROR", err)
		case len(res) > 0:
			caught++
			c[0]++
			fmt.Fprintf(stdout, "%-34s %-9s %-8s %-28s %s\n", m.Name, m.Class, "caught", strings.Join(res, ", "), time.Since(start).Round(time.Second))
		default:
			fmt.Fprintf(stdout, "%-34s %-9s %-8s %-28s %s\n", m.Name, m.Class, "MISSED", "-", time.Since(start).Round(time.Second))
		}
		byClass[m.Class] = c
		os.RemoveAll(dir)
	}
	fmt.Fprint(stdout, "by class:")
	for _, cl := range strings.Split(classList(), ", ") {
		if c, ok := byClass[cl]; ok {
			fmt.Fprintf(stdout, " %s %d/%d", cl, c[0], c[1])
		}
	}
	fmt.Fprintln(stdout)
	share := float64(caught) / float64(len(selected))
	fmt.Fprintf(stdout, "caught %d of %d mutants (%.0f%%)\n", caught, len(selected), 100*share)
	if broken > 0 {
		fmt.Fprintf(stdout, "%d mutants could not be run (see ERROR rows)\n", broken)
		return 2
	}
	if share < *min {
		return 1
	}
	return 0
}

// CheckMutant checks that m applies to the tree at root and that the mutated file still
// parses as Go, without running anything.
func CheckMutant(root string, m Mutant) error {
	src, err := m.Apply(root)
	if err != nil {
		return err
	}
	return parses(m.File, src)
}

// runMutant plants m through an overlay in dir and runs the checks; it returns the names
// of the checks that caught it (none: missed).
func runMutant(root, dir string, m Mutant, b budget, stderr io.Writer) ([]string, error) {
	src, err := m.Apply(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	mutated := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(mutated, src, 0o644); err != nil {
		return nil, err
	}
	overlay := filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, filepath.FromSlash(m.File)): mutated}})
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		return nil, err
	}
	simBin := filepath.Join(dir, "sim")
	if out, err := command(context.Background(), root, nil, "go", "build", "-overlay", overlay, "-o", simBin, "./cmd/sim"); err != nil {
		return nil, fmt.Errorf("the mutant does not compile: %s", firstLine(out))
	}
	type check struct {
		name string
		env  []string
		argv []string
	}
	var checks []check
	if b.seeds > 0 {
		common := []string{"-seeds", fmt.Sprint(b.seeds), "-jobs", fmt.Sprint(b.jobs), "-duration", b.duration.String(), "-trace-dir", dir}
		checks = append(checks,
			check{"sim harsh", nil, append([]string{simBin, "-faults", "harsh", "-crash-rate", fmt.Sprint(b.crashRate)}, common...)},
			check{"sim no faults", nil, append([]string{simBin, "-faults", "none", "-crash-rate", "0"}, common...)})
	}
	if b.rapid > 0 {
		argv := append([]string{"go", "test", "-overlay", overlay, "-count=1", "-run", rapidPattern}, strings.Fields(rapidPkgs)...)
		checks = append(checks, check{"rapid", []string{fmt.Sprintf("RAPID_CHECKS=%d", b.rapid)}, argv})
	}
	var caughtBy []string
	for _, c := range checks {
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		out, err := command(ctx, root, c.env, c.argv[0], c.argv[1:]...)
		timedOut := ctx.Err() != nil
		cancel()
		var exit *exec.ExitError
		switch {
		case timedOut:
			// A hang is no verdict of the simulator's checks: it is reported, not caught.
			return nil, fmt.Errorf("%s hung past -timeout %s", c.name, b.timeout)
		case err == nil:
			continue
		case errors.As(err, &exit) && c.name != "rapid" && exit.ExitCode() == 1:
			// cmd/sim's status 1 is a usage error, not a violation: the harness is broken.
			return nil, fmt.Errorf("%s: %s", c.name, firstLine(out))
		case c.name == "rapid" && (bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]"))):
			return nil, fmt.Errorf("the rapid tests do not build with the mutant: %s", firstLine(out))
		case errors.As(err, &exit):
			caughtBy = append(caughtBy, fmt.Sprintf("%s (%s)", c.name, verdict(c.name, exit.ExitCode(), out)))
		default:
			return nil, fmt.Errorf("%s: %v", c.name, err)
		}
		if b.verbose {
			fmt.Fprintf(stderr, "---- %s: %s\n%s\n", m.Name, c.name, tail(out, 40))
		}
		if !b.all {
			break
		}
	}
	return caughtBy, nil
}

// verdict names how a check failed: cmd/sim's failure class from its exit status, or
// the first failing test of go test.
func verdict(check string, status int, out []byte) string {
	if check != "rapid" {
		switch status {
		case 2:
			return "safety"
		case 3:
			return "liveness"
		case 4:
			return "crash"
		case 5:
			return "coverage"
		}
		return fmt.Sprintf("exit %d", status)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "--- FAIL: ") {
			return strings.Fields(strings.TrimPrefix(l, "--- FAIL: "))[0]
		}
	}
	return fmt.Sprintf("exit %d", status)
}

// command runs name in dir and returns its combined output.
func command(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return buf.Bytes(), err
}

func firstLine(b []byte) string {
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return "(no output)"
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
