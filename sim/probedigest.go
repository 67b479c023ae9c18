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
// scenario ends near 0.8 MB; the standard scenario's desk passes 2 MB within its first
// quarter of a simulated hour and 8 MB by the fortieth minute); beyond, a full digest
// comes every fullDigestEvery × size ÷ fullDigestBytes refusals, so the full digests cost
// about the same per refusal however large the desk grows. Every refusal still gets the fingerprint, which covers every
// table's size, the counters, the caller's tables and every object the refusal names; the
// first fullDigestFirst refusals still get the full digest. The choice never changes the
// run, only how closely it is watched.
const fullDigestBytes = 2 << 20

// fullProbeDue says whether the probe of this refusal (s.probes counted) compares the
// desk's full digest. A refusal that spends a challenge (consumes) costs three full
// encodings (its expected state is a restored copy with the challenge spent) and gets them
// every time while the desk is small; beyond fullDigestBytes, one in size ÷ fullDigestBytes
// of them does (counted apart, in s.spendProbes), the others compare the fingerprint taken
// as if the challenge were spent.
func (s *Sim) fullProbeDue(consumes string) bool {
	if s.probes <= fullDigestFirst {
		return true
	}
	if s.deskBytes <= fullDigestBytes {
		return consumes != "" || s.probes%fullDigestEvery == 0
	}
	if consumes != "" {
		s.spendProbes++
		return s.spendProbes%int(s.deskBytes/fullDigestBytes) == 0
	}
	return s.probes%int(int64(fullDigestEvery)*s.deskBytes/fullDigestBytes) == 0
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
