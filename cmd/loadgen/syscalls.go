package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// syscallPurposes are the system calls counted one by one in the desk process, each with
// what the desk makes it for. The rest are counted together as "other".
var syscallPurposes = []struct{ name, purpose string }{
	{"write", "socket writes (each HTTP answer, each stream frame or batch of frames) and journal appends"},
	{"read", "socket reads (HTTP requests, WebSocket frames from clients)"},
	{"futex", "goroutine wake-ups across OS threads (the runtime parking and waking Ms), contended locks"},
	{"epoll_pwait", "the network poller waiting for ready sockets (an idle P's sleep)"},
	{"epoll_wait", "the network poller waiting for ready sockets"},
	{"nanosleep", "the scheduler spinning for work (usleep) and the sysmon thread"},
	{"sched_yield", "the scheduler and the collector yielding while spinning"},
	{"fsync", "journal group commits (desk and ledger journals), snapshot files, directories"},
	{"fdatasync", "journal group commits"},
	{"sync_file_range", "snapshot writeback started as it is written (paced)"},
	{"pwrite64", "positioned file writes"},
	{"writev", "gathered writes"},
	{"tgkill", "signals to one thread: goroutine preemption (GC, long runs)"},
	{"getpid", "paired with tgkill for preemption"},
	{"rt_sigreturn", "return from the preemption signal's handler"},
	{"madvise", "the heap returning memory to the kernel"},
	{"mmap", "heap growth"},
	{"epoll_ctl", "sockets registered with the poller (new connections)"},
	{"accept4", "new connections"},
	{"close", "closed connections and files"},
	{"openat", "files opened (journal segments, snapshots)"},
	{"getsockopt", "socket options"},
	{"setsockopt", "socket options (new connections)"},
}

// SyscallCount is one system call's count over a phase.
type SyscallCount struct {
	Name     string  `json:"name"`
	Count    int64   `json:"count"`
	PerTrade float64 `json:"per_trade"`
	// For says what the desk makes this call for.
	For string `json:"for,omitempty"`
}

// JournalSyncs are one journal's fsync'd group commits over a phase, from the desk's
// /metrics.
type JournalSyncs struct {
	Fsyncs   int64   `json:"fsyncs"`
	Records  int64   `json:"records"`
	PerTrade float64 `json:"fsyncs_per_trade"`
}

// SyscallUse is the desk process's system calls over a phase, counted in the kernel
// (`perf stat` on the syscall tracepoints, every thread of the process) or, without perf,
// by `strace -c -f` (which slows the desk: the phase's rate then reads low).
type SyscallUse struct {
	Tool     string  `json:"tool"`
	Total    int64   `json:"total"`
	Trades   int64   `json:"trades"`
	PerTrade float64 `json:"per_trade"`
	// ContextSwitches are the desk's threads' context switches (perf only): each sleep
	// and wake-up of a thread, or a preemption.
	ContextSwitches         int64                   `json:"context_switches,omitempty"`
	ContextSwitchesPerTrade float64                 `json:"context_switches_per_trade,omitempty"`
	Calls                   []SyscallCount          `json:"calls"`
	Journals                map[string]JournalSyncs `json:"journals,omitempty"`
	// FramesPerTrade are the stream frames the desk wrote per settled trade, and
	// StreamWritesPerTrade the socket writes that carried them (its /metrics; a desk
	// without desk_stream_writes_total reads 0).
	FramesPerTrade       float64 `json:"frames_per_trade,omitempty"`
	StreamWritesPerTrade float64 `json:"stream_writes_per_trade,omitempty"`
}

// syscallCounter counts a process's system calls between start and stop.
type syscallCounter struct {
	cmd     *exec.Cmd
	tool    string
	out     string
	metrics string // the desk's /metrics URL ("" when unknown)
	before  map[string]float64
}

