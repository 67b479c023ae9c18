package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDescribe: -describe prints every replayed desk input and what it produced, as the
// transcripts print them: an input line, its outputs indented; the same trace twice gives
// the same text; -until stops it; it goes alone.
func TestDescribe(t *testing.T) {
	trace := tracesDir + "/mild-plain.jsonl"
	describe := func(args ...string) (string, int, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"-trace", trace, "-describe"}, args...), &out, &errb)
		return out.String(), code, errb.String()
	}
	text, code, stderr := describe("-until", "40")
	if code != exitOK {
		t.Fatalf("status %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "input 2 boot at ") {
		t.Fatalf("first line %q, want the boot input", lines[0])
	}
	inputs, outputs := 0, 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "input "):
			inputs++
		case strings.HasPrefix(l, "  reply "), strings.HasPrefix(l, "  ledger "), strings.HasPrefix(l, "  event "),
			strings.HasPrefix(l, "  bind "), strings.HasPrefix(l, "  next deadline "), strings.HasPrefix(l, "  close "):
			outputs++
		default:
			t.Fatalf("line %q is neither an input nor an output", l)
		}
	}
	if inputs != 39 || outputs == 0 {
		t.Fatalf("%d inputs (want 39: records 2..40) and %d output lines", inputs, outputs)
	}
	last := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "input ") {
			last = l
		}
	}
	if !strings.HasPrefix(last, "input 40 ") {
		t.Fatalf("the last input described is not 40: %q", last)
	}
	if again, _, _ := describe("-until", "40"); again != text {
		t.Fatal("the same trace described twice differs")
	}
	if _, code, _ := describe("-dump"); code != exitError {
		t.Fatalf("-describe with -dump: status %d, want %d", code, exitError)
	}
	// A pruned trace starts at its snapshot; an input before it cannot be described.
	var out, errb bytes.Buffer
	if code := run([]string{"-trace", tracesDir + "/harsh-crashes-pruned.jsonl", "-describe", "-until", "12"}, &out, &errb); code != exitError ||
		!strings.Contains(errb.String(), "covered by the snapshot") {
		t.Fatalf("-until before the snapshot: status %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"-trace", tracesDir + "/harsh-crashes-pruned.jsonl", "-describe"}, &out, &errb); code != exitOK ||
		!strings.HasPrefix(out.String(), "input ") {
		t.Fatalf("a pruned trace from its snapshot: status %d: %.200s %s", code, out.String(), errb.String())
	}
}
