package main

import (
	"testing"
)

func TestParsePerfStat(t *testing.T) {
	out := []byte(`# started on Thu Nov 26 07:21:12 2026

57295,,raw_syscalls:sys_enter,3012345678,100.00,,
39617,,context-switches,3012345678,100.00,,
22170,,syscalls:sys_enter_write,3012345678,100.00,,
6032,,syscalls:sys_enter_fsync,3012345678,100.00,,
0,,syscalls:sys_enter_accept4,3012345678,100.00,,
`)
	u, err := parsePerfStat(out)
	if err != nil {
		t.Fatal(err)
	}
	u.perTrade(320)
	if u.Total != 57295 || u.ContextSwitches != 39617 {
		t.Fatalf("total %d, context switches %d", u.Total, u.ContextSwitches)
	}
	want := []SyscallCount{{"other", 29093, 29093.0 / 320, "every other system call"}, {"write", 22170, 22170.0 / 320, purpose("write")}, {"fsync", 6032, 6032.0 / 320, purpose("fsync")}}
	if len(u.Calls) != len(want) {
		t.Fatalf("calls %+v, want %+v", u.Calls, want)
	}
	for i := range want {
		if u.Calls[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, u.Calls[i], want[i])
		}
	}
	if _, err := parsePerfStat([]byte("<not counted>,,raw_syscalls:sys_enter,0,0.00,,\n")); err == nil {
		t.Error("an uncounted total was accepted")
	}
	if _, err := parsePerfStat([]byte("12,,syscalls:sys_enter_write,1,100.00,,\n")); err == nil {
		t.Error("counts without a total were accepted")
	}
}

func TestParseStraceSummary(t *testing.T) {
	out := []byte(`% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 61.20    1.200000          30     40000      1200 futex
 20.00    0.400000          20     20000           write
  1.00    0.020000          10      2000           fsync
  0.10    0.002000          10       200           mprotect
------ ----------- ----------- --------- --------- ----------------
100.00    1.622000                 62200      1200 total
`)
	u, err := parseStraceSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	u.perTrade(100)
	if u.Total != 62200 || u.PerTrade != 622 {
		t.Fatalf("total %d, per trade %v", u.Total, u.PerTrade)
	}
	got := map[string]int64{}
	for _, c := range u.Calls {
		got[c.Name] = c.Count
	}
	if got["futex"] != 40000 || got["write"] != 20000 || got["fsync"] != 2000 || got["other"] != 200 || len(got) != 4 {
		t.Errorf("calls %v", got)
	}
}

func TestJournalSyncs(t *testing.T) {
	body := []byte(`# HELP desk_journal_fsync_duration_seconds Duration of the fsync.
desk_journal_fsync_duration_seconds_bucket{journal="desk",le="0.001"} 90
desk_journal_fsync_duration_seconds_count{journal="desk"} 100
desk_journal_fsync_duration_seconds_count{journal="ledger"} 50
desk_journal_records_synced_total{journal="desk"} 400
desk_journal_records_synced_total{journal="ledger"} 150
desk_stream_frames_sent_total 1000
`)
	before := parseJournalMetrics(body)
	after := parseJournalMetrics([]byte(`desk_journal_fsync_duration_seconds_count{journal="desk"} 300
desk_journal_fsync_duration_seconds_count{journal="ledger"} 250
desk_journal_records_synced_total{journal="desk"} 1400
desk_journal_records_synced_total{journal="ledger"} 950
desk_stream_frames_sent_total 3000
`))
	if before[metricFrames] != 1000 || after[metricFrames] != 3000 {
		t.Errorf("frames %v → %v", before[metricFrames], after[metricFrames])
	}
	j := journalSyncs(before, after, 100)
	if j["desk"] != (JournalSyncs{Fsyncs: 200, Records: 1000, PerTrade: 2}) || j["ledger"] != (JournalSyncs{Fsyncs: 200, Records: 800, PerTrade: 2}) {
		t.Errorf("journals %+v", j)
	}
	if journalSyncs(nil, after, 100) != nil {
		t.Error("a missing scrape gave counts")
	}
}
