package main

import (
	"context"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The sampler's bounds: one sample a second for an hour, percentiles over ten seconds.
const (
	opsSampleEvery = time.Second
	opsSeriesCap   = 3600
	opsWindow      = 10
)

// optFloat is a figure that may be missing (NaN): JSON null.
type optFloat float64

// noFloat is the missing figure.
var noFloat = optFloat(math.NaN())

// MarshalJSON implements json.Marshaler.
func (f optFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 64), nil
}

// opsSample is one moment of the series: the counters as they stood (cumulative since the
// start: the page takes differences) and the figures of the last opsWindow samples.
type opsSample struct {
	At              int64     // unix milliseconds
	Settled, Failed float64   // trades, cumulative
	Volume          []float64 // cumulative, by the sampler's instrument index
	P50, P90, P99   optFloat  // ledger call latency (seconds) over the window
	FsyncP99        [2]optFloat
	PerSync         [2]optFloat // records per group commit over the window ([0] desk, [1] ledger)
	MakersOnline    int
	SignQueue       int64
	FollowerLag     int64 // the HA standby's lag, records
}

// histSnap is a cumulative histogram: its buckets' upper bounds and cumulative counts.
type histSnap struct {
	bounds []float64
	counts []uint64
	total  uint64
}

// windowSnap is what the window's figures are differences of.
type windowSnap struct {
	ledger  histSnap
	fsync   [2]histSnap
	records [2]float64
}

// opsSampler takes one sample every opsSampleEvery into a ring of opsSeriesCap, on its own
// goroutine (start; the function start returns stops it and waits for it).
type opsSampler struct {
	v *opsView

	mu          sync.Mutex
	ring        []opsSample // len opsSeriesCap once full; next is the oldest then
	next        int
	instruments []string // at most maxLabelValues, in the order first seen
	window      [opsWindow + 1]windowSnap
	windowLen   int
	windowNext  int
}

func newOpsSampler(v *opsView) *opsSampler {
	// The window starts with the process's start (every figure zero): the first samples'
	// percentiles cover everything since.
	return &opsSampler{v: v, ring: make([]opsSample, 0, opsSeriesCap), windowLen: 1, windowNext: 1}
}

// start runs the sampler until the returned function is called; that function waits for
// the goroutine to end.
func (s *opsSampler) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx, opsSampleEvery)
	}()
	return func() {
		cancel()
		<-done
	}
}

// run samples every interval until ctx ends.
func (s *opsSampler) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.sample(now)
		}
	}
}

// sample takes one sample at now.
func (s *opsSampler) sample(now time.Time) {
	m := s.v.metrics
	smp := opsSample{At: now.UnixMilli(), P50: noFloat, P90: noFloat, P99: noFloat,
		FsyncP99: [2]optFloat{noFloat, noFloat}, PerSync: [2]optFloat{noFloat, noFloat}}
	var d dto.Metric
	if m.tradesSettled.Write(&d) == nil {
		smp.Settled = d.GetCounter().GetValue()
	}
	for _, mt := range collect(m.tradesFailed) {
		smp.Failed += mt.GetCounter().GetValue()
	}
	volume := map[string]float64{}
	for _, mt := range collect(m.volume) {
		volume[labelOf(mt, "instrument")] = mt.GetCounter().GetValue()
	}
	snap := windowSnap{ledger: sumHist(collect(m.ledgerDuration))}
	for _, mt := range collect(m.journalFsync) {
		if i := journalIndex(labelOf(mt, "journal")); i >= 0 {
			snap.fsync[i] = sumHist([]*dto.Metric{mt})
		}
	}
	for _, mt := range collect(m.journalRecords) {
		if i := journalIndex(labelOf(mt, "journal")); i >= 0 {
			snap.records[i] = mt.GetCounter().GetValue()
		}
	}
	if live := s.v.live.Load(); live != nil {
		smp.MakersOnline = live.makersOnline()
		smp.SignQueue = live.n.Loop.Stats().SignQueue.Load()
	}
	if h := s.v.ha.Load(); h != nil {
		smp.FollowerLag = h.followerLag()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range sortedNames(volume) {
		if indexOf(s.instruments, name) < 0 && len(s.instruments) < maxLabelValues {
			s.instruments = append(s.instruments, name)
		}
	}
	smp.Volume = make([]float64, len(s.instruments))
	for i, name := range s.instruments {
		smp.Volume[i] = volume[name]
	}
	s.window[s.windowNext] = snap
	s.windowNext = (s.windowNext + 1) % len(s.window)
	s.windowLen = min(s.windowLen+1, len(s.window))
	oldest := s.window[(s.windowNext-s.windowLen+len(s.window))%len(s.window)]
	delta := diffHist(snap.ledger, oldest.ledger)
	smp.P50, smp.P90, smp.P99 = quantile(delta, 0.5), quantile(delta, 0.9), quantile(delta, 0.99)
	for i := range 2 {
		fs := diffHist(snap.fsync[i], oldest.fsync[i])
		smp.FsyncP99[i] = quantile(fs, 0.99)
		if fs.total > 0 {
			smp.PerSync[i] = optFloat((snap.records[i] - oldest.records[i]) / float64(fs.total))
		}
	}
	if len(s.ring) < opsSeriesCap {
		s.ring = append(s.ring, smp)
		return
	}
	s.ring[s.next] = smp
	s.next = (s.next + 1) % opsSeriesCap
}

// latest is the newest sample (a sample of missing figures before the first).
func (s *opsSampler) latest() opsSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ring) == 0 {
		return opsSample{P50: noFloat, P90: noFloat, P99: noFloat, FsyncP99: [2]optFloat{noFloat, noFloat},
			PerSync: [2]optFloat{noFloat, noFloat}}
	}
	return s.ring[(s.next+len(s.ring)-1)%len(s.ring)]
}

