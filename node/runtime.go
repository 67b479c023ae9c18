package node

import (
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultGCPercent is the garbage collector's target the desk process runs with: the heap
// may grow to three times what is live before a collection, not twice (Go's default 100).
// The desk's live state is small next to a server's memory (the 10,000-socket benchmark's
// whole process is about 200 MiB), and a lifecycle allocates about 60 KB of short-lived
// records, replies and events; at 200 the collector's share of a lifecycle's CPU drops
// enough to add about 3% to the in-process lifecycle rate (loop BenchmarkLifecycle reports
// the rate at the default and at this setting side by side).
const DefaultGCPercent = 200

// ApplyGCPercent sets DefaultGCPercent as the collector's target, unless the environment
// sets GOGC (an operator's choice wins), and returns the setting in force ("GOGC=…" when
// the environment chose).
func ApplyGCPercent(getenv func(string) string) string {
	if v := strings.TrimSpace(getenv("GOGC")); v != "" {
		return "GOGC=" + v
	}
	debug.SetGCPercent(DefaultGCPercent)
	return strconv.Itoa(DefaultGCPercent)
}
