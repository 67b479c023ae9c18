package main

import (
	"fmt"
	"strings"
)

// SyscallUse mirrors the desk's system calls over loadgen's max phase (cmd/loadgen
// syscalls.go): counted in the kernel by perf stat, or by strace -c -f.
type SyscallUse struct {
	Tool                    string                  `json:"tool"`
	Total                   int64                   `json:"total"`
	Trades                  int64                   `json:"trades"`
	PerTrade                float64                 `json:"per_trade"`
	ContextSwitches         int64                   `json:"context_switches"`
	ContextSwitchesPerTrade float64                 `json:"context_switches_per_trade"`
	Calls                   []SyscallCount          `json:"calls"`
	Journals                map[string]JournalSyncs `json:"journals"`
	FramesPerTrade          float64                 `json:"frames_per_trade"`
	StreamWritesPerTrade    float64                 `json:"stream_writes_per_trade"`
}

// SyscallCount is one system call's count, per settled trade, and what the desk makes it
// for.
type SyscallCount struct {
	Name     string  `json:"name"`
	Count    int64   `json:"count"`
	PerTrade float64 `json:"per_trade"`
	For      string  `json:"for"`
}

// JournalSyncs are one journal's fsync'd group commits over the phase.
type JournalSyncs struct {
	Fsyncs   int64   `json:"fsyncs"`
	Records  int64   `json:"records"`
	PerTrade float64 `json:"fsyncs_per_trade"`
}

// syscallTop is how many of the largest system calls get a row of their own.
const syscallTop = 8

// inviteCalls and inviteSigs are a settled trade's API calls and signatures (each signed
// once and verified once) when n makers are invited and every one of them quotes: the
// RFQ, n quotes and n executes, the accept and the taker's execute; two signatures per
// quote and two for the taker. One invited maker is the five calls and four signatures of
// the plain ceiling.
func inviteCalls(n int) float64 { return float64(2*max(n, 1) + 3) }
func inviteSigs(n int) float64  { return float64(2*max(n, 1) + 2) }

// ofCeiling is the max phase's settled trades per second over the ceiling for the run's
// invite count (issue 23's target: at least 0.6).
func ofCeiling(g string, l *LoadgenResults, ceiling float64) Row {
	r := atLeast(g, fmt.Sprintf("settled trades/s ÷ ceiling for %d invited (max phase)", l.Invite), l.Max.SettledPerS/ceiling, "×", ceilingTarget)
	r.Note = fmt.Sprintf("%.1f settled/s of a ceiling of %.0f/s", l.Max.SettledPerS, ceiling)
	return r
}

// syscallRows are the desk's system calls per settled trade in the max phase, the largest
// calls each with what it is for, and the journals' fsyncs; then the same total at half
// load, where a group commit carries fewer records.
func syscallRows(g string, u, half *SyscallUse) []Row {
	if u == nil || u.Trades <= 0 {
		return nil
	}
	r := info(g, "system calls per settled trade (desk, max phase)", u.PerTrade, "")
	r.Note = fmt.Sprintf("%s; %d calls over %d trades; context switches %.1f a trade", u.Tool, u.Total, u.Trades, u.ContextSwitchesPerTrade)
	rows := []Row{r}
	for i, c := range u.Calls {
		if i == syscallTop {
			break
		}
		r := info(g, "  "+c.Name+" per settled trade", c.PerTrade, "")
		r.Note = c.For
		switch {
		case c.Name == "write" && u.FramesPerTrade > 0:
			r.Note += fmt.Sprintf(" (stream: %.1f frames in %.1f writes a trade)", u.FramesPerTrade, u.StreamWritesPerTrade)
		case strings.Contains(c.Name, "sync") && len(u.Journals) > 0:
			r.Note += fmt.Sprintf(" (%s)", journalNote(u.Journals))
		}
		rows = append(rows, r)
	}
	for _, j := range []string{"desk", "ledger"} {
		if js, ok := u.Journals[j]; ok && js.Fsyncs > 0 {
			r := info(g, "  "+j+" journal fsyncs per settled trade", js.PerTrade, "")
			r.Note = fmt.Sprintf("%.1f records per group commit", float64(js.Records)/float64(js.Fsyncs))
			rows = append(rows, r)
		}
	}
	if half != nil && half.Trades > 0 {
		r := info(g, "system calls per settled trade at half load", half.PerTrade, "")
		var fsyncs float64
		for _, js := range half.Journals {
			fsyncs += js.PerTrade
		}
		r.Note = fmt.Sprintf("context switches %.1f a trade; journal fsyncs %.2f a trade", half.ContextSwitchesPerTrade, fsyncs)
		rows = append(rows, r)
	}
	return rows
}

// journalNote says how the journals' group commits split the fsyncs.
func journalNote(js map[string]JournalSyncs) string {
	var parts []string
	for _, j := range []string{"desk", "ledger"} {
		if s, ok := js[j]; ok {
			parts = append(parts, fmt.Sprintf("%s journal %.2f a trade", j, s.PerTrade))
		}
	}
	return strings.Join(parts, ", ")
}
