// Command replay rebuilds a desk's state from its journals (a data directory, or a trace
// file written by the simulator), verifies every checkpoint digest the desk journaled,
// and prints the final digests and a summary of the state. It can stop at any input,
// dump the journal and the state as JSON, and find the first input at which two journals diverge.
//
// A simulator trace is also replayed with the simulator's checks (sim.ReplayTrace): a
// failure's trace replays to the violation it was written for, which replay reports as
// "reproduced: <message>".
//
// Exit status: 0 when everything verified and no check failed (or, with -diff, the
// journals are identical), 1 when it diverged: a checkpoint digest, a trace's final
// digest or the ledger's replay disagreed, or the checks met another violation than the
// trace's (or, with -diff, the journals diverge), 2 for a usage error or a journal that
// cannot be read, 3 when a simulator trace reproduced its failure.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/deskco/rfqdesk/internal/cli"
)

// Exit statuses.
const (
	exitOK       = 0
	exitMismatch = 1
	exitError    = 2
	// exitReproduced: a simulator trace replayed to the violation it was written for.
	exitReproduced = 3
)

const usage = `usage:
  replay -data DIR   [-until N] [-dump] [-diff OTHER] [-tmp DIR]
  replay -trace FILE [-until N] [-dump] [-diff OTHER]
  replay -data DIR | -trace FILE -describe [-until N]

Replays every input of a desk's journals: the desk journal from its genesis record
(or, once the journal was pruned, from its newest snapshot) and the ledger journal
from its genesis. Every checkpoint the desk journaled is verified against the
replayed state's digest (a checkpoint mark when the digest naming it comes; a mark
whose digest never came verifies nothing). Prints both final digests (desk: SHA-256
of the desk's binary snapshot; ledger: ledgersim's digest) and a summary of the state.

-data DIR reads a desk data directory (DIR/desk and DIR/ledger). The journal files
are first copied to a temporary directory and the copy is replayed, so the desk's
own files are never locked or changed and a running desk may be replayed (the copy
is a consistent prefix of its journal). The copy costs disk space and time in
proportion to the journal (see -tmp).

-trace FILE reads a trace written by the simulator (format: cmd/replay/TRACE.md);
when the trace ends with the simulator's final digests they are verified too. A
trace the simulator wrote (version 2 of its format, sim/TRACE.md) is also replayed
with the simulator's checks and its judge, input by input, with the ledger where it
stood at each; the replay stops at the first violation and prints it. A failure's
trace replays to the failure it was written for: "reproduced: <message>".

-diff OTHER replays OTHER (a data directory, or a trace file if OTHER is a file)
beside the first source, input by input, and reports the first desk input at which
the records or the states after them differ.

-describe prints every desk input replayed, with the replies, events, ledger calls and
deadline it produced, in the text the transcripts under machine/testdata use: a failing
seed reads like a transcript, and two runs' outputs diff line by line. An input on which the core panics is printed with the panic, and the
replay stops there with status 1. A re-checked
trace's violation is preceded by its last few inputs in the same text.

Exit status:
  0  replayed: verified (or identical), and no check failed
  1  diverged: a digest mismatch, a check failing with another message than the
     trace's failure, or, with -diff, a divergence
  2  usage or read errors
  3  reproduced: the trace's failure, met again with the same message

flags:
`

func main() { cli.Main("replay", run) }

// config is the parsed command line.
type config struct {
	data, trace, diff, tmp string
	until                  uint64
	every                  uint64
	dump                   bool
	describe               bool
}

// run is the command: it parses args, writes its report to stdout (to stderr with -dump,
// whose JSON goes to stdout) and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var c config
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.data, "data", "", "desk data directory to replay")
	fs.StringVar(&c.trace, "trace", "", "simulator trace file to replay")
	fs.Uint64Var(&c.until, "until", 0, "stop after desk input `N` (0: replay everything)")
	fs.BoolVar(&c.dump, "dump", false, "print the desk records replayed, one JSON object a line ({seq, at, kind, input}), then the final desk state as indented JSON, on stdout (the report goes to stderr)")
	fs.BoolVar(&c.describe, "describe", false, "print every desk input replayed with what it produced, as transcripts print them, on stdout (two runs diff line by line); nothing else")
	fs.StringVar(&c.diff, "diff", "", "data directory or trace file to compare against, input by input")
	fs.Uint64Var(&c.every, "every", 1, "with -diff, compare the state digests every `N` inputs (0: only where records differ and at the end)")
	fs.StringVar(&c.tmp, "tmp", "", "directory for the temporary journal copies (default: the system's)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitError
	}
	if c.describe && (c.dump || c.diff != "") {
		fmt.Fprintln(stderr, "replay: -describe goes alone: not with -dump or -diff")
		return exitError
	}
	if fs.NArg() > 0 || (c.data == "") == (c.trace == "") {
		fmt.Fprintln(stderr, "replay: give exactly one of -data DIR or -trace FILE, and no other arguments")
		fs.Usage()
		return exitError
	}
	report := stdout
	if c.dump {
		report = stderr
	}
	path, isTrace := c.data, false
	if c.trace != "" {
		path, isTrace = c.trace, true
	}
	src, err := openSource(path, isTrace, c.tmp)
	if err != nil {
		fmt.Fprintf(stderr, "replay: %v\n", err)
		return exitError
	}
	defer src.close()
	if c.diff != "" {
		st, err := os.Stat(c.diff)
		if err != nil {
			fmt.Fprintf(stderr, "replay: -diff: %v\n", err)
			return exitError
		}
		other, err := openSource(c.diff, !st.IsDir(), c.tmp)
		if err != nil {
			fmt.Fprintf(stderr, "replay: -diff: %v\n", err)
			return exitError
		}
		defer other.close()
		return runDiff(report, stderr, src, other, c)
	}
	if c.describe {
		return runDescribe(stdout, stderr, src, c)
	}
	return runReplay(report, stdout, stderr, src, c)
}
