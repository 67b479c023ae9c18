package machine

import (
	"crypto/ed25519"
	"fmt"
	"testing"
)

// TestPendingRegistrationsCapped: at the desk-wide cap register/start is 429 and changes
// nothing; a completed or expired registration frees its place; abandoned registrations
// are forgotten after two lifetimes and never reached the ledger beyond the onboarding
// (no party is allocated without complete).
func TestPendingRegistrationsCapped(t *testing.T) {
	const limit = 3
	cfg := testConfig()
	cfg.MaxPendingRegistrations = limit
	h := newHarnessWith(t, cfg)
	var calls []LedgerCall
	h.auto = false
	apply := func(in Input) uint64 { // h.apply, recording the ledger calls it leads to
		seq := h.apply(in)
		calls = append(calls, h.drain()...)
		return seq
	}
	key := func(i int) ed25519.PublicKey {
		pub, _, _ := ed25519.GenerateKey(deterministicReader(fmt.Sprint("abandoned", i)))
		return pub
	}
	starts := make([]RegisterStartDTO, 0, limit)
	for i := range limit {
		starts = append(starts, h.ok(apply(RegisterStart{DisplayName: "Bot", PublicKey: key(i)}), 200).(RegisterStartDTO))
	}
	before := h.digest()
	h.refused(apply(RegisterStart{DisplayName: "Bot", PublicKey: key(limit)}), 429, "")
	if h.digest() != before {
		t.Error("a refused register/start changed the desk")
	}
	// A registration that completes frees its place.
	_, priv, _ := ed25519.GenerateKey(deterministicReader(fmt.Sprint("abandoned", 0)))
	sigs := make([][]byte, len(starts[0].Topology))
	for i, tx := range starts[0].Topology {
		sigs[i] = ed25519.Sign(priv, tx.Hash)
	}
	h.ok(apply(RegisterComplete{RegistrationID: starts[0].RegistrationID, Signatures: sigs, NewKeyHash: keyHash("mk_done")}), 200)
	h.ok(apply(RegisterStart{DisplayName: "Bot", PublicKey: key(limit)}), 200)
	h.refused(apply(RegisterStart{DisplayName: "Bot", PublicKey: key(limit + 1)}), 429, "")
	// Expired registrations free theirs.
	h.now = h.now.Add(cfg.RegistrationLifetime)
	apply(Tick{})
	if n := h.d.pendingRegistrations(); n != 0 {
		t.Fatalf("%d registrations pending after their lifetime", n)
	}
	h.ok(apply(RegisterStart{DisplayName: "Bot", PublicKey: key(limit + 1)}), 200)
	// Abandoned, they are forgotten: only the completed party remains of them all.
	for range 4 {
		h.now = h.now.Add(cfg.RegistrationLifetime)
		apply(Tick{})
	}
	if n := len(h.d.Registrations); n != 0 {
		t.Errorf("%d registrations still held after they were abandoned", n)
	}
	completes := 0
	for _, c := range calls {
		switch c.Op {
		case OpOnboard:
		case OpCompleteOnboarding:
			completes++
		}
	}
	if completes != 1 {
		t.Errorf("%d onboardings completed on the ledger, want only the one completed", completes)
	}
}

// TestNoCapWhenZero: a desk journaled before the cap existed (0) replays uncapped.
func TestNoCapWhenZero(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingRegistrations = 0
	h := newHarnessWith(t, cfg)
	for i := range DefaultMaxPendingRegistrations + 1 {
		pub, _, _ := ed25519.GenerateKey(deterministicReader(fmt.Sprint("k", i)))
		h.ok(h.apply(RegisterStart{DisplayName: "Bot", PublicKey: pub}), 200)
	}
}
