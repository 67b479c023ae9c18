package sim

import (
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// maxLatencies bounds the retained accept-to-settlement samples.
const maxLatencies = 1 << 16

// Stats are a run's counters.
type Stats struct {
	Inputs          uint64         `json:"inputs"`
	DeskSyncs       uint64         `json:"deskSyncs"`
	Snapshots       uint64         `json:"snapshots"`
	LedgerSnapshots uint64         `json:"ledgerSnapshots"`
	LedgerCalls     uint64         `json:"ledgerCalls"`
	LedgerFailures  map[string]int `json:"ledgerFailures"`
	Crashes         uint64         `json:"crashes"`
	Checks          uint64         `json:"checks"`
	LedgerWalks     uint64         `json:"ledgerWalks"` // full ledger invariant walks among Checks
	Events          uint64         `json:"events"`      // stream frames delivered to actors
	// OrphansInDoubt counts allocations the desk never heard of that a call made whose
	// answer was lost to it (a crashed process's call, a lost or unknown answer, then a
	// re-issue refused by an injected fault): left on the ledger, see orphans.go.
	OrphansInDoubt int `json:"orphansInDoubt"`

	Registrations  int            `json:"registrations"`
	Rotations      int            `json:"rotations"`
	RFQs           int            `json:"rfqs"`
	RFQsRefused    int            `json:"rfqsRefused"`
	RFQsExpired    int            `json:"rfqsExpired"`
	Quotes         int            `json:"quotes"`
	QuotesAnchored int            `json:"quotesAnchored"`
	QuotesExpired  int            `json:"quotesExpired"`
	Accepts        int            `json:"accepts"`
	TradesSettled  int            `json:"tradesSettled"`
	TradesFailed   map[string]int `json:"tradesFailed"` // by reason
	Unsigned       int            `json:"unsigned"`     // action batches an actor chose never to sign

	latencies []time.Duration
	seen      int
}

// latency records one accept-to-settlement time (a bounded sample: every k-th once full).
func (st *Stats) latency(d time.Duration) {
	st.seen++
	if len(st.latencies) < maxLatencies {
		st.latencies = append(st.latencies, d)
	} else {
		st.latencies[st.seen%maxLatencies] = d
	}
}

// Percentile returns the p-th percentile (0..100) of accept-to-settlement latency.
func (st *Stats) Percentile(p float64) time.Duration {
	if len(st.latencies) == 0 {
		return 0
	}
	l := slices.Clone(st.latencies)
	slices.Sort(l)
	i := int(p / 100 * float64(len(l)-1))
	return l[i]
}

// Progress is a snapshot of a run in flight.
type Progress struct {
	SimTime time.Duration
	Steps   uint64
	Checks  uint64
	Crashes uint64
}

func (s *Sim) snapshotProgress() Progress {
	return Progress{SimTime: s.now.Sub(Start), Steps: s.steps, Checks: s.stats.Checks, Crashes: s.stats.Crashes}
}

// Result is the outcome of a run.
type Result struct {
	Knobs        Knobs          `json:"knobs"`
	Mix          Mix            `json:"mix"`
	Failure      *Failure       `json:"failure,omitempty"`
	Stats        Stats          `json:"stats"`
	Coverage     map[string]int `json:"coverage"`
	Steps        uint64         `json:"steps"`
	SimTime      time.Duration  `json:"simTime"`
	DeskDigest   string         `json:"deskDigest"`
	LedgerDigest string         `json:"ledgerDigest"`

	sim *Sim
}

func (s *Sim) result() *Result {
	r := &Result{Knobs: s.k, Mix: s.mix, Failure: s.failure, Stats: s.stats, Coverage: maps.Clone(s.cov),
		Steps: s.steps, SimTime: s.now.Sub(Start), sim: s}
	if d, err := s.desk.Digest(); err == nil {
		r.DeskDigest = hex.EncodeToString(d[:])
	}
	ld := s.ledger.L.Digest()
	r.LedgerDigest = hex.EncodeToString(ld[:])
	return r
}

// Header is the first line a run prints: the seed and every knob, then the drawn mix.
func (k Knobs) Header(m Mix) string {
	return fmt.Sprintf("sim seed=%d duration=%s makers=%d takers=%d rfq-rate=%g faults=%s crash-rate=%g checkpoint-every=%d snapshot-every=%d\nsim mix: %s",
		k.Seed, k.Duration, k.Makers, k.Takers, k.RFQRate, k.Faults, k.CrashRate, k.CheckpointEvery, k.SnapshotEvery, m)
}

// WriteSummary prints the end-of-run summary.
func (r *Result) WriteSummary(w io.Writer) {
	st := &r.Stats
	fmt.Fprintf(w, "simulated %s in %d steps; %d desk inputs, %d ledger calls, %d crashes survived, %d snapshots, %d invariant checks (%d full ledger walks)\n",
		r.SimTime.Round(time.Millisecond), r.Steps, st.Inputs, st.LedgerCalls, st.Crashes, st.Snapshots, st.Checks, st.LedgerWalks)
	fmt.Fprintf(w, "registrations %d, key rotations %d; RFQs %d (refused %d, expired %d); quotes %d (anchored %d, expired %d); accepts %d\n",
		st.Registrations, st.Rotations, st.RFQs, st.RFQsRefused, st.RFQsExpired, st.Quotes, st.QuotesAnchored, st.QuotesExpired, st.Accepts)
	fmt.Fprintf(w, "trades settled %d; failed %s; unsigned action batches %d\n", st.TradesSettled, countsString(st.TradesFailed), st.Unsigned)
	fmt.Fprintf(w, "ledger failures %s\n", countsString(st.LedgerFailures))
	fmt.Fprintf(w, "accept→settlement (simulated) p50 %s p90 %s p99 %s max %s over %d trades\n",
		st.Percentile(50).Round(time.Millisecond), st.Percentile(90).Round(time.Millisecond),
		st.Percentile(99).Round(time.Millisecond), st.Percentile(100).Round(time.Millisecond), st.seen)
	fmt.Fprintf(w, "desk digest %s ledger digest %s stream events %d\n", r.DeskDigest, r.LedgerDigest, st.Events)
	fmt.Fprintln(w, "coverage:")
	coverage(r.Coverage).write(w)
}

func countsString(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
