package main

import (
	"bufio"
	"encoding/json"
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
