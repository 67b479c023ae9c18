package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Knobs are what a run is told: the seed, its size and the fault profile. Everything else
// (the fault mix, every actor's habits, every latency) is drawn from the seed.
type Knobs struct {
	Seed     uint64        `json:"seed"`
	Duration time.Duration `json:"duration"` // simulated time of the busy phase
	Makers   int           `json:"makers"`
	Takers   int           `json:"takers"`  // registered takers; the house taker comes on top
	RFQRate  float64       `json:"rfqRate"` // RFQs per simulated second, over all takers
	Faults   string        `json:"faults"`  // none, mild or harsh
	// CrashRate is the probability that the desk process crashes after any one step.
	CrashRate float64 `json:"crashRate"`
	// CheckpointEvery and SnapshotEvery count desk inputs between checkpoints and
	// snapshots: the least, since a large state stretches them (see StateBytesPerInput).
	CheckpointEvery int `json:"checkpointEvery"`
	SnapshotEvery   int `json:"snapshotEvery"`
	// StateBytesPerInput, when positive, stretches those intervals to at least the last
	// checkpoint's (or snapshots') size over this many bytes, so that a long run's
	// checkpoints cost a bounded amount per input however large the state grows; 0 keeps
	// the intervals exact.
	StateBytesPerInput int `json:"stateBytesPerInput"`
	// LedgerCheckEvery is how many ledger-changing steps pass between full ledger
	// invariant walks: 1 walks after every one, 0 adapts to the ledger's size.
	LedgerCheckEvery int `json:"ledgerCheckEvery"`
	// Adversaries is the most honest makers and takers a seed turns hostile (it draws from 1
	// to Adversaries, each attacking at a rate of its own; adversary.go); 0: none.
	Adversaries int `json:"adversaries"`
	// RequireCoverage fails the run (exit 5) when a coverage goal was never reached; meant
	// for long runs.
	RequireCoverage bool `json:"requireCoverage"`
	// NoModel turns the reference model of the contract (sim/model) off; it is on by
	// default and off only to measure what it costs.
	NoModel bool `json:"noModel,omitempty"`
}

// DefaultKnobs are the flag defaults of cmd/sim.
func DefaultKnobs() Knobs {
	return Knobs{Seed: 1, Duration: 10 * time.Minute, Makers: 6, Takers: 3, RFQRate: 0.5, Faults: "mild",
		CrashRate: 0.0005, CheckpointEvery: 500, SnapshotEvery: 2000, StateBytesPerInput: 512, Adversaries: 3}
}

// Validate refuses knobs a run cannot use.
func (k Knobs) Validate() error {
	switch {
	case k.Duration <= 0:
		return fmt.Errorf("duration must be positive")
	case k.Makers < 1 || k.Makers > 500:
		return fmt.Errorf("makers must be between 1 and 500")
	case k.Takers < 0 || k.Takers > 500:
		return fmt.Errorf("takers must be between 0 and 500")
	case k.RFQRate <= 0 || k.RFQRate > 100:
		return fmt.Errorf("rfq-rate must be in (0, 100]")
	case k.CrashRate < 0 || k.CrashRate > 0.5:
		return fmt.Errorf("crash-rate must be in [0, 0.5]")
	case k.LedgerCheckEvery < 0:
		return fmt.Errorf("ledger-check-every must not be negative")
	case k.CheckpointEvery < 1 || k.SnapshotEvery < 1:
		return fmt.Errorf("checkpoint and snapshot intervals must be positive")
	case k.StateBytesPerInput < 0:
		return fmt.Errorf("state bytes per input must not be negative")
	case k.Adversaries < 0 || k.Adversaries > 1000:
		return fmt.Errorf("adversaries must be between 0 and 1000")
	}
	if _, ok := profiles[k.Faults]; !ok {
		return fmt.Errorf("faults must be none, mild or harsh, not %q", k.Faults)
	}
	return nil
}

