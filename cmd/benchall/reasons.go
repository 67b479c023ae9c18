package main

import "fmt"

// The rule for a target the run does not meet: the table says, in the same row,
// the measured reason. These notes are computed from the run's own figures (CPU time per
// unit of work against the floor's, the share of the cores busy), never written by hand.

// inProcessTarget, ceilingTarget: the targets, shared by the rows and their reasons.
const (
	inProcessTarget = 0.70
	ceilingTarget   = 0.6
)

// inProcessReason explains an in-process ratio below target: the CPU a lifecycle costs,
// the part of it the signatures take, and the rest (loop, machine, ledger, allocation).
// The row is judged on time; when the CPU alone would meet the target, the reason says
// the lifecycles waited instead (the host, or contention between the parallel runs).
func (s *suite) inProcessReason() string {
	desk, ok1 := s.metric("inproc", "BenchmarkLifecycle/desk", "cpu-ns/op")
	sig, ok2 := s.metric("inproc", "BenchmarkLifecycle/signatures-only", "cpu-ns/op")
	if !ok1 || !ok2 || sig <= 0 || desk <= 0 {
		return ""
	}
	allowed := 1/inProcessTarget - 1
	if desk-sig <= allowed*sig {
		return fmt.Sprintf("why: not the CPU (a lifecycle costs %.0f µs of CPU, its signatures %.0f µs, within the target): the lifecycles waited, for the host or for each other",
			desk/1e3, sig/1e3)
	}
	return fmt.Sprintf("why: a lifecycle costs %.0f µs of CPU, its 4 signatures and 4 verifications %.0f µs; the rest (loop, machine, ledger, allocation) %.0f µs is %.1f× the signatures, where the target allows %.2f×",
		desk/1e3, sig/1e3, (desk-sig)/1e3, (desk-sig)/sig, allowed)
}

// ceilingReason explains a max-phase rate below its share of the ceiling: the CPU a
// settled trade cost both processes against what the ceiling's calls and signatures cost.
func ceilingReason(l *LoadgenResults, ceiling, cores float64) string {
	u := l.Max.CPU
	if u == nil || u.PerUnitMS <= 0 || ceiling <= 0 {
		return ""
	}
	floor := cores * 1000 / ceiling // ms of CPU a trade at the ceiling
	if busy := u.PerUnitMS * l.Max.SettledPerS / 1000; u.PerUnitMS <= floor/ceilingTarget {
		return fmt.Sprintf("why: not the CPU a trade costs (%.2f ms, within the %.2f ms the target allows): the cores were %.0f%% busy, so the closed loop waited on latency",
			u.PerUnitMS, floor/ceilingTarget, 100*busy/cores)
	}
	return fmt.Sprintf("why: a settled trade cost %.2f ms of CPU (desk %.2f, load generator %.2f) where its calls and signatures alone cost %.2f ms; %.1f of the ceiling allows %.2f ms",
		u.PerUnitMS, u.DeskPerUnitMS, u.PerUnitMS-u.DeskPerUnitMS, floor, ceilingTarget, floor/ceilingTarget)
}

// halfLoadReason explains a half-load p99 over target: how busy the cores were at that
// pace and what a trade cost there against the max phase.
func halfLoadReason(l *LoadgenResults, cores float64) string {
	h, m := l.Half.CPU, l.Max.CPU
	if h == nil || h.PerUnitMS <= 0 || cores <= 0 {
		return ""
	}
	why := fmt.Sprintf("why: at this pace the two processes kept %.2f of the %.0f cores busy (%.2f ms of CPU a trade, desk %.2f",
		h.PerUnitMS*l.Half.SettledPerS/1000, cores, h.PerUnitMS, h.DeskPerUnitMS)
	if m != nil && m.DeskPerUnitMS > 0 {
		why += fmt.Sprintf(", against %.2f at max", m.DeskPerUnitMS)
	}
	why += ")"
	if hs, ms := l.Half.Syscalls, l.Max.Syscalls; hs != nil && ms != nil && hs.PerTrade > 0 && ms.PerTrade > 0 {
		why += fmt.Sprintf("; %.0f system calls and %.0f context switches a trade against %.0f and %.0f at max",
			hs.PerTrade, hs.ContextSwitchesPerTrade, ms.PerTrade, ms.ContextSwitchesPerTrade)
	}
	return why
}

// withReason appends why to a row whose target is not met.
func withReason(r Row, why string) Row {
	if r.Met == nil || *r.Met || why == "" {
		return r
	}
	if r.Note != "" {
		r.Note += "; "
	}
	r.Note += why
	return r
}
