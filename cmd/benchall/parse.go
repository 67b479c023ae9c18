package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Bench is one benchmark result line: iterations and every value by unit ("ns/op",
// "B/op", "of-floor", …).
type Bench struct {
	Name    string             `json:"name"`
	N       int64              `json:"n"`
	Metrics map[string]float64 `json:"metrics"`
}

// testEvent is one line of `go test -json`.
type testEvent struct {
	Action string `json:"Action"`
	Output string `json:"Output"`
}

// cpuSuffix is the -GOMAXPROCS suffix go test adds to benchmark names.
var cpuSuffix = regexp.MustCompile(`-\d+$`)

// parseTestJSON reads `go test -json` output: it concatenates the output events (a result
// line may be split over several) and parses every benchmark result line of the text,
// which it also returns.
func parseTestJSON(r io.Reader) ([]Bench, string, error) {
	var text strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev testEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			text.WriteString(sc.Text() + "\n") // build errors come as plain text
			continue
		}
		if ev.Action == "output" {
			text.WriteString(ev.Output)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, text.String(), err
	}
	return parseBenchText(text.String()), text.String(), nil
}

// parseBenchText parses benchmark result lines: "BenchmarkX-2  N  v unit  v unit …".
func parseBenchText(text string) []Bench {
	var out []Bench
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		b := Bench{Name: cpuSuffix.ReplaceAllString(f[0], ""), N: n, Metrics: map[string]float64{}}
		ok := true
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				ok = false
				break
			}
			b.Metrics[f[i+1]] = v
		}
		if ok {
			out = append(out, b)
		}
	}
	return out
}

// simLine parses the simulator's last line, "seed 1: 3h30m0s simulated in 1m2s wall
// (203× real time; busy 3h0m0s in 1m1s: 177×), ok": the whole run's rate, then the busy
// phase's (the liveness phase after it is mostly quiet simulated time).
var simLine = regexp.MustCompile(`simulated in (\S+) wall \(([\d.]+)× real time; busy (\S+) in (\S+): ([\d.]+)×\)`)

// SimCost is where the simulation run's CPU went, in seconds of its CPU profile's samples
// (the cumulative time of the functions that bound what any simulator of this desk could
// reach: the signatures, the ledger's calls and the desk's core).
type SimCost struct {
	TotalS  float64 `json:"total_s"`
	SignS   float64 `json:"sign_s"`   // crypto/ed25519.Sign: the actors signing actions
	VerifyS float64 `json:"verify_s"` // crypto/ed25519.Verify: the ledger (and key rotation)
	LedgerS float64 `json:"ledger_s"` // ledgeradapter.(*Adapter).Do: every ledger call, verify included
	DeskS   float64 `json:"desk_s"`   // machine.Apply: the desk's core
}

// simCostFuncs are the functions SimCost reads, by field.
var simCostFuncs = []struct {
	name  string
	field func(*SimCost) *float64
}{
	{"crypto/ed25519.Sign", func(c *SimCost) *float64 { return &c.SignS }},
	{"crypto/ed25519.Verify", func(c *SimCost) *float64 { return &c.VerifyS }},
	{"github.com/deskco/rfqdesk/ledgeradapter.(*Adapter).Do", func(c *SimCost) *float64 { return &c.LedgerS }},
	{"github.com/deskco/rfqdesk/machine.Apply", func(c *SimCost) *float64 { return &c.DeskS }},
}

// totalSamples reads pprof's "Total samples = 190.76s" header.
var totalSamples = regexp.MustCompile(`Total samples = ([\d.]+)s`)

// parseSimCost reads `go tool pprof -top -cum -unit=s` output: the total, then each
// function's cumulative seconds (the fourth column; pprof marks inlined ones "(inline)").
// A function missing from the listing is an error: a rename would otherwise read as free.
func parseSimCost(top string) (*SimCost, error) {
	m := totalSamples.FindStringSubmatch(top)
	if m == nil {
		return nil, fmt.Errorf("no total in the profile listing")
	}
	c := &SimCost{}
	c.TotalS, _ = strconv.ParseFloat(m[1], 64)
	found := map[string]bool{}
	for _, line := range strings.Split(top, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		name := strings.Join(f[5:], " ")
		name = strings.TrimSuffix(name, " (inline)")
		for _, fn := range simCostFuncs {
			if name != fn.name || found[name] {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSuffix(f[3], "s"), 64)
			if err != nil {
				return nil, fmt.Errorf("%s: cumulative %q: %w", name, f[3], err)
			}
			*fn.field(c) = v
			found[name] = true
		}
	}
	for _, fn := range simCostFuncs {
		if !found[fn.name] {
			return nil, fmt.Errorf("%s is not in the profile listing", fn.name)
		}
	}
	if c.TotalS <= 0 {
		return nil, fmt.Errorf("the profile holds no samples")
	}
	return c, nil
}