// countSyscalls attaches a counter to pid: perf stat when it can count the syscall
// tracepoints, strace -c -f otherwise. metricsURL, if set, is read before and after for
// the journals' fsyncs. It returns nil (having said why to stderr) when neither tool runs.
func countSyscalls(pid int, dir, metricsURL string, stderr io.Writer) *syscallCounter {
	c := &syscallCounter{out: filepath.Join(dir, fmt.Sprintf("syscalls-%d-%d.txt", pid, time.Now().UnixNano())), metrics: metricsURL}
	if events := perfSyscallEvents(); events != nil {
		c.tool = "perf stat"
		c.cmd = exec.Command("perf", "stat", "-x", ",", "-o", c.out, "-e", strings.Join(events, ","), "-p", strconv.Itoa(pid))
	} else if _, err := exec.LookPath("strace"); err == nil {
		c.tool = "strace -c -f"
		c.cmd = exec.Command("strace", "-c", "-f", "-q", "-o", c.out, "-p", strconv.Itoa(pid))
	} else {
		fmt.Fprintln(stderr, "loadgen: no system call counts: neither perf (with syscall tracepoints) nor strace runs here (apt-get install strace)")
		return nil
	}
	c.cmd.Stdout, c.cmd.Stderr = io.Discard, io.Discard
	c.before = scrapeMetrics(metricsURL)
	if err := c.cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "loadgen: no system call counts:", err)
		return nil
	}
	// Both tools attach to every thread before counting; give them a moment so the phase
	// is counted from its start.
	time.Sleep(300 * time.Millisecond)
	return c
}

// perfSyscallEvents is the event list for perf stat: every syscall's entry (the total),
// context switches, and the entries of syscallPurposes this kernel has a tracepoint for;
// nil when perf cannot list them.
func perfSyscallEvents() []string {
	if _, err := exec.LookPath("perf"); err != nil {
		return nil
	}
	out, err := exec.Command("perf", "list", "--raw-dump", "tracepoint").Output()
	if err != nil {
		return nil
	}
	have := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		have[f] = true
	}
	if !have["raw_syscalls:sys_enter"] {
		return nil
	}
	events := []string{"raw_syscalls:sys_enter", "context-switches"}
	for _, s := range syscallPurposes {
		if e := "syscalls:sys_enter_" + s.name; have[e] {
			events = append(events, e)
		}
	}
	return events
}

// stop ends the count and returns it divided by trades (nil with a warning on failure).
func (c *syscallCounter) stop(trades int64, stderr io.Writer) *SyscallUse {
	if c == nil {
		return nil
	}
	after := scrapeMetrics(c.metrics)
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	defer os.Remove(c.out)
	b, err := os.ReadFile(c.out)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen: system call counts:", err)
		return nil
	}
	var u *SyscallUse
	if c.tool == "perf stat" {
		u, err = parsePerfStat(b)
	} else {
		u, err = parseStraceSummary(b)
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadgen: system call counts:", err)
		return nil
	}
	u.Tool = c.tool
	u.Journals = journalSyncs(c.before, after, trades)
	if c.before != nil && after != nil && trades > 0 {
		u.FramesPerTrade = (after[metricFrames] - c.before[metricFrames]) / float64(trades)
		u.StreamWritesPerTrade = (after[metricWrites] - c.before[metricWrites]) / float64(trades)
	}
	u.perTrade(trades)
	return u
}

// perTrade fills the per-trade figures and adds "other" (the calls not named).
func (u *SyscallUse) perTrade(trades int64) {
	var named int64
	for _, c := range u.Calls {
		named += c.Count
	}
	if other := u.Total - named; other > 0 {
		u.Calls = append(u.Calls, SyscallCount{Name: "other", Count: other, For: "every other system call"})
	}
	slices.SortStableFunc(u.Calls, func(a, b SyscallCount) int { return int(b.Count - a.Count) })
	u.Trades = trades
	if trades <= 0 {
		return
	}
	u.PerTrade = float64(u.Total) / float64(trades)
	u.ContextSwitchesPerTrade = float64(u.ContextSwitches) / float64(trades)
	for i := range u.Calls {
		u.Calls[i].PerTrade = float64(u.Calls[i].Count) / float64(trades)
	}
}

// purpose says what a named system call is for ("" when not one of syscallPurposes).
func purpose(name string) string {
	for _, s := range syscallPurposes {
		if s.name == name {
			return s.purpose
		}
	}
	return ""
}

// parsePerfStat reads `perf stat -x ,` output: value,unit,event,... per line; lines
// starting with '#' and blank lines are comments. A syscall with a count of zero is left
// out; an event that was not counted is an error (the total would be wrong).
func parsePerfStat(b []byte) (*SyscallUse, error) {
	u := &SyscallUse{}
	total := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		event := f[2]
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("perf stat: %s: %q not counted", event, f[0])
		}
		switch {
		case event == "raw_syscalls:sys_enter":
			u.Total, total = n, true
		case event == "context-switches" || strings.HasPrefix(event, "context-switches:"):
			u.ContextSwitches = n
		case strings.HasPrefix(event, "syscalls:sys_enter_"):
			if name := strings.TrimPrefix(event, "syscalls:sys_enter_"); n > 0 {
				u.Calls = append(u.Calls, SyscallCount{Name: name, Count: n, For: purpose(name)})
			}
		}
	}
	if !total {
		return nil, fmt.Errorf("perf stat: no raw_syscalls:sys_enter count in %q", tail(string(b), 300))
	}
	return u, nil
}

