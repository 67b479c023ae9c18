package machine

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// DescribeOutputs renders everything one Apply produced as stable, readable text, one line
// per effect, in the spirit of raft's DescribeReady: replies, socket bindings, events by
// party, ledger calls, socket closes and the next deadline. Transcripts, the simulator's
// traces and cmd/replay print it, so a failing seed reads like a transcript. Empty outputs
// render as the empty string.
func DescribeOutputs(out Outputs) string {
	var b strings.Builder
	for _, r := range out.Replies {
		if r.Err != nil {
			code := r.Err.Code
			if code == "" {
				code = "-"
			}
			fmt.Fprintf(&b, "reply %d: %d %s %q\n", r.Seq, r.Status, code, r.Err.Message)
			continue
		}
		fmt.Fprintf(&b, "reply %d: %d %s\n", r.Seq, r.Status, describeJSON(r.Body))
	}
	for _, s := range out.Bindings {
		fmt.Fprintf(&b, "bind socket %d to %s\n", s.Socket, s.Party)
	}
	for _, e := range out.Events {
		to := e.Party
		if e.Socket != 0 {
			to = fmt.Sprintf("%s socket %d", e.Party, e.Socket)
		}
		if e.Seq != 0 {
			to += fmt.Sprintf(" seq %d", e.Seq)
		}
		fmt.Fprintf(&b, "event %s: %s %s\n", to, e.Type, describeJSON(e.Payload))
	}
	for _, c := range out.Calls {
		fmt.Fprintf(&b, "ledger %s %s", c.Op, c.CommandID)
		if c.ActAs != "" {
			fmt.Fprintf(&b, " as %s", c.ActAs)
		}
		switch {
		case c.Command != nil:
			fmt.Fprintf(&b, " %s", describeJSON(c.Command))
		case c.PreparedID != "":
			fmt.Fprintf(&b, " prepared %s", c.PreparedID)
		case c.Hint != "":
			fmt.Fprintf(&b, " hint %s", c.Hint)
		case c.PartyID != "":
			fmt.Fprintf(&b, " party %s (%d signatures)", c.PartyID, len(c.Signatures))
		}
		if c.Since != 0 {
			fmt.Fprintf(&b, " since %d", c.Since)
		}
		if len(c.Reserved) > 0 {
			fmt.Fprintf(&b, " reserved %s", describeJSON(c.Reserved))
		}
		b.WriteByte('\n')
	}
	for _, c := range out.Closes {
		fmt.Fprintf(&b, "close socket %d: %d %q\n", c.Socket, c.Code, c.Reason)
	}
	if !out.NextDeadline.IsZero() {
		fmt.Fprintf(&b, "next deadline %s\n", out.NextDeadline.UTC().Format(time.RFC3339Nano))
	}
	return b.String()
}

// DescribeInput renders one journaled input as a line: its sequence number, kind, time and
// fields as compact JSON (a key appears only as its hash, as the journal holds it).
func DescribeInput(env Envelope) string {
	kind := "<none>"
	if env.Input != nil {
		kind = env.Input.Kind()
	}
	return fmt.Sprintf("input %d %s at %s %s", env.Seq, kind, env.At.UTC().Format(time.RFC3339Nano), describeJSON(env.Input))
}

// DescribeStep renders an input and what applying it produced, as transcripts print them:
// the input's line, then each output line indented by two spaces.
func DescribeStep(env Envelope, out Outputs) string {
	var b strings.Builder
	b.WriteString(DescribeInput(env))
	b.WriteByte('\n')
	for _, line := range strings.Split(strings.TrimSuffix(DescribeOutputs(out), "\n"), "\n") {
		if line != "" {
			b.WriteString("  ")
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// describeJSON is the compact JSON of v, or the marshalling error in its place: a
// description never fails.
func describeJSON(v any) string {
	if v == nil {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}
