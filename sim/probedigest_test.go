package sim

import "testing"

// TestFullProbeCadence: the first fullDigestFirst refusals get the full digest; after them
// one in fullDigestEvery while the desk encodes in fullDigestBytes, and one in
// fullDigestEvery × size ÷ fullDigestBytes beyond. A refusal that spends a challenge gets
// it every time on the small desk, one in size ÷ fullDigestBytes beyond.
func TestFullProbeCadence(t *testing.T) {
	count := func(bytes int64, consumes string) int {
		s := &Sim{deskBytes: bytes}
		n := 0
		for s.probes < 64*fullDigestFirst {
			s.probes++
			if s.fullProbeDue(consumes) {
				n++
			}
		}
		return n
	}
	rest := 63 * fullDigestFirst
	if got, want := count(fullDigestBytes, ""), fullDigestFirst+rest/fullDigestEvery; got != want {
		t.Fatalf("a desk of fullDigestBytes: %d full digests, want %d", got, want)
	}
	if got, want := count(4*fullDigestBytes, ""), fullDigestFirst+rest/(4*fullDigestEvery); got != want {
		t.Fatalf("a desk of 4 × fullDigestBytes: %d full digests, want %d", got, want)
	}
	if got, want := count(fullDigestBytes, "challenge"), 64*fullDigestFirst; got != want {
		t.Fatalf("refusals spending a challenge, a small desk: %d full digests, want every one (%d)", got, want)
	}
	if got, want := count(8*fullDigestBytes, "challenge"), fullDigestFirst+rest/8; got != want {
		t.Fatalf("refusals spending a challenge, a desk of 8 × fullDigestBytes: %d full digests, want %d", got, want)
	}
}
