package main

import (
	"fmt"
	"io"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// runDescribe replays the source's desk journal, from genesis or from its snapshot, and
// prints every input with what it produced, as transcripts print them
// (machine.DescribeStep), on stdout: two runs diff line by line. The ledger is not
// replayed (the desk's outputs do not depend on it; its answers are desk inputs).
func runDescribe(stdout, stderr io.Writer, src *source, c config) int {
	desk, from, err := describeStart(src)
	if err != nil {
		fmt.Fprintf(stderr, "replay: -describe: %v\n", err)
		return exitError
	}
	if c.until > 0 && c.until < from {
		fmt.Fprintf(stderr, "replay: -describe: desk input %d is covered by the snapshot at %d: the journal no longer holds the inputs before it\n", c.until, from-1)
		return exitError
	}
	var readErr error
	for seq, rec := range node.Records(src.desk, from, &readErr) {
		env, err := machine.DecodeEnvelope(rec)
		if err != nil {
			fmt.Fprintf(stderr, "replay: -describe: desk record %d: %v\n", seq, err)
			return exitError
		}
		out, panicked := applyRecovering(desk, env)
		if panicked != nil {
			fmt.Fprintf(stdout, "%s\n  panicked: %v\n", machine.DescribeInput(env), panicked)
			fmt.Fprintf(stderr, "replay: -describe: desk input %d: machine.Apply panicked: %v\n", seq, panicked)
			return exitMismatch
		}
		if _, err := io.WriteString(stdout, machine.DescribeStep(env, out)); err != nil {
			fmt.Fprintf(stderr, "replay: -describe: %v\n", err)
			return exitError
		}
		if c.until > 0 && seq >= c.until {
			break
		}
	}
	if readErr != nil {
		fmt.Fprintf(stderr, "replay: -describe: read the desk journal: %v\n", readErr)
		return exitError
	}
	return exitOK
}

// describeStart builds the desk the description starts from: the genesis configuration
// when the journal holds record 1 (and the source does not ask for its snapshot), else the
// journal's snapshot. It returns the first input to apply.
func describeStart(src *source) (*machine.Desk, uint64, error) {
	if src.desk.FirstSeq() == 1 && !src.fromSnapshot {
		cfg, err := node.DeskGenesis(src.desk)
		if err != nil {
			return nil, 0, err
		}
		d, err := machine.NewDesk(cfg)
		return d, 2, err
	}
	seq, data, ok, err := src.desk.LoadSnapshot()
	if err != nil {
		return nil, 0, fmt.Errorf("load the desk snapshot: %w", err)
	}
	if !ok {
		return nil, 0, fmt.Errorf("the desk journal starts at record %d and holds no snapshot", src.desk.FirstSeq())
	}
	d, err := machine.Restore(data)
	if err != nil {
		return nil, 0, fmt.Errorf("restore the desk snapshot at %d: %w", seq, err)
	}
	return d, seq + 1, nil
}

// applyRecovering applies one input, turning a panic of the core (a bug the trace may have
// been written for) into a value to report.
func applyRecovering(desk *machine.Desk, env machine.Envelope) (out machine.Outputs, panicked any) {
	defer func() { panicked = recover() }()
	return machine.Apply(desk, env), nil
}
