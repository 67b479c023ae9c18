package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBadFlags: every bad flag is a clear error and exit status 1, never a panic.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-seeds", "-1"}, {"-seeds", "0"}, {"-seeds", "1000001"}, {"-jobs", "0"}, {"-jobs", "-3"},
		{"-duration", "0s"}, {"-duration", "-1m"}, {"-faults", "bogus"}, {"-makers", "0"},
		{"-takers", "-1"}, {"-rfq-rate", "0"}, {"-crash-rate", "2"}, {"-adversaries", "-1"},
		{"-checkpoint-every", "0"}, {"-snapshot-every", "-5"}, {"-state-bytes-per-input", "-1"},
		{"-ledger-check-every", "-1"}, {"-seed", "x"}, {"-nope"}, {"extra"},
	} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1 (stdout %q)", args, code, out.String())
		}
		if msg := strings.TrimSpace(errOut.String() + out.String()); msg == "" {
			t.Errorf("%v: no error message", args)
		}
	}
}
