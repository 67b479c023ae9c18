package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/deskco/rfqdesk/machine"
)

// Row is one line of the table. Target and Ratio are empty for a number reported without
// a target. Ratio is value/target for an at-least target and target/value for an at-most
// one, so ≥ 1 always means met.
type Row struct {
	Group  string   `json:"group"`
	Metric string   `json:"metric"`
	Value  float64  `json:"value"`
	Unit   string   `json:"unit"`
	Target string   `json:"target,omitempty"`
	Ratio  *float64 `json:"ratio,omitempty"`
	Met    *bool    `json:"met,omitempty"`
	Note   string   `json:"note,omitempty"`
}

// atLeast and atMost build rows with a target; info builds one without.
func atLeast(group, metric string, v float64, unit string, target float64) Row {
	r := v / target
	met := v >= target
	return Row{Group: group, Metric: metric, Value: v, Unit: unit, Target: "≥ " + num(target), Ratio: &r, Met: &met}
}

func atMost(group, metric string, v float64, unit string, target float64) Row {
	r := target / v
	met := v < target
	return Row{Group: group, Metric: metric, Value: v, Unit: unit, Target: "< " + num(target), Ratio: &r, Met: &met}
}

func info(group, metric string, v float64, unit string) Row {
	return Row{Group: group, Metric: metric, Value: v, Unit: unit}
}

