package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// TestExitCodes: each class of outcome maps to its documented exit code, and a refusal
// prints the desk's status, code and message.
func TestExitCodes(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code int
		want string
	}{
		{"ok", nil, exitOK, ""},
		{"usage", usagef("bad flag"), exitUsage, "bad flag"},
		{"refused", fmt.Errorf("wrapped: %w", &client.APIError{Status: 409, Code: "INSUFFICIENT_FUNDS", Message: "not enough"}), exitRefused, "status 409, code INSUFFICIENT_FUNDS: not enough"},
		{"refused without code", &client.APIError{Status: 404, Message: "gone"}, exitRefused, "status 404: gone"},
		{"transport", &client.TransportError{Method: "GET", Path: "/x", Err: fmt.Errorf("refused")}, exitTransport, "cannot reach the desk"},
		{"timeout", fmt.Errorf("%w waiting", errTimeout), exitTimeout, "timed out"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		if got := report(&stderr, c.err); got != c.code || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "code -") {
			t.Errorf("%s: exit %d, printed %q; want %d and %q", c.name, got, stderr.String(), c.code, c.want)
		}
	}
}

// TestCommandLine: usage mistakes exit 2 without touching the network, an unreachable desk
// exits 3, and a wait on it exits 4 within its timeout.
func TestCommandLine(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"DESK_URL": "http://127.0.0.1:1", "DESK_API_KEY": "mk_test"}[k]
	}
	cases := []struct {
		args []string
		code int
	}{
		{nil, exitUsage},
		{[]string{"bogus"}, exitUsage},
		{[]string{"rfq"}, exitUsage},
		{[]string{"rfq", "create", "-side", "HOLD", "-qty", "1", "-base", "a", "-quote", "b"}, exitUsage},
		{[]string{"withdraw", "-symbol", "cc"}, exitUsage},
		{[]string{"deposits", "accept"}, exitUsage},
		{[]string{"quote", "delete-all", "q_1"}, exitUsage},
		{[]string{"quote", "delete-all"}, exitTransport},
		{[]string{"rfq", "cancel"}, exitUsage},
		{[]string{"quote", "delete", "q1", "q2"}, exitUsage},
		{[]string{"recover"}, exitUsage}, // DESK_API_KEY is set: recover needs the identity file
		{[]string{"rfq", "cancel", "r1"}, exitTransport},
		{[]string{"rfq", "history", "-limit", "5"}, exitTransport},
		{[]string{"trades", "-maker"}, exitTransport},
		{[]string{"quote", "decline", "rfq_1"}, exitUsage},
		{[]string{"quote", "decline", "-reason", "size"}, exitUsage},
		{[]string{"quote", "decline", "-reason", "size", "rfq_1"}, exitTransport},
		{[]string{"status", "-nope"}, exitUsage},
		{[]string{"status"}, exitTransport},
		{[]string{"balances", "-json"}, exitTransport},
		{[]string{"wait", "-timeout", "300ms"}, exitTimeout},
		{[]string{"help"}, exitOK},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if got := run(ctx, c.args, &out, &errOut, env); got != c.code {
			t.Errorf("deskctl %v: exit %d, want %d (%s)", c.args, got, c.code, errOut.String())
		}
		cancel()
	}
}

// TestBetter: the best price is the highest on a SELL RFQ and the lowest on a BUY, compared
// exactly.
func TestBetter(t *testing.T) {
	if !better(client.Sell, "100.0000000001", "100") || better(client.Sell, "99.9", "100") {
		t.Error("SELL: higher is better")
	}
	if !better(client.Buy, "99.9999999999", "100") || better(client.Buy, "100.1", "100") {
		t.Error("BUY: lower is better")
	}
}
