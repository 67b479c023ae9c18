package main

import (
	"slices"
	"sync"
	"time"
)

// maxSamples bounds the samples one histogram keeps; past it, further samples are counted
// but not kept (the run is bounded by -trades, so this is never reached in practice).
const maxSamples = 1 << 20

// recorder keeps latency samples per name. Samples are kept whole and sorted at the end:
// the counts are bounded, so exact percentiles are cheaper than an HDR histogram.
type recorder struct {
	mu      sync.Mutex
	samples map[string][]time.Duration
	dropped map[string]int
	errors  map[string]int
}

func newRecorder() *recorder {
	return &recorder{samples: map[string][]time.Duration{}, dropped: map[string]int{}, errors: map[string]int{}}
}

// add records one sample of name.
func (r *recorder) add(name string, d time.Duration) {
	r.mu.Lock()
	if len(r.samples[name]) < maxSamples {
		r.samples[name] = append(r.samples[name], d)
	} else {
		r.dropped[name]++
	}
	r.mu.Unlock()
}

// fail counts one failure of kind.
func (r *recorder) fail(kind string) {
	r.mu.Lock()
	r.errors[kind]++
	r.mu.Unlock()
}

// time runs f and records its duration under name when it succeeds, or counts a failure.
func (r *recorder) time(name string, f func() error) error {
	start := time.Now()
	err := f()
	if err != nil {
		r.fail(name)
		return err
	}
	r.add(name, time.Since(start))
	return nil
}

// Summary is the distribution of one latency, in milliseconds.
type Summary struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// summarize sorts samples and returns their summary.
func summarize(s []time.Duration) Summary {
	if len(s) == 0 {
		return Summary{}
	}
	s = slices.Clone(s)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{N: len(s), P50: ms(quantile(s, 0.50)), P99: ms(quantile(s, 0.99)), Max: ms(s[len(s)-1]),
		Mean: ms(sum / time.Duration(len(s)))}
}

// quantile is the nearest-rank quantile of sorted samples.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// summaries returns every histogram's summary and the failure counts.
func (r *recorder) summaries() (map[string]Summary, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Summary, len(r.samples))
	for k, v := range r.samples {
		out[k] = summarize(v)
	}
	errs := make(map[string]int, len(r.errors))
	for k, v := range r.errors {
		errs[k] = v
	}
	return out, errs
}