// metric finds a benchmark's value: key is the package key, name the benchmark name. A
// benchmark run several times (-count) gives the median of its repetitions: one slow
// repetition on a noisy host moves it less than a mean.
func (s *suite) metric(key, name, unit string) (float64, bool) {
	var vs []float64
	for _, b := range s.res.Benchmarks[key] {
		if v, ok := b.Metrics[unit]; ok && b.Name == name {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// wireCeiling is what the machine allows over the wire, from the CPU time of the same
// run: a settled trade needs at least the transport floor's five calls (create, quote,
// execute, accept, execute) and a lifecycle's four signatures and four verifications, so
// cores ÷ their CPU time bounds the settled trades per second of any desk on this
// machine with the load generator beside it. The second bound adds the desk's in-process
// work (loop, machine and ledger, with no journal, socket or JSON): the rate this desk
// could reach if everything it does over the wire beyond that cost nothing.
func (s *suite) wireCeiling(g string, l *LoadgenResults) []Row {
	var rows []Row
	cores := float64(s.res.Machine.CPUs)
	if u := l.Max.CPU; u != nil && u.PerUnitMS > 0 {
		r := info(g, "CPU per settled trade at max (desk + load generator)", u.PerUnitMS, "ms")
		r.Note = fmt.Sprintf("desk %.2f ms, load generator %.2f ms", u.DeskPerUnitMS, u.PerUnitMS-u.DeskPerUnitMS)
		rows = append(rows, r)
	}
	if l.Floor == nil || l.Floor.CPU == nil || l.Floor.CPU.PerUnitMS <= 0 || cores <= 0 {
		return rows
	}
	transport := l.Floor.CPU.PerUnitMS
	rows = append(rows, info(g, "transport floor CPU per five-call sequence (client + bare server)", transport, "ms"))
	sigNs, ok := s.metric("inproc", "BenchmarkLifecycle/signatures-only", "cpu-ns/op")
	if !ok || sigNs <= 0 {
		return rows
	}
	sig := sigNs / 1e6
	r := info(g, "ceiling: cores ÷ (five calls + 4 sign + 4 verify), settled trades/s", cores*1000/(transport+sig), "/s")
	r.Note = fmt.Sprintf("signatures %.2f ms CPU; 1,000/s leaves %.2f ms of CPU per trade for all the rest", sig, cores-transport-sig)
	rows = append(rows, r)
	if n := l.Invite; n > 1 {
		// Every invited maker quotes: 2n+3 calls (the RFQ, n quotes and n executes, the
		// accept and the taker's execute) and 2n+2 signatures, two per quote and two for
		// the taker.
		calls, sigs := inviteCalls(n), inviteSigs(n)
		r := info(g, fmt.Sprintf("ceiling for %d invited: cores ÷ (%.0f calls + %.0f sign + %.0f verify)", n, calls, sigs, sigs),
			cores*1000/(calls/5*transport+sigs/4*sig), "/s")
		r.Note = "every invited maker quotes and signs; the desk itself costing nothing"
		rows = append(rows, r)
	}
	ceiling := cores * 1000 / (inviteCalls(l.Invite)/5*transport + inviteSigs(l.Invite)/4*sig)
	rows = append(rows, withReason(ofCeiling(g, l, ceiling), ceilingReason(l, ceiling, cores)))
	if deskNs, ok := s.metric("inproc", "BenchmarkLifecycle/desk", "cpu-ns/op"); ok && deskNs > 0 {
		r := info(g, "ceiling with the in-process desk: cores ÷ (five calls + in-process lifecycle)", cores*1000/(transport+deskNs/1e6), "/s")
		r.Note = fmt.Sprintf("in-process lifecycle %.2f ms CPU (signatures included)", deskNs/1e6)
		rows = append(rows, r)
	}
	return rows
}

// rows turns the raw results into the table, in the order.
func (s *suite) rows() []Row {
	var rows []Row
	add := func(r Row, ok bool) {
		if ok {
			rows = append(rows, r)
		}
	}
	missing := func(group, metric, why string) {
		rows = append(rows, Row{Group: group, Metric: metric, Note: "not measured: " + why})
	}

	// 1. In process.
	if per, ok := s.metric("inproc", "BenchmarkLifecycle/desk", "lifecycles/s"); ok {
		rows = append(rows, info("in process", "lifecycles/s (loop + machine + ledgersim + Ed25519)", per, "/s"))
		if floorNs, ok := s.metric("inproc", "BenchmarkLifecycle/signatures-only", "ns/op"); ok && floorNs > 0 {
			rows = append(rows, info("in process", "signature floor (4 sign + 4 verify) lifecycles/s", 1e9/floorNs, "/s"))
		}
		v, ok := s.metric("inproc", "BenchmarkLifecycle/desk", "of-floor")
		add(withReason(atLeast("in process", "lifecycle rate / signature floor (the desk's GOGC 200)", v, "×", inProcessTarget), s.inProcessReason()), ok)
		v, ok = s.metric("inproc", "BenchmarkLifecycle/desk-gogc-100", "of-floor")
		add(info("in process", "the same at Go's default GOGC 100", v, "×"), ok)
		v, ok = s.metric("inproc", "BenchmarkLifecycle/desk", "of-floor-cpu")
		add(info("in process", "CPU time per floor unit / per lifecycle (GOGC 200)", v, "×"), ok)
		b, ok := s.metric("inproc", "BenchmarkLifecycle/desk", "B/op")
		add(info("in process", "bytes allocated per lifecycle", b, "B"), ok)
		// The floor measured again after the desks: how far the host's speed moved
		// meanwhile, and the ratio to the mean of the two floors.
		before, okBefore := s.metric("inproc", "BenchmarkLifecycle/signatures-only", "ns/op")
		after, okAfter := s.metric("inproc", "BenchmarkLifecycle/signatures-only-after", "ns/op")
		deskNs, okDesk := s.metric("inproc", "BenchmarkLifecycle/desk", "ns/op")
		if okBefore && okAfter && okDesk && before > 0 && after > 0 && deskNs > 0 {
			r := info("in process", "signature floor again, after the desk's runs, lifecycles/s", 1e9/after, "/s")
			r.Note = fmt.Sprintf("%+.0f%% from the first: the host's speed moved by that much during the run", (before/after-1)*100)
			rows = append(rows, r,
				info("in process", "lifecycle rate / mean of the two floors (GOGC 200)", (before+after)/2/deskNs, "×"))
		}
	} else if !s.skipped("inproc") {
		missing("in process", "lifecycles/s", "loop BenchmarkLifecycle gave no result")
	}

	// 2. Over the wire.
	if l := s.res.Loadgen; l != nil {
		g := fmt.Sprintf("over the wire (%d makers, %d takers, %d invited)", l.Makers, l.Takers, l.Invite)
		rows = append(rows, atLeast(g, "settled trades/s (closed loop)", l.Max.SettledPerS, "/s", 1000))
		if a, ok := l.Max.Calls["accept → trade.settled"]; ok {
			rows = append(rows, info(g, "accept → trade.settled p50 at max", a.P50, "ms"),
				info(g, "accept → trade.settled p99 at max", a.P99, "ms"),
				info(g, "accept → trade.settled max at max", a.Max, "ms"))
		}
		half := fmt.Sprintf("at half load (%.0f RFQ/s offered)", l.Half.TargetRate)
		for _, c := range []string{"POST /rfq", "POST /maker/quotes", "POST /tx/execute (maker)", "POST /quote/{id}/accept", "POST /tx/execute (taker)"} {
			if sm, ok := l.Half.Calls[c]; ok {
				r := atMost(g, c+" p99 "+half, sm.P99, "ms", 10)
				r.Note = fmt.Sprintf("p50 %.2f, max %.2f ms", sm.P50, sm.Max)
				if l.FloorHalf != nil {
					if f, ok := l.FloorHalf.Calls[c]; ok {
						r.Note += fmt.Sprintf("; bare floor at the same pace: p99 %.2f ms", f.P99)
					}
				}
				rows = append(rows, withReason(r, halfLoadReason(l, float64(s.res.Machine.CPUs))))
			}
		}
		if a, ok := l.Half.Calls["accept → trade.settled"]; ok {
			r := info(g, "accept → trade.settled p99 "+half, a.P99, "ms")
			r.Note = fmt.Sprintf("p50 %.2f, max %.2f ms", a.P50, a.Max)
			rows = append(rows, r)
		}
		if l.Floor != nil {
			rows = append(rows, info(g, "transport floor: bare httprouter lifecycle call sequences/s", l.Floor.SequencesPer, "/s"),
				info(g, "settled trades/s / transport floor", l.OfFloor, "×"))
			if sm, ok := l.Floor.Calls["POST /rfq"]; ok {
				r := info(g, "transport floor: POST /rfq p99 (same client, same concurrency)", sm.P99, "ms")
				r.Note = fmt.Sprintf("p50 %.2f ms", sm.P50)
				rows = append(rows, r)
			}
		}
		rows = append(rows, s.wireCeiling(g, l)...)
		rows = append(rows, syscallRows(g, l.Max.Syscalls, l.Half.Syscalls)...)
		if f := l.Fanout; f != nil {
			r := atMost("stream", fmt.Sprintf("rfq.created to %d invited makers through the desk, p99", f.Invited), f.Summary.P99, "ms", 50)
			r.Note = fmt.Sprintf("p50 %.2f ms, %d rounds, %d missing; machine.MaxInvited caps an RFQ at 100", f.Summary.P50, f.Rounds, f.Missing)
			rows = append(rows, r)
		}
	} else if !s.skipped("wire") {
		missing("over the wire", "settled trades/s", "cmd/loadgen gave no result")
	}

	// 3. Stream.
	if v, ok := s.metric("bench", "BenchmarkStream", "rss-MiB-10k"); ok {
		rows = append(rows, atMost("stream", "server RSS with 10,000 open sockets", v, "MiB", 1024))
		if v, ok := s.metric("bench", "BenchmarkStream", "rss-B/socket"); ok {
			r := info("stream", "server RSS per open socket", v, "B")
			if g, ok := s.metric("bench", "BenchmarkStream", "go-B/socket"); ok {
				r.Note = fmt.Sprintf("Go heap + stacks: %.0f B", g)
			}
			rows = append(rows, r)
		}
		v, ok := s.metric("bench", "BenchmarkStream", "fanout-p99-ms")
		r := atMost("stream", "rfq.created to 1,000 sockets (one hub.Deliver), p99", v, "ms", 50)
		if p50, ok := s.metric("bench", "BenchmarkStream", "fanout-p50-ms"); ok {
			r.Note = fmt.Sprintf("p50 %.2f ms", p50)
		}
		add(r, ok)
	} else if !s.skipped("stream") {
		missing("stream", "memory per socket", "bench BenchmarkStream gave no result")
	}
	if v, ok := s.metric("resume", "BenchmarkStreamResume", "resume-p99-ms"); ok {
		r := atMost("stream", "resume of 5,000 retained events over a WebSocket (?since=0 to stream.resumed), p99", v, "ms", 50)
		if p50, ok := s.metric("resume", "BenchmarkStreamResume", "resume-p50-ms"); ok {
			r.Note = fmt.Sprintf("p50 %.2f ms", p50)
		}
		rows = append(rows, r)
		if b, ok := s.metric("resume", "BenchmarkStreamResume", "B/retained-event"); ok {
			r := info("stream", "memory per retained stream event", b, "B")
			r.Note = fmt.Sprintf("bounded by stream_retention_events × parties: %.1f MiB a party at the default 5,000", b*5000/(1<<20))
			rows = append(rows, r)
		}
	} else if !s.skipped("resume") {
		missing("stream", "resume of 5,000 retained events", "bench BenchmarkStreamResume gave no result")
	}

	// 4. Journal and recovery.
	if v, ok := s.metric("journal", "BenchmarkAppend/GroupCommit64", "records/s"); ok {
		rows = append(rows, info("journal", "group commit appends/s (64 appenders, 200 B)", v, "/s"))
		if bare, ok := s.metric("journal", "BenchmarkAppend/BareWriteFsync", "records/s"); ok {
			rows = append(rows, info("journal", "bare write+fsync loop records/s", bare, "/s"),
				atLeast("journal", "group commit / bare fsync loop", v/bare, "×", 0.5))
		}
		if b64, ok := s.metric("journal", "BenchmarkAppend/BareBatch64Fsync", "records/s"); ok {
			r := info("journal", "group commit / bare batch-of-64 fsync loop", v/b64, "×")
			r.Note = "the stricter baseline"
			rows = append(rows, r)
		}
		if v, ok := s.metric("journal", "BenchmarkReplay", "records/s"); ok {
			rows = append(rows, info("journal", "journal read-back records/s (checksums)", v, "/s"))
		}
	} else if !s.skipped("journal") {
		missing("journal", "appends/s", "journal benchmarks gave no result")
	}
	if v, ok := s.metric("journal", "BenchmarkAppendDuringSnapshot/256MiB", "max-ms"); ok {
		r := info("journal", "longest append (fsync'd) beside a 256 MiB snapshot write", v, "ms")
		p99, _ := s.metric("journal", "BenchmarkAppendDuringSnapshot/256MiB", "p99-ms")
		quiet, _ := s.metric("journal", "BenchmarkAppendDuringSnapshot/256MiB", "quiet-max-ms")
		r.Note = fmt.Sprintf("p99 %.2f ms; with no snapshot: longest %.2f ms", p99, quiet)
		rows = append(rows, r)
	}
	if v, ok := s.metric("node", "BenchmarkReplay/replay", "inputs/s"); ok {
		rows = append(rows, atLeast("recovery", "desk replay inputs/s (read + decode + apply + checkpoints; the desk's GOGC 200)", v, "/s", 200000))
		if g, ok := s.metric("node", "BenchmarkReplay/replay-gogc-100", "inputs/s"); ok {
			rows = append(rows, info("recovery", "the same at Go's default GOGC 100", g, "/s"))
		}
		if d, ok := s.metric("node", "BenchmarkReplay/decode", "inputs/s"); ok {
			rows = append(rows, info("recovery", "baseline: read + decode inputs/s", d, "/s"))
		}
	} else if !s.skipped("node") {
		missing("recovery", "replay inputs/s", "node BenchmarkReplay gave no result")
	}
	if v, ok := s.metric("node", "BenchmarkStartToReady/open", "s-ready"); ok {
		r := atMost("recovery", "start-to-ready, snapshot of 100,000 closed RFQs", v, "s", 1)
		r.Note = "target from node's benchmark (the issue sets none)"
		rows = append(rows, r)
	}

	// 5. Simulation.
	if m := simLine.FindStringSubmatch(s.res.Sim); m != nil {
		busy, _ := strconv.ParseFloat(m[5], 64)
		rows = append(rows, atLeast("simulation", "simulated s / wall s of the busy phase (20 makers, 5 takers, 1 RFQ/s, mild, one core), "+m[3], busy, "×", 1000))
		whole, _ := strconv.ParseFloat(m[2], 64)
		r := info("simulation", "the whole run, the quiet liveness phase included", whole, "×")
		rows = append(rows, r)
		rows = append(rows, simCeiling(busy, s.res.SimCost)...)
	} else if !s.skipped("sim") {
		missing("simulation", "simulated s / wall s", s.res.Sim)
	}

	// 6. Memory.
	for _, m := range []struct{ unit, name string }{
		{"heap-B/open-rfq", "desk heap per open RFQ with 3 live quotes"},
		{"snap-B/open-rfq", "snapshot bytes per open RFQ with 3 live quotes"},
		{"heap-B/closed-rfq", "desk heap per retained settled RFQ"},
		{"snap-B/closed-rfq", "snapshot bytes per retained settled RFQ"},
	} {
		v, ok := s.metric("memory", "BenchmarkDeskMemory", m.unit)
		add(info("memory", m.name, v, "B"), ok)
	}

	// 7. Idempotency keys (issue 20): the lookup's cost added to a write, against the same
	// write without a key in the same run (medians of alternate pairs), and a record's heap.
	if added, ok := s.metric("idem", "BenchmarkIdempotency/write", "added-ns/write"); ok {
		r := atMost("idempotency", "Idempotency-Key added to a write (POST /rfq, in process)", added/1000, "µs", 5)
		if base, ok := s.metric("idem", "BenchmarkIdempotency/write", "baseline-ns/write"); ok {
			r.Note = fmt.Sprintf("the same write without a key: %.2f µs", base/1000)
		}
		rows = append(rows, r)
		v, ok := s.metric("idem", "BenchmarkIdempotency/replay", "ns/op")
		add(info("idempotency", "a replayed answer (the same key again)", v/1000, "µs"), ok)
		v, ok = s.metric("idem", "BenchmarkIdempotency/record-bytes", "B/record")
		r = info("idempotency", "heap per record, the answer's body included", v, "B")
		r.Note = fmt.Sprintf("bounded: %d records a party", machine.MaxIdempotencyKeysPerScope)
		add(r, ok)
	} else if !s.skipped("idem") {
		missing("idempotency", "Idempotency-Key added to a write", "machine BenchmarkIdempotency gave no result")
	}
	return rows
}

func (s *suite) skipped(step string) bool {
	for _, k := range strings.Split(s.opts.skip, ",") {
		if strings.TrimSpace(k) == step {
			return true
		}
	}
	return false
}

// num formats a number for the table: integers without decimals, others with three
// significant decimals at most.
func num(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// printTable writes the table (Markdown, so docs/performance.md can take it as is) and
// the profiles.
func printTable(w io.Writer, r *Results) {
	fmt.Fprintf(w, "machine: %s; %d CPUs (%s); %s\n\n", r.Machine.Uname, r.Machine.CPUs, r.Machine.Model, r.Machine.Go)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| group\t| metric\t| value\t| target\t| ratio\t| met?\t| note\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---:\t|---\t|---:\t|---\t|---\t|")
	for _, row := range r.Rows {
		val, ratio, met := "", "", ""
		if !strings.HasPrefix(row.Note, "not measured") {
			val = num(row.Value) + " " + row.Unit
		}
		if row.Ratio != nil {
			ratio = num(*row.Ratio)
		}
		if row.Met != nil {
			met = "no"
			if *row.Met {
				met = "yes"
			}
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t|\n", row.Group, row.Metric, val, row.Target, ratio, met, row.Note)
	}
	tw.Flush()
	if r.Sim != "" {
		fmt.Fprintf(w, "\nsimulation: %s\n", lastLine(r.Sim))
	}
	for _, k := range []string{"inproc", "wire-loadgen", "wire-desk"} {
		if p := r.Profiles[k]; p != "" {
			fmt.Fprintf(w, "\nCPU profile %s (top by flat, then cumulative):\n%s", k, firstLines(p, 18))
		}
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "\nFAILED: %s\n", f)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// firstLines keeps the first n lines of each blank-line-separated block.
func firstLines(s string, n int) string {
	var b strings.Builder
	for _, block := range strings.Split(s, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) > n {
			lines = lines[:n]
		}
		if len(lines) > 0 && lines[0] != "" {
			b.WriteString(strings.Join(lines, "\n") + "\n\n")
		}
	}
	return b.String()
}

// simCeiling reads the simulation's CPU profile: the share of the run the signatures took,
// and the share the code a simulator cannot skip took (the desk's core, the ledger with
// its signature checks, the actors' signing), each with the rate a simulator would reach
// if everything else it does cost nothing.
func simCeiling(busy float64, c *SimCost) []Row {
	if c == nil || c.TotalS <= 0 {
		return nil
	}
	const group = "simulation"
	sigs := (c.SignS + c.VerifyS) / c.TotalS
	core := (c.SignS + c.LedgerS + c.DeskS) / c.TotalS
	var rows []Row
	r := info(group, "share of the run's CPU in Ed25519 (actors sign, the ledger verifies)", 100*sigs, "%")
	r.Note = fmt.Sprintf("sign %.1f s, verify %.1f s of %.1f s profiled", c.SignS, c.VerifyS, c.TotalS)
	rows = append(rows, r)
	if sigs > 0 {
		r = info(group, "ceiling: the busy rate if nothing but the signatures cost", busy/sigs, "×")
		rows = append(rows, r)
	}
	r = info(group, "share in the desk's core, the ledger (its verify included) and the signing", 100*core, "%")
	r.Note = fmt.Sprintf("machine.Apply %.1f s, ledger calls %.1f s, sign %.1f s", c.DeskS, c.LedgerS, c.SignS)
	rows = append(rows, r)
	if core > 0 {
		r = info(group, "ceiling: the busy rate if nothing but those cost", busy/core, "×")
		if room := 1 - 1000/(busy/core); room >= 0 {
			r.Note = fmt.Sprintf("1,000× leaves %.0f%% of the run for the actors, invariants, reads, journals, snapshots and the scheduler", 100*room)
		} else {
			r.Note = "below 1,000×: the code under test and the signatures alone take longer than the target allows"
		}
		rows = append(rows, r)
		// The other way to meet the simulation's target: at least 0.8 of that
		// ceiling (the busy rate over the ceiling is that code's share of the run).
		r = atLeast(group, "busy rate ÷ that ceiling", core, "×", 0.8)
		r.Note = "the simulation's target is met by this row or by the 1,000× above"
		rows = append(rows, withReason(r, fmt.Sprintf("why: %.0f%% of the run is the simulator's own work (actors, model, invariants, reads, journals, snapshots, the scheduler)", 100*(1-core))))
	}
	return rows
}
