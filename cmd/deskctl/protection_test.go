package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestProtectionCommandLine: the protection subcommands check their flags before calling
// the desk (usage), and call it otherwise (here an unreachable desk: transport).
func TestProtectionCommandLine(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"DESK_URL": "http://127.0.0.1:1", "DESK_API_KEY": "mk_test"}[k]
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"protection"}, exitUsage},
		{[]string{"protection", "bogus"}, exitUsage},
		{[]string{"protection", "show", "x"}, exitUsage},
		{[]string{"protection", "set"}, exitUsage},
		{[]string{"protection", "set", "-window", "60", "-max-notional", "1e3"}, exitUsage},
		{[]string{"protection", "set", "-window", "60", "-max-fills", "-1"}, exitUsage},
		{[]string{"protection", "set", "-window", "60", "-max-fills", "3", "-max-notional", "2500.5", "-freeze", "30"}, exitTransport},
		{[]string{"protection", "show"}, exitTransport},
		{[]string{"protection", "reset"}, exitTransport},
	} {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if got := run(ctx, c.args, &out, &errOut, env); got != c.code {
			t.Errorf("deskctl %v: exit %d, want %d (%s)", c.args, got, c.code, errOut.String())
		}
		cancel()
	}
}
