package sim

import (
	"crypto/sha256"

	"github.com/deskco/rfqdesk/machine"
)

// The full digest of a refusal's probe encodes the whole desk twice (before and after),
// so its cost grows with the desk's state: at every fullDigestEvery-th refusal it was a
// quarter of a 3-hour run and kept growing. Like the ledger's full walks
// (ledgerCheckDue), its cadence now stretches with the state's size: while the state
// encodes in at most fullDigestBytes it is unchanged (a 10-minute run of cmd/mutate's
// scenario ends near 0.8 MB; the standard scenario's desk passes 2 MB in its first ten
// simulated minutes and 8 MB by the fortieth); beyond, a full digest comes every fullDigestEvery × size ÷
// fullDigestBytes refusals, so the full digests cost about the same per refusal however
// large the desk grows. Every refusal still gets the fingerprint, which covers every
// table's size, the counters, the caller's tables and every object the refusal names; the
// first fullDigestFirst refusals and every one that spends a challenge still get the
// full digest. The choice never changes the run, only how closely it is watched.
const fullDigestBytes = 2 << 20

// fullProbeDue says whether the probe of this refusal (s.probes counted) compares the
// desk's full digest.
func (s *Sim) fullProbeDue(consumes string) bool {
	if consumes != "" || s.probes <= fullDigestFirst {
		return true
	}
	every := fullDigestEvery
	if s.deskBytes > fullDigestBytes {
		every = int(int64(fullDigestEvery) * s.deskBytes / fullDigestBytes)
	}
	return s.probes%every == 0
}

// deskDigest is d.Digest (the SHA-256 of its snapshot), noting the snapshot's size in
// s.deskBytes for fullProbeDue.
func (s *Sim) deskDigest(d *machine.Desk) ([32]byte, error) {
	c := countingHash{h: sha256.New()} // sim.go
	if err := d.WriteSnapshot(&c); err != nil {
		return [32]byte{}, err
	}
	s.deskBytes = int64(c.n)
	var sum [32]byte
	c.h.Sum(sum[:0])
	return sum, nil
}
