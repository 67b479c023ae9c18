package sim

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestStateMachineDesk drives the whole desk with rapid: the actions are actors' API calls
// (World.Do), virtual time advancing by a drawn duration, a ledger fault forced for a
// while, and crashes of the desk process; the invariant action ("") walks the ledger's
// invariants and the desk's deadlines on top of the checks the World runs after every
// step; at the end the liveness phase must finish everything. A failure shrinks to a
// minimal sequence of actions and prints how to reproduce it (RAPID_SEED, or the fail
// file under testdata/rapid). The budget is RAPID_CHECKS checks of about RAPID_STEPS
// actions each (make sim runs 2000 checks).
func TestStateMachineDesk(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := DefaultKnobs()
		k.Seed = rapid.Uint64().Draw(t, "seed")
		k.Faults = rapid.SampledFrom([]string{"none", "mild", "harsh"}).Draw(t, "faults")
		k.Makers = rapid.IntRange(1, 3).Draw(t, "makers")
		k.Takers = rapid.IntRange(0, 2).Draw(t, "takers")
		k.Duration, k.CrashRate = 10*time.Minute, 0
		// Frequent checkpoints and snapshots, so that crashes recover from snapshots and
		// verify digests; every ledger change gets the full invariant walk.
		k.CheckpointEvery, k.SnapshotEvery, k.LedgerCheckEvery = 7, 25, 1
		w, err := NewWorld(k)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("knobs: %s", k.Command())
		// Actors that sign by their habits make trades flow in short sequences; without,
		// every signature is an action rapid chose.
		w.AutoSign(rapid.Bool().Draw(t, "autoSign"))
		// Most runs start with every actor registered, funded and streaming, so that the
		// short sequences rapid draws reach quotes and trades; shrinking may drop it.
		if rapid.Bool().Draw(t, "onboard") {
			onboard(w)
		}
		actor := rapid.IntRange(0, w.Actors()-1)
		pick := rapid.IntRange(0, 7)
		// Durations from network hops to past every lifetime (an RFQ lives up to 2 minutes).
		advance := rapid.OneOf(
			rapid.Int64Range(int64(time.Millisecond), int64(time.Second)),
			rapid.Int64Range(int64(time.Second), int64(30*time.Second)),
			rapid.Int64Range(int64(30*time.Second), int64(5*time.Minute)),
		)
		actions := map[string]func(*rapid.T){
			"": func(t *rapid.T) {
				if err := w.Check(); err != nil {
					t.Fatalf("%v\nknobs: %s", err, k.Command())
				}
			},
			"advance": func(t *rapid.T) {
				d := time.Duration(advance.Draw(t, "by"))
				t.Logf("advance %s", d)
				w.Advance(d)
			},
			"fault": func(t *rapid.T) {
				c := rapid.SampledFrom(FaultCategories()).Draw(t, "category")
				d := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(20*time.Second)).Draw(t, "for"))
				t.Logf("ledger fault %s for %s", c, d)
				if err := w.Fault(c, d); err != nil {
					t.Fatal(err)
				}
			},
			"crash": func(t *rapid.T) {
				t.Logf("crash")
				w.Crash()
			},
		}
		for _, c := range AllCalls() {
			actions[string(c)] = func(t *rapid.T) {
				a, p := actor.Draw(t, "actor"), pick.Draw(t, "pick")
				t.Logf("actor %d: %s (pick %d): made %v", a, c, p, w.Do(c, a, p))
			}
		}
		t.Repeat(actions)
		if err := w.Finish(); err != nil {
			t.Fatalf("liveness phase: %v\nknobs: %s", err, k.Command())
		}
	})
}

// quietWorld is a World of the seed with makers and takers, no faults and no crashes.
func quietWorld(t *testing.T, seed uint64, makers, takers int) *World {
	t.Helper()
	k := DefaultKnobs()
	k.Seed, k.Faults, k.Makers, k.Takers, k.CrashRate = seed, "none", makers, takers, 0
	w, err := NewWorld(k)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// onboard registers every actor, funds it and opens its stream, advancing time until done.
func onboard(w *World) {
	for i := range w.Actors() {
		w.Do(CallRegister, i, 0)
	}
	w.Advance(5 * time.Second)
	for i := range w.Actors() {
		w.Do(CallFund, i, 0)
		w.Do(CallOpenStream, i, 0)
	}
	w.Advance(6 * time.Second)
	for i := range w.Actors() {
		w.Do(CallSignAll, i, 0) // accept the faucet's deposits
	}
	w.Advance(3 * time.Second)
}

// TestWorldStepsLikeARun: a World driven through a scripted sequence registers, funds,
// trades to settlement and ends clean, and the same script gives the same digests.
func TestWorldStepsLikeARun(t *testing.T) {
	script := func() (*World, string) {
		w := quietWorld(t, 4, 2, 1)
		onboard(w)
		taker := w.Actors() - 2 // the registered taker; the house taker is last
		for round := range 6 {
			w.Do(CallCreateRFQ, taker, 0)
			w.Advance(time.Second)
			for m := range 2 {
				w.Do(CallQuote, m, round)
			}
			w.Advance(time.Second)
			for m := range 2 {
				w.Do(CallSignAll, m, 0)
			}
			w.Advance(2 * time.Second)
			w.Do(CallAccept, taker, round)
			w.Advance(2 * time.Second)
			for i := range w.Actors() {
				w.Do(CallSignAll, i, 0)
			}
			w.Advance(5 * time.Second)
			if round == 3 {
				w.Crash()
			}
			if err := w.Check(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		r := w.s.result()
		return w, r.DeskDigest + r.LedgerDigest
	}
	w, a := script()
	st := w.Stats()
	if st.Registrations < 3 || st.RFQs == 0 || st.Accepts == 0 || st.TradesSettled == 0 || st.Crashes != 1 {
		t.Fatalf("the script did not reach a settled trade and a crash: %+v", st)
	}
	if _, b := script(); a != b {
		t.Fatal("the same script gave different digests")
	}
}
