package main

import (
	"bytes"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// side is one of the two desks a diff replays in lockstep.
type side struct {
	name string
	desk *machine.Desk
	last machine.Outputs // what the last input applied produced
}

// runDiff replays the desk journals of a and b side by side and reports the first input
// at which their records, or the states after them, differ.
func runDiff(report, stderr io.Writer, a, b *source, c config) int {
	fmt.Fprintf(report, "this:  %s\n", a.what)
	fmt.Fprintf(report, "other: %s\n", b.what)
	sa, sb := &side{name: "this"}, &side{name: "other"}
	from, err := diffStart(report, a, b, sa, sb)
	if err != nil {
		fmt.Fprintf(stderr, "replay: -diff: %v\n", err)
		return exitError
	}
	if sa.desk == nil { // the genesis records differ
		fmt.Fprintf(report, "result: DIVERGED at desk record 1\n")
		return exitMismatch
	}
	var errA, errB error
	nextA, stopA := iter.Pull2(node.Records(a.desk, from, &errA))
	defer stopA()
	nextB, stopB := iter.Pull2(node.Records(b.desk, from, &errB))
	defer stopB()
	var n, last uint64
	for {
		seqA, recA, okA := nextA()
		seqB, recB, okB := nextB()
		if errA != nil || errB != nil {
			fmt.Fprintf(stderr, "replay: -diff: read the desk journals: %v %v\n", errA, errB)
			return exitError
		}
		if !okA && !okB {
			break
		}
		if okA != okB {
			longer, seq, rec := sb, seqB, recB
			if okA {
				longer, seq, rec = sa, seqA, recA
			}
			fmt.Fprintf(report, "diff: first difference at desk input %d: only %s has it (%s); the other journal ends at %d\n",
				seq, longer.name, describe(rec), seq-1)
			fmt.Fprintf(report, "result: DIVERGED at desk input %d (record)\n", seq)
			return exitMismatch
		}
		if seqA != seqB {
			fmt.Fprintf(stderr, "replay: -diff: the journals are out of step (%d vs %d)\n", seqA, seqB)
			return exitError
		}
		seq := seqA
		sameRecord := bytes.Equal(recA, recB)
		if err := sa.apply(seq, recA); err != nil {
			fmt.Fprintf(stderr, "replay: -diff: %v\n", err)
			return exitError
		}
		if err := sb.apply(seq, recB); err != nil {
			fmt.Fprintf(stderr, "replay: -diff: %v\n", err)
			return exitError
		}
		n, last = n+1, seq
		checkState := !sameRecord || (c.every > 0 && n%c.every == 0) || seq == c.until
		if checkState {
			da, db, err := digests(sa, sb)
			if err != nil {
				fmt.Fprintf(stderr, "replay: -diff: %v\n", err)
				return exitError
			}
			if !sameRecord {
				fmt.Fprintf(report, "diff: first difference at desk input %d: the records differ\n", seq)
				fmt.Fprintf(report, "  this:  %s\n  other: %s\n", describe(recA), describe(recB))
				if da == db {
					fmt.Fprintf(report, "  the states after it are equal (digest %s)\n", da)
				} else {
					fmt.Fprintf(report, "  the states after it differ: this %s, other %s\n", da, db)
				}
				outputsAt(report, sa, sb)
				fmt.Fprintf(report, "result: DIVERGED at desk input %d (record)\n", seq)
				return exitMismatch
			}
			if da != db {
				fmt.Fprintf(report, "diff: first difference at desk input %d: same record (%s), but the states after it differ: this %s, other %s\n",
					seq, describe(recA), da, db)
				if c.every > 1 {
					fmt.Fprintf(report, "  (digests compared every %d inputs: the states diverged after input %d at the earliest)\n", c.every, seq-c.every)
				}
				outputsAt(report, sa, sb)
				fmt.Fprintf(report, "result: DIVERGED at desk input %d (state)\n", seq)
				return exitMismatch
			}
		}
		if c.until > 0 && seq >= c.until {
			break
		}
	}
	da, db, err := digests(sa, sb)
	if err != nil {
		fmt.Fprintf(stderr, "replay: -diff: %v\n", err)
		return exitError
	}
	if da != db {
		fmt.Fprintf(report, "diff: the final states differ although every record is equal: this %s, other %s\n", da, db)
		fmt.Fprintf(report, "result: DIVERGED after desk input %d (state)\n", last)
		return exitMismatch
	}
	how := "after every input"
	if c.every != 1 {
		how = fmt.Sprintf("every %d inputs and at the end", c.every)
	}
	fmt.Fprintf(report, "diff: desk journals identical through input %d (%d inputs compared, states %s); digest %s\n", max(last, from-1), n, how, da)
	if c.until == 0 {
		seq, recA, recB, err := firstDifference(a.ledger, b.ledger)
		if err != nil {
			fmt.Fprintf(stderr, "replay: -diff: read the ledger journals: %v\n", err)
			return exitError
		}
		if seq != 0 {
			fmt.Fprintf(report, "diff: the ledger journals differ from record %d (this %d bytes, other %d bytes)\n", seq, len(recA), len(recB))
			fmt.Fprintf(report, "result: DIVERGED at ledger record %d\n", seq)
			return exitMismatch
		}
		fmt.Fprintf(report, "diff: ledger journals identical (%d records)\n", a.ledger.LastSeq())
	}
	fmt.Fprintf(report, "result: identical\n")
	return exitOK
}

// diffStart builds both desks at the common starting point: both genesis records, or
// snapshots at the same sequence number. It returns the first input to compare; the
// desks are left nil when the genesis records differ (reported).
func diffStart(report io.Writer, srcA, srcB *source, sa, sb *side) (uint64, error) {
	a, b := srcA.desk, srcB.desk
	if a.FirstSeq() == 1 && b.FirstSeq() == 1 && !srcA.fromSnapshot && !srcB.fromSnapshot {
		var ga, gb []byte
		for _, x := range []struct {
			l   journal.Log
			out *[]byte
		}{{a, &ga}, {b, &gb}} {
			err := x.l.ReadFrom(1, func(_ uint64, rec []byte) error {
				*x.out = append([]byte(nil), rec...)
				return errStop
			})
			if err != nil && err != errStop {
				return 0, err
			}
		}
		if !bytes.Equal(ga, gb) {
			fmt.Fprintf(report, "diff: first difference at desk record 1: the genesis records (configurations) differ\n")
			return 0, nil
		}
		cfg, err := node.DeskGenesis(a)
		if err != nil {
			return 0, err
		}
		for _, s := range []*side{sa, sb} {
			if s.desk, err = machine.NewDesk(cfg); err != nil {
				return 0, err
			}
		}
		fmt.Fprintf(report, "diff: from genesis (record 1)\n")
		return 2, nil
	}
	seqA, dataA, okA, err := a.LoadSnapshot()
	if err != nil {
		return 0, err
	}
	seqB, dataB, okB, err := b.LoadSnapshot()
	if err != nil {
		return 0, err
	}
	if !okA || !okB || seqA != seqB {
		return 0, fmt.Errorf("no common starting point: this journal starts at record %d (snapshot %d), the other at record %d (snapshot %d); both need record 1 or snapshots at the same seq",
			a.FirstSeq(), seqA, b.FirstSeq(), seqB)
	}
	for _, x := range []struct {
		s    *side
		data []byte
	}{{sa, dataA}, {sb, dataB}} {
		if x.s.desk, err = machine.Restore(x.data); err != nil {
			return 0, err
		}
	}
	fmt.Fprintf(report, "diff: from the snapshots at seq %d\n", seqA)
	return seqA + 1, nil
}

func (s *side) apply(seq uint64, rec []byte) error {
	env, err := machine.DecodeEnvelope(rec)
	if err != nil {
		return fmt.Errorf("%s: desk record %d: %w", s.name, seq, err)
	}
	s.last = machine.Apply(s.desk, env)
	return nil
}

// outputsAt writes what each side's input produced, as transcripts print it, so that a
// divergence shows in which reply, event or ledger call the two runs parted.
func outputsAt(report io.Writer, sa, sb *side) {
	for _, s := range []*side{sa, sb} {
		fmt.Fprintf(report, "  outputs of %s:\n", s.name)
		if text := machine.DescribeOutputs(s.last); text == "" {
			fmt.Fprintf(report, "    (none)\n")
			continue
		}
		for _, line := range strings.Split(strings.TrimSuffix(machine.DescribeOutputs(s.last), "\n"), "\n") {
			fmt.Fprintf(report, "    %s\n", line)
		}
	}
}

func digests(a, b *side) (string, string, error) {
	da, err := deskDigest(a.desk)
	if err != nil {
		return "", "", err
	}
	db, err := deskDigest(b.desk)
	return da, db, err
}

// describe names a desk record: its kind, sequence number and time.
func describe(rec []byte) string {
	env, err := machine.DecodeEnvelope(rec)
	if err != nil {
		return fmt.Sprintf("undecodable record (%v)", err)
	}
	return fmt.Sprintf("%s, seq %d, at %s", env.Input.Kind(), env.Seq, env.At.UTC().Format(time.RFC3339Nano))
}

// firstDifference compares two ledger journals record by record, from the first record
// both still hold, and returns the first sequence number whose records differ (or that
// only one has), 0 when they are identical; the same input in its binary and its JSON form
// does not differ.
func firstDifference(a, b journal.Log) (uint64, []byte, []byte, error) {
	var errA, errB error
	from := max(a.FirstSeq(), b.FirstSeq())
	nextA, stopA := iter.Pull2(node.Records(a, from, &errA))
	defer stopA()
	nextB, stopB := iter.Pull2(node.Records(b, from, &errB))
	defer stopB()
	for {
		seqA, recA, okA := nextA()
		seqB, recB, okB := nextB()
		if errA != nil || errB != nil {
			return 0, nil, nil, fmt.Errorf("%v %v", errA, errB)
		}
		switch {
		case !okA && !okB:
			return 0, nil, nil, nil
		case !okA:
			return seqB, nil, recB, nil
		case !okB:
			return seqA, recA, nil, nil
		case !sameLedgerRecord(recA, recB):
			return seqA, recA, recB, nil
		}
	}
}

// sameLedgerRecord reports whether two ledger records are equal bytes or hold the same
// input in different forms (a simulator trace shows binary input records as JSON).
func sameLedgerRecord(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ia, errA := node.DecodeLedgerInput(a)
	ib, errB := node.DecodeLedgerInput(b)
	if errA != nil || errB != nil {
		return false
	}
	ba, errA := ia.AppendBinary(nil)
	bb, errB := ib.AppendBinary(nil)
	return errA == nil && errB == nil && bytes.Equal(ba, bb)
}
