package node

import (
	"runtime/debug"
	"strings"
)

// DefaultGCPercent is the garbage collector's target the desk process runs with: the heap
// may grow to three times what is live before a collection, not twice (Go's default 100).
// The desk's live state is small next to a server's memory (the 10,000-socket benchmark's
// whole process is about 200 MiB), and a lifecycle allocates about 45 KB of short-lived
// records, replies and events; at 200 the collector's share of a lifecycle's CPU drops
// enough to add about 3% to the in-process lifecycle rate (loop BenchmarkLifecycle reports
// the rate at the default and at this setting side by side).
const DefaultGCPercent = 200

// ApplyGCPercent sets DefaultGCPercent as the collector's target, unless the environment
// sets GOGC (an operator's choice wins, and the runtime has applied it already).
func ApplyGCPercent(getenv func(string) string) {
	if strings.TrimSpace(getenv("GOGC")) != "" {
		return
	}
	debug.SetGCPercent(DefaultGCPercent)
}