// Command is the cmd/sim invocation that reproduces a run with these knobs.
func (k Knobs) Command() string {
	s := fmt.Sprintf("go run ./cmd/sim -seed %d -duration %s -makers %d -takers %d -rfq-rate %g -faults %s -crash-rate %g",
		k.Seed, k.Duration, k.Makers, k.Takers, k.RFQRate, k.Faults, k.CrashRate)
	if k.CheckpointEvery != DefaultKnobs().CheckpointEvery {
		s += fmt.Sprintf(" -checkpoint-every %d", k.CheckpointEvery)
	}
	if k.SnapshotEvery != DefaultKnobs().SnapshotEvery {
		s += fmt.Sprintf(" -snapshot-every %d", k.SnapshotEvery)
	}
	if k.StateBytesPerInput != DefaultKnobs().StateBytesPerInput {
		s += fmt.Sprintf(" -state-bytes-per-input %d", k.StateBytesPerInput)
	}
	if k.Adversaries != DefaultKnobs().Adversaries {
		s += fmt.Sprintf(" -adversaries %d", k.Adversaries)
	}
	if k.LedgerCheckEvery != 0 {
		s += fmt.Sprintf(" -ledger-check-every %d", k.LedgerCheckEvery)
	}
	if k.RequireCoverage {
		s += " -require-coverage"
	}
	if k.NoModel {
		s += " -model=false"
	}
	return s
}

// Mix is the fault mix one seed drew within its profile (swarm testing: every seed gets its
// own, so no single mix of faults hides a bug).
type Mix struct {
	Contention  float64 `json:"contention"`  // ledger calls rejected with contention
	Unavailable float64 `json:"unavailable"` // rejected as unavailable
	Rejected    float64 `json:"rejected"`    // rejected outright
	Internal    float64 `json:"internal"`    // internal errors
	// UnknownOutcome: the call takes effect but answers unknown-outcome (the desk knows it
	// must ask again).
	UnknownOutcome float64 `json:"unknownOutcome"`
	// LostAnswer: the call takes effect and the desk never hears of it; only a restart
	// re-issues it. Zero unless crashes run.
	LostAnswer float64 `json:"lostAnswer"`
	// Ledger latency: a call executes after a base latency and, with TailProb, a tail up
	// to TailMax; its answer takes as long again.
	LatencyBase time.Duration `json:"latencyBase"`
	TailProb    float64       `json:"tailProb"`
	TailMax     time.Duration `json:"tailMax"`
	// Windows are ledger unavailability windows per simulated hour, each up to WindowMax.
	Windows   float64       `json:"windows"`
	WindowMax time.Duration `json:"windowMax"`
	// Disconnect is the probability that a stream drops at an actor's wake-up.
	Disconnect float64 `json:"disconnect"`
	// SyncEvery is the group-commit interval of both journals.
	SyncEvery time.Duration `json:"syncEvery"`
	// TickLate is how late, at most, the desk's timer fires a deadline's Tick (a real
	// timer never fires exactly on time), so that calls can land between a deadline and
	// its Tick.
	TickLate time.Duration `json:"tickLate,omitempty"`
	// LedgerSkew is how far the ledger's record time starts ahead of the desk's clock
	// (negative: behind), and LedgerDriftPPM how many millionths of each simulated
	// second the gap moves by (ledgerclock.go): deadlines the ledger checks by its own
	// clock then pass a little before or after the desk's Tick for them.
	LedgerSkew     time.Duration `json:"ledgerSkew,omitempty"`
	LedgerDriftPPM int64         `json:"ledgerDriftPpm,omitempty"`
	// LedgerSkewBound is how far the ledger's clock may get from the desk's at most.
	LedgerSkewBound time.Duration `json:"ledgerSkewBound,omitempty"`
	// Boundary is how often the seed's actors send inputs on the contract's boundaries
	// (boundary.go); drawn from its own stream, whatever the fault profile.
	Boundary BoundaryMix `json:"boundary"`
	// Sequencing is how long the ledger keeps an execute in flight before it commits
	// (inflight.go); drawn from its own stream.
	Sequencing time.Duration `json:"sequencing,omitempty"`
}

// profile bounds what a seed may draw.
type profile struct{ max Mix }