// parseStraceSummary reads the table `strace -c` writes: "% time seconds usecs/call
// calls [errors] syscall", a dashed line, the rows, a dashed line and the total. The
// columns are right-aligned under the header (the total row leaves usecs/call blank), so a
// row's calls are the last field of its text up to the end of the header's "calls".
func parseStraceSummary(b []byte) (*SyscallUse, error) {
	u := &SyscallUse{}
	total := false
	callsEnd := -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " calls"); strings.HasPrefix(line, "%") && i >= 0 {
			callsEnd = i + len(" calls")
			continue
		}
		f := strings.Fields(line)
		if callsEnd < 0 || len(f) < 3 || strings.HasPrefix(f[0], "-") || len(line) < callsEnd {
			continue
		}
		left := strings.Fields(line[:callsEnd])
		if len(left) == 0 {
			continue
		}
		n, err := strconv.ParseInt(left[len(left)-1], 10, 64)
		if err != nil {
			continue
		}
		if name := f[len(f)-1]; name == "total" {
			u.Total, total = n, true
		} else if p := purpose(name); p != "" {
			u.Calls = append(u.Calls, SyscallCount{Name: name, Count: n, For: p})
		}
	}
	if !total {
		return nil, fmt.Errorf("strace: no total in %q", tail(string(b), 300))
	}
	return u, nil
}

// Series of the desk's /metrics read for the journals' group commits.
const (
	metricFsyncs  = "desk_journal_fsync_duration_seconds_count"
	metricRecords = "desk_journal_records_synced_total"
	metricFrames  = "desk_stream_frames_sent_total"
	metricWrites  = "desk_stream_writes_total"
)

// scrapeMetrics reads the desk's journal series from its /metrics (nil when url is ""
// or unreachable), keyed by the series with its labels as written.
func scrapeMetrics(url string) map[string]float64 {
	if url == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil
	}
	return parseJournalMetrics(body)
}

// parseJournalMetrics keeps the journal series of a Prometheus text exposition.
func parseJournalMetrics(body []byte) map[string]float64 {
	m := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metricFsyncs) && !strings.HasPrefix(line, metricRecords) &&
			!strings.HasPrefix(line, metricFrames) && !strings.HasPrefix(line, metricWrites) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// journalSyncs are the fsyncs and records of the desk and ledger journals between two
// scrapes (nil when either is missing).
func journalSyncs(before, after map[string]float64, trades int64) map[string]JournalSyncs {
	if before == nil || after == nil {
		return nil
	}
	out := map[string]JournalSyncs{}
	for _, j := range []string{"desk", "ledger"} {
		label := `{journal="` + j + `"}`
		f := int64(after[metricFsyncs+label] - before[metricFsyncs+label])
		r := int64(after[metricRecords+label] - before[metricRecords+label])
		js := JournalSyncs{Fsyncs: f, Records: r}
		if trades > 0 {
			js.PerTrade = float64(f) / float64(trades)
		}
		out[j] = js
	}
	return out
}

// tail keeps the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// metricsURL is the started desk's /metrics ("" when its admin address is unknown).
func (p *deskProc) metricsURL() string {
	if p.admin == "" {
		return ""
	}
	return p.admin + "/metrics"
}

// printSyscalls writes a phase's system calls per settled trade, the largest first.
func printSyscalls(w io.Writer, u *SyscallUse) {
	if u == nil {
		return
	}
	fmt.Fprintf(w, "  desk system calls (%s): %d = %.1f per settled trade; context switches %.1f, stream frames %.1f in %.1f writes per trade\n", u.Tool, u.Total, u.PerTrade, u.ContextSwitchesPerTrade, u.FramesPerTrade, u.StreamWritesPerTrade)
	for _, c := range u.Calls {
		fmt.Fprintf(w, "    %-16s %8.2f per trade  %s\n", c.Name, c.PerTrade, c.For)
	}
	for _, j := range []string{"desk", "ledger"} {
		if js, ok := u.Journals[j]; ok {
			per := 0.0
			if js.Fsyncs > 0 {
				per = float64(js.Records) / float64(js.Fsyncs)
			}
			fmt.Fprintf(w, "    %s journal: %d fsyncs = %.2f per trade, %.1f records per fsync\n", j, js.Fsyncs, js.PerTrade, per)
		}
	}
}