// opsSeries is GET /ops/series: the samples after a time, as columns (oldest first).
type opsSeries struct {
	IntervalSeconds float64  `json:"intervalSeconds"`
	Capacity        int      `json:"capacity"`
	WindowSeconds   int      `json:"windowSeconds"`
	Instruments     []string `json:"instruments"`
	T               []int64  `json:"t"`
	// Settled and Failed are trades since the desk started; Volume, by instrument (in
	// Instruments' order), the settled volume since the start in units of the instrument.
	Settled      []float64   `json:"settled"`
	Failed       []float64   `json:"failed"`
	Volume       [][]float64 `json:"volume"`
	P50          []optFloat  `json:"p50"`
	P90          []optFloat  `json:"p90"`
	P99          []optFloat  `json:"p99"`
	MakersOnline []int       `json:"makersOnline"`
	SignQueue    []int64     `json:"signQueue"`
	FollowerLag  []int64     `json:"followerLag"`
}

// series returns the samples taken after since (unix milliseconds).
func (s *opsSampler) series(since int64) opsSeries {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := opsSeries{IntervalSeconds: opsSampleEvery.Seconds(), Capacity: opsSeriesCap, WindowSeconds: int(opsWindow * opsSampleEvery / time.Second),
		Instruments: append([]string{}, s.instruments...), T: []int64{}, Settled: []float64{}, Failed: []float64{},
		Volume: make([][]float64, len(s.instruments)), P50: []optFloat{}, P90: []optFloat{}, P99: []optFloat{},
		MakersOnline: []int{}, SignQueue: []int64{}, FollowerLag: []int64{}}
	for i := range out.Volume {
		out.Volume[i] = []float64{}
	}
	for k := range s.ring {
		smp := s.ring[(s.next+k)%len(s.ring)]
		if smp.At <= since {
			continue
		}
		out.T = append(out.T, smp.At)
		out.Settled = append(out.Settled, smp.Settled)
		out.Failed = append(out.Failed, smp.Failed)
		for i := range out.Volume {
			v := 0.0
			if i < len(smp.Volume) {
				v = smp.Volume[i]
			}
			out.Volume[i] = append(out.Volume[i], v)
		}
		out.P50, out.P90, out.P99 = append(out.P50, smp.P50), append(out.P90, smp.P90), append(out.P99, smp.P99)
		out.MakersOnline = append(out.MakersOnline, smp.MakersOnline)
		out.SignQueue = append(out.SignQueue, smp.SignQueue)
		out.FollowerLag = append(out.FollowerLag, smp.FollowerLag)
	}
	return out
}

// sumHist adds up histograms of the same buckets (one per label value).
func sumHist(ms []*dto.Metric) histSnap {
	var out histSnap
	for _, m := range ms {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		if out.bounds == nil {
			for _, b := range h.GetBucket() {
				out.bounds = append(out.bounds, b.GetUpperBound())
			}
			out.counts = make([]uint64, len(out.bounds))
		}
		for i, b := range h.GetBucket() {
			if i < len(out.counts) {
				out.counts[i] += b.GetCumulativeCount()
			}
		}
		out.total += h.GetSampleCount()
	}
	return out
}

// diffHist is now − before (before may be empty: the start).
func diffHist(now, before histSnap) histSnap {
	out := histSnap{bounds: now.bounds, counts: make([]uint64, len(now.counts)), total: now.total - min(before.total, now.total)}
	for i, c := range now.counts {
		if i < len(before.counts) {
			c -= min(before.counts[i], c)
		}
		out.counts[i] = c
	}
	return out
}

// quantile estimates the q-quantile of a cumulative histogram as Prometheus's
// histogram_quantile does: linearly within the bucket the rank falls in, the highest
// finite bound past the last; missing without observations.
func quantile(h histSnap, q float64) optFloat {
	if h.total == 0 || len(h.counts) == 0 {
		return noFloat
	}
	rank := q * float64(h.total)
	var prevCount uint64
	lower := 0.0
	for i, c := range h.counts {
		if float64(c) >= rank {
			if c == prevCount {
				return optFloat(h.bounds[i])
			}
			// Clamped to the bucket: at its top the interpolation's rounding can pass its
			// upper bound (2.6875000000000013 over 2.687500000000001, found by
			// TestQuantileLaws).
			v := lower + (h.bounds[i]-lower)*(rank-float64(prevCount))/float64(c-prevCount)
			return optFloat(min(max(v, lower), h.bounds[i]))
		}
		prevCount, lower = c, h.bounds[i]
	}
	return optFloat(h.bounds[len(h.bounds)-1])
}

func journalIndex(name string) int {
	switch name {
	case "desk":
		return 0
	case "ledger":
		return 1
	}
	return -1
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// sortedNames are m's keys in order (so the instruments' order never depends on map order).
func sortedNames(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