var profiles = map[string]profile{
	"none": {max: Mix{LatencyBase: 5 * time.Millisecond, SyncEvery: 2 * time.Millisecond}},
	"mild": {max: Mix{Contention: 0.02, Unavailable: 0.02, Rejected: 0.003, Internal: 0.01, UnknownOutcome: 0.01,
		LostAnswer: 0.005, LatencyBase: 80 * time.Millisecond, TailProb: 0.05, TailMax: 2 * time.Second,
		Windows: 2, WindowMax: 10 * time.Second, Disconnect: 0.01, SyncEvery: 5 * time.Millisecond,
		TickLate: 50 * time.Millisecond, LedgerSkew: 200 * time.Millisecond, LedgerDriftPPM: 50}},
	"harsh": {max: Mix{Contention: 0.10, Unavailable: 0.08, Rejected: 0.02, Internal: 0.05, UnknownOutcome: 0.05,
		LostAnswer: 0.03, LatencyBase: 300 * time.Millisecond, TailProb: 0.15, TailMax: 10 * time.Second,
		Windows: 6, WindowMax: time.Minute, Disconnect: 0.05, SyncEvery: 20 * time.Millisecond,
		TickLate: 250 * time.Millisecond, LedgerSkew: 2 * time.Second, LedgerDriftPPM: 500}},
}

// drawMix draws a seed's fault mix: each rate uniform up to the profile's maximum, and
// switched off entirely with probability 1/4.
func drawMix(k Knobs, rng *rand.Rand) Mix {
	p := profiles[k.Faults].max
	rate := func(max float64) float64 {
		if max == 0 || rng.IntN(4) == 0 {
			return 0
		}
		return rng.Float64() * max
	}
	dur := func(max time.Duration, floor time.Duration) time.Duration {
		if max <= floor {
			return max
		}
		return floor + time.Duration(rng.Int64N(int64(max-floor)))
	}
	m := Mix{
		Contention: rate(p.Contention), Unavailable: rate(p.Unavailable), Rejected: rate(p.Rejected),
		Internal: rate(p.Internal), UnknownOutcome: rate(p.UnknownOutcome), LostAnswer: rate(p.LostAnswer),
		LatencyBase: dur(p.LatencyBase, time.Millisecond), TailProb: rate(p.TailProb), TailMax: dur(p.TailMax, 0),
		Windows: rate(p.Windows), WindowMax: dur(p.WindowMax, 0), Disconnect: rate(p.Disconnect),
		SyncEvery: dur(p.SyncEvery, time.Millisecond),
	}
	m.TickLate = dur(p.TickLate, 0) // drawn last: the draws before it keep their values
	if k.CrashRate == 0 {
		m.LostAnswer = 0 // nothing would ever re-issue the call
	}
	m.Boundary = drawBoundaryMix(k.Seed)
	m.LedgerSkew, m.LedgerDriftPPM, m.LedgerSkewBound = drawLedgerSkew(k)
	m.Sequencing = drawSequencing(k)
	return m
}

// String renders the mix for the header line.
func (m Mix) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "contention=%.4f unavailable=%.4f rejected=%.4f internal=%.4f unknown-outcome=%.4f lost-answer=%.4f",
		m.Contention, m.Unavailable, m.Rejected, m.Internal, m.UnknownOutcome, m.LostAnswer)
	fmt.Fprintf(&b, " latency=%s tail=%.3f/%s windows/h=%.2f/%s disconnect=%.3f sync=%s",
		m.LatencyBase, m.TailProb, m.TailMax, m.Windows, m.WindowMax, m.Disconnect, m.SyncEvery)
	fmt.Fprintf(&b, " tick-late=%s ledger-skew=%s drift=%dppm sequencing=%s", m.TickLate, m.LedgerSkew, m.LedgerDriftPPM, m.Sequencing)
	bm := m.Boundary
	fmt.Fprintf(&b, " boundary: ticket=%.3f ttl=%.3f price=%.3f validity=%.3f limit=%.3f batch=%.3f",
		bm.Ticket, bm.TTL, bm.Price, bm.Validity, bm.Limit, bm.Batch)
	return b.String()
}

// GCPercent is the garbage collector's target simulator runs are measured at (cmd/sim sets
// it unless the environment sets GOGC; BenchmarkStandardScenario runs under it). A run's
// live state is tens of megabytes while each simulated second allocates records, replies,
// events and ledger updates that die at once; at 400 the collector runs a quarter as often
// as at Go's default 100, which measured 352-358x -> 389-398x real time on the standard
// scenario's three busy hours on one core.
const GCPercent = 400
