// Package cputime reads the CPU time this process has used. Unlike wall time it does not
// count the time other processes of a shared machine take from this one, so the
// benchmarks and the load generator report it beside wall time as the robust figure.
package cputime

import (
	"syscall"
	"time"
)

// Self is the CPU time (user + system, every thread) this process has used so far, or 0
// when the system does not say.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
