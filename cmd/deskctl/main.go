// Command deskctl is a command-line client of the desk for takers and makers: register a
// party, fund it, trade, sign, and watch the stream, one command per step.
//
//	deskctl register -name "My Taker"      # Ed25519 key + API key into ./deskctl-identity.json (0600)
//	deskctl faucet -accept                 # draw test tokens and accept the deposits
//	deskctl rfq create -side SELL -qty 0.01 -base cbtc -quote usdcx -makers house-maker
//	deskctl accept                         # accept the best quote of my newest RFQ, sign, wait
//	deskctl trades
//
// Every subcommand takes -url (env DESK_URL, default http://127.0.0.1:8080), -identity
// (env DESK_IDENTITY, default ./deskctl-identity.json), -api-key (env DESK_API_KEY: act
// with a bare key instead of an identity file, e.g. a house party), -json (machine-readable
// output) and -timeout (bounds every wait, default 60s).
//
// Exit codes: 0 success; 1 the desk refused (its HTTP status, code and message are printed);
// 2 usage error; 3 the desk could not be reached; 4 a wait timed out.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/deskco/rfqdesk/internal/cli"
)

// Exit codes.
const (
	exitOK        = 0
	exitRefused   = 1
	exitUsage     = 2
	exitTransport = 3
	exitTimeout   = 4
)

func main() {
	cli.MainInterruptible("deskctl", func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return run(ctx, args, stdout, stderr, os.Getenv)
	})
}

// command is one subcommand.
type command struct {
	summary string
	run     func(e *env, args []string) error
}

// commands lists the subcommands; it is built per call, so no state is shared.
func commands() map[string]command {
	return map[string]command{
		"wait":          {"wait until the desk answers", cmdWait},
		"register":      {"register a new party: generate its key, sign the topology, save the identity file", cmdRegister},
		"recover":       {"replace a lost or dead API key (challenge + rotate with the party key)", cmdRecover},
		"status":        {"the party's status (invitable, pending actions)", cmdStatus},
		"desk":          {"fee tiers and the makers a taker can invite now", cmdDesk},
		"instruments":   {"the catalog", cmdInstruments},
		"balances":      {"free holdings", cmdBalances},
		"faucet":        {"draw test tokens (-accept: accept and sign the deposits)", cmdFaucet},
		"deposits":      {"the deposit inbox: deposits [list] | deposits accept (-all | CID...)", cmdDeposits},
		"withdraw":      {"send an amount to a party id and sign it", cmdWithdraw},
		"rfq":           {"rfq create | mine | cancel ID | history", cmdRFQ},
		"quote":         {"quote submit -rfq ID -price P | quote delete ID | quote delete-all | quote decline -reason R RFQ_ID (maker)", cmdQuote},
		"accept":        {"accept a quote (default: the best one on my newest open RFQ), sign, wait for settlement", cmdAccept},
		"trades":        {"settled trades", cmdTrades},
		"pending":       {"actions waiting for my signature", cmdPending},
		"sign":          {"sign and execute pending actions (all, or the ids given)", cmdSign},
		"stream":        {"tail the event stream, one line per event (-json: raw frames)", cmdStream},
		"scorecard":     {"my maker scorecard over a window (-window 1h|24h|7d)", cmdScorecard},
		"protection":    {"maker protection: protection show | set -window S -max-fills N -max-notional USD -freeze S | reset", cmdProtection},
		"stream-ticket": {"a one-shot ticket (30 s) to open the stream without X-API-Key, as a browser does", cmdStreamTicket},
	}
}

// run is the whole command; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "deskctl: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return exitUsage
	}
	e := &env{ctx: ctx, name: args[0], stdout: stdout, stderr: stderr, getenv: getenv}
	err := c.run(e, args[1:])
	if e.json {
		return reportJSON(stderr, err)
	}
	return report(stderr, err)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: deskctl <command> [flags] [args]   (deskctl <command> -h for its flags)")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
}

// report prints err the way a script and a human both can use, and maps it to an exit code.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ae *apiError
	switch {
	case errors.As(err, &ue):
		if ue.msg != "" {
			fmt.Fprintln(stderr, "deskctl:", ue.msg)
		}
		return exitUsage
	case errors.Is(err, errTimeout), errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintln(stderr, "deskctl:", err)
		return exitTimeout
	case errors.As(err, &ae):
		if ae.Code == "" {
			fmt.Fprintf(stderr, "deskctl: the desk refused: status %d: %s\n", ae.Status, ae.Message)
		} else {
			fmt.Fprintf(stderr, "deskctl: the desk refused: status %d, code %s: %s\n", ae.Status, ae.Code, ae.Message)
		}
		return exitRefused
	case isTransport(err):
		fmt.Fprintln(stderr, "deskctl: cannot reach the desk:", err)
		return exitTransport
	default:
		fmt.Fprintln(stderr, "deskctl:", strings.TrimPrefix(err.Error(), "client: "))
		return exitRefused
	}
}
