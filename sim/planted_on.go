//go:build planted

package sim

import "github.com/deskco/rfqdesk/internal/planted"

// plantedBuild is true only in a build with the "planted" tag, which exists to show that
// the simulator has teeth: each planted bug, switched on, must be caught by a run within
// a fixed budget of seeds (planted_test.go). Never ship such a build.
const plantedBuild = true

// PlantedBugs names every planted bug, with where it lives and what it breaks.
var PlantedBugs = []struct{ Name, Where, What string }{
	{"no-fee", "machine (sendSettle)", "the fee is not charged: a trade's settle moves no fee leg"},
	{"cancel-keeps-lock", "ledgersim (releaseAllocation)", "a cancelled allocation is archived but its holding stays locked"},
	{"expired-executes", "machine (expireAction, checkExecutable)", "an action past its deadline is not expired and still executes when signed"},
	{"replace-funds-first", "machine (submitQuote)", "a replacement quote funds before the replaced quote's allocations are cancelled"},
	{"mine-shows-funding", "machine (rfqMine)", "GET /rfq/mine shows the taker a quote whose allocations have not landed: only a read shows it"},
	{"lost-commit", "sim (syncDesk)", "the desk releases a group commit's outputs before it is durable: a crash loses the last group commit"},
}

// OrphanBugs are planted bugs only the orphan invariant catches; they run without crashes
// (orphans_planted_test.go), since a run with crashes counts unexplained allocations
// rather than failing (docs/simulation.md).
var OrphanBugs = []struct{ Name, Where, What string }{
	{"forget-cancel", "machine (cancelLanded)", "an ended quote's landed allocations are marked cancelled but no cancel is sent: they stay on the ledger"},
	{"cancel-gives-up", "machine (allocationCancelled)", "a cancel the ledger could not run (unavailable, internal, contention, rejected, unknown) is not retried: the allocation stays"},
}

// Plant switches on one planted bug by name in every package ("" switches all off).
func Plant(name string) { planted.Plant(name) }

// plantedOn reports whether the planted bug name is switched on.
func plantedOn(name string) bool { return planted.On(name) }
