package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/deskco/rfqdesk/internal/cputime"
)

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ): 100 on every Linux
// architecture this runs on.
const userHZ = 100

// cpuMeter reads the CPU time (user + system, every thread) this process has used and,
// when the load generator started the desk, the desk's.
type cpuMeter struct {
	deskPID int // 0: the desk is not ours to measure
}

// cpuSample is one reading of a cpuMeter.
type cpuSample struct {
	self, desk time.Duration
	deskOK     bool
}

func (m cpuMeter) sample() cpuSample {
	var s cpuSample
	s.self = cputime.Self()
	if m.deskPID > 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.deskPID)); err == nil {
			s.desk, s.deskOK = parseStatCPU(b)
		}
	}
	return s
}

// parseStatCPU reads utime + stime from the text of /proc/PID/stat. The command name in
// parentheses may hold spaces and parentheses, so the fields are counted from the last
// ')': state is the first after it, utime the 12th and stime the 13th.
func parseStatCPU(stat []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	st, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * time.Second / userHZ, true
}

// CPUUse is the CPU time the processes used during a phase.
type CPUUse struct {
	// LoadgenS is this process: the parties' clients and signing, or the transport
	// floor's client and bare server.
	LoadgenS float64 `json:"loadgen_s"`
	// DeskS is the desk process's, when the load generator started it (0 otherwise).
	DeskS float64 `json:"desk_s,omitempty"`
	// PerUnitMS is (LoadgenS + DeskS) over the phase's settled trades or floor call
	// sequences, in milliseconds.
	PerUnitMS float64 `json:"per_unit_ms"`
	// DeskPerUnitMS is DeskS over the same count.
	DeskPerUnitMS float64 `json:"desk_per_unit_ms,omitempty"`
}

// cpuUse is the CPU time between two samples, per unit of work (units ≤ 0: none).
func cpuUse(from, to cpuSample, units int64) *CPUUse {
	u := &CPUUse{LoadgenS: (to.self - from.self).Seconds()}
	if from.deskOK && to.deskOK {
		u.DeskS = (to.desk - from.desk).Seconds()
	}
	if units > 0 {
		u.PerUnitMS = (u.LoadgenS + u.DeskS) * 1000 / float64(units)
		u.DeskPerUnitMS = u.DeskS * 1000 / float64(units)
	}
	return u
}
