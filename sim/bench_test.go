package sim

import (
	"github.com/deskco/rfqdesk/machine"
	"os"
	"runtime/debug"
	"strconv"
	"testing"
	"time"
)

// BenchmarkStandardScenario runs the standard scenario of the issue — 20 makers, 5 takers,
// one RFQ per simulated second, mild faults, no crashes, real Ed25519 signatures — for
// BENCH_SIM_MINUTES simulated minutes of busy phase (10 by default; the scenario
// is 1440, which `make bench` runs; shorter runs read fast, as the ledger's holdings and
// with them the cost of a simulated second keep growing),
// and reports simulated seconds per wall-clock second of the busy phase ("busy-sim-s/s";
// the target is ≥ 1000 on one core: run with GOMAXPROCS=1) beside the whole run's
// ("sim-s/s"), whose liveness phase is mostly quiet simulated time. It runs at cmd/sim's
// collector target, GCPercent. Its two sub-benchmarks run the same seeds with the
// reference model of the contract (sim/model, cmd/sim's default) and without it, so that
// one run shows what the model costs.
func BenchmarkStandardScenario(b *testing.B) {
	minutes := envMinutes(b, "BENCH_SIM_MINUTES", 10)
	for _, bc := range []struct {
		name    string
		noModel bool
	}{{"model", false}, {"no-model", true}} {
		b.Run(bc.name, func(b *testing.B) {
			k := standardKnobs(minutes)
			k.NoModel = bc.noModel
			runStandard(b, k)
		})
	}
}

func runStandard(b *testing.B, k Knobs) {
	defer debug.SetGCPercent(debug.SetGCPercent(GCPercent))
	b.ReportAllocs()
	var simulated, busyWall time.Duration
	for i := 0; i < b.N; i++ {
		k.Seed = uint64(i + 1)
		s, err := New(k)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		s.OnBusyEnd(func() { busyWall += time.Since(start) })
		r := s.Run()
		if r.Failure != nil {
			b.Fatalf("%v\nreproduce: %s", r.Failure, k.Command())
		}
		simulated += r.SimTime
	}
	b.ReportMetric(simulated.Seconds()/b.Elapsed().Seconds(), "sim-s/s")
	b.ReportMetric(float64(b.N)*k.Duration.Seconds()/busyWall.Seconds(), "busy-sim-s/s")
}

// BenchmarkTakerReads times the reads the simulated takers and makers poll, GET /rfq/mine
// and GET /rfq/incoming, against the desk as the standard scenario leaves it after
// BENCH_READ_MINUTES simulated minutes (20 by default: past the 10 minutes for which
// closed RFQs stay readable, so each taker's list is as long as it gets). One op is one
// read by one party, the parties taken in turn.
func BenchmarkTakerReads(b *testing.B) {
	minutes := envMinutes(b, "BENCH_READ_MINUTES", 20)
	for _, bc := range []struct {
		name  string
		role  role
		query machine.Query
	}{
		{"rfq-mine", roleTaker, machine.QRfqMine{}},
		{"rfq-incoming", roleMaker, machine.QRfqIncoming{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			k := standardKnobs(minutes)
			s, err := New(k)
			if err != nil {
				b.Fatal(err)
			}
			rows := 0
			s.OnBusyEnd(func() {
				var parties []*actor
				for _, a := range s.actors {
					if a.role == bc.role && a.reg == regDone {
						parties = append(parties, a)
					}
				}
				if len(parties) == 0 {
					b.Fatal("no registered party to read for")
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					rep := machine.Read(s.desk, s.now, parties[i%len(parties)].keyHash, bc.query)
					if rep.Err != nil {
						b.Fatal(rep.Err)
					}
					switch body := rep.Body.(type) {
					case []machine.RfqDTO:
						rows += len(body)
					case []machine.IncomingRfqDTO:
						rows += len(body)
					}
				}
				b.StopTimer()
				// A recorded failure is the only way to stop a run early: Run ends after
				// this step, and the benchmark ignores its result.
				s.failf(Safety, "benchmark done")
			})
			s.Run()
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
		})
	}
}

// standardKnobs are the standard scenario (20 makers, 5 takers, one RFQ per
// simulated second, mild faults, no crashes) for minutes of busy phase.
func standardKnobs(minutes int) Knobs {
	k := DefaultKnobs()
	k.Duration, k.Makers, k.Takers, k.RFQRate, k.Faults, k.CrashRate = time.Duration(minutes)*time.Minute, 20, 5, 1, "mild", 0
	return k
}

// envMinutes reads a positive number of minutes from the environment variable name, or
// gives def when it is unset.
func envMinutes(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number of minutes", name, v)
	}
	return n
}
