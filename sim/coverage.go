package sim

import (
	"fmt"
	"io"
	"slices"
)

// Coverage situations: how often a run reached each interesting interleaving.
const (
	covQuoteExpiredWhileLanding   = "quote expired while its allocations were landing"
	covAllocLandedAfterQuoteEnded = "an allocation landed after its quote ended"
	covAcceptRacesReplacement     = "an accept raced the maker's replacement"
	covReplacementWaitsCancel     = "a replacement whose cancels had to land first"
	covActionExpiredWhileSettling = "a trade action expired while its trade was settling"
	covCrashBeforeAck             = "crash between a ledger commit and its acknowledgement"
	covZombieFenced               = "a standby took over and the old process's late writes were refused"
	covStandbyCurrent             = "a standby that followed the journals held the state they recover to"
	covStandbyRebuilt             = "a standby started again from the newest snapshots after the leader pruned"
	covCrashWithHeldOutputs       = "crash with outputs held for durability"
	covLostAnswer                 = "a ledger answer lost (the effect happened)"
	covLostAnswerReissued         = "a lost answer re-issued after boot"
	covReissueDeduplicated        = "a re-issued call the ledger had already done"
	covStaleCallExecuted          = "a call of a crashed process executed anyway"
	covRecoverFromSnapshot        = "recovery from a snapshot"
	covRecoverLedgerSnapshot      = "recovery of the ledger from its snapshot"
	covCheckpointVerified         = "a checkpoint verified during recovery"
	covMarkVerified               = "a checkpoint mark verified by its digest during recovery"
	covMarkUnanswered             = "a crash between a checkpoint mark and its digest"
	covLivenessRestart            = "a restart to re-issue lost answers before the liveness phase"
	covUnknownOutcome             = "an unknown outcome answered for a call that took effect"
	covInjectedRejection          = "an injected ledger rejection"
	covUnavailableWindow          = "a call during a ledger unavailability window"
	covLatencyTail                = "a ledger latency tail"
	covStreamDrop                 = "a stream dropped by the network"
	covRotatedSocketClosed        = "a socket closed with 4401 after a key rotation"
	covKeyRotated                 = "a key rotation"
	covRegistrationExpired        = "a registration completed too late (410)"
	covPartialSign                = "a party signed only part of its actions"
	covQuoteDeleted               = "a quote deleted"
	covRFQCancelled               = "an RFQ cancelled by its taker"
	covWithdrawBlocked            = "a withdrawal blocked by a settling trade"
	covInsufficientFunds          = "an accept refused for insufficient funds"
	covAcceptFromStream           = "an accept of a quote the taker knew from its stream"
	covTradeSettled               = "a trade settled"
	covTradeFailed                = "a trade failed"
	covOrphanInDoubt              = "an allocation left behind by a call whose answer the desk lost"
	covFaucetCooldown             = "a faucet draw during its cooldown (all skipped for cooldown)"
	covFaucetInfoCooldown         = "GET /faucet during a cooldown"
	covAdvExpiredBeforeTick       = "adversary: execute an expired action before the Tick that ends it"
)

// allCoverage lists every situation in report order.
var allCoverage = []string{
	covQuoteExpiredWhileLanding, covAllocLandedAfterQuoteEnded, covAcceptRacesReplacement,
	covReplacementWaitsCancel, covActionExpiredWhileSettling, covCrashBeforeAck, covCrashWithHeldOutputs,
	covLostAnswer, covLostAnswerReissued, covReissueDeduplicated, covStaleCallExecuted, covRecoverFromSnapshot,
	covRecoverLedgerSnapshot,
	covCheckpointVerified, covMarkVerified, covMarkUnanswered, covLivenessRestart, covUnknownOutcome, covInjectedRejection, covUnavailableWindow,
	covLatencyTail, covStreamDrop, covRotatedSocketClosed, covKeyRotated, covRegistrationExpired, covPartialSign,
	covQuoteDeleted, covRFQCancelled, covWithdrawBlocked, covInsufficientFunds, covAcceptFromStream, covTradeSettled,
	covTradeFailed, covOrphanInDoubt, covFaucetCooldown, covFaucetInfoCooldown, covAdvExpiredBeforeTick,
	covSkewLedgerAhead, covSkewLedgerBehind, covInputLocked, covInputInactive, covFromCompletions,
	covZombieFenced, covStandbyCurrent, covStandbyRebuilt,
	covLockedByFlight, covDupInFlight, covFlightLost,
	covQuoteFundsReserved, covReservationFreedByRestart, covOutsideSpend,
}

// coverage counts situations by name.
type coverage map[string]int

func newCoverage() coverage { return coverage{} }

func (c coverage) hit(name string) { c[name]++ }

// missing lists the goals a long run with these knobs must reach but did not. Goals that
// depend on a fault the seed's mix switched off are not required, nor, of a single seed
// (runs is 1), the races a seed meets only now and then.
func (c coverage) missing(k Knobs, m Mix, runs int) []string {
	goals := []string{covAcceptRacesReplacement, covReplacementWaitsCancel, covQuoteExpiredWhileLanding,
		covActionExpiredWhileSettling, covTradeSettled, covTradeFailed, covKeyRotated, covRotatedSocketClosed,
		covQuoteDeleted, covRFQCancelled, covWithdrawBlocked, covFaucetCooldown, covFaucetInfoCooldown}
	if k.CrashRate > 0 {
		goals = append(goals, covCrashBeforeAck, covCrashWithHeldOutputs, covReissueDeduplicated, covCheckpointVerified,
			covMarkVerified)
		if runs > 1 {
			goals = append(goals, covMarkUnanswered) // in one 1-hour harsh run of two
		}
	}
	if m.LostAnswer > 0 {
		goals = append(goals, covLostAnswer, covLostAnswerReissued)
	}
	if k.Adversaries > 0 {
		goals = append(goals, advGoals(runs)...)
		if runs > 1 && m.TickLate > 0 {
			goals = append(goals, covAdvExpiredBeforeTick)
		}
	}
	if m.Contention+m.Unavailable+m.Rejected+m.Internal > 0 {
		goals = append(goals, covInjectedRejection)
	}
	goals = append(goals, boundaryGoals(m.Boundary)...)
	goals = append(goals, massCancelGoals(k, runs)...)
	goals = append(goals, declineGoals(k, runs)...)
	goals = append(goals, codGoals(k, m, runs)...)
	goals = append(goals, skewGoals(m, runs)...)
	goals = append(goals, contentionGoals(m, runs)...)
	goals = append(goals, flightGoals(k, m, runs)...)
	goals = append(goals, scoreGoals(k, runs)...)
	goals = append(goals, protectionGoals(k, runs)...)
	goals = append(goals, resumeGoals(k, m, runs)...)
	goals = append(goals, idemGoals(k, runs)...)
	goals = append(goals, ticketGoals(runs)...)
	goals = append(goals, coinSelGoals(k, runs)...)
	var out []string
	for _, g := range goals {
		if c[g] == 0 {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// MissingOver lists the goals that a set of runs with the same knobs never reached
// together: the coverage of a long run made of many seeds. A goal tied to a fault is
// required when any run's mix enabled that fault.
func MissingOver(results []*Result) []string {
	if len(results) == 0 {
		return nil
	}
	total := coverage{}
	var mix Mix
	for _, r := range results {
		for name, n := range r.Coverage {
			total[name] += n
		}
		mix.LostAnswer = max(mix.LostAnswer, r.Mix.LostAnswer)
		mix.Contention = max(mix.Contention, r.Mix.Contention)
		mix.UnknownOutcome = max(mix.UnknownOutcome, r.Mix.UnknownOutcome)
		mix.Unavailable = max(mix.Unavailable, r.Mix.Unavailable)
		mix.Rejected = max(mix.Rejected, r.Mix.Rejected)
		mix.Internal = max(mix.Internal, r.Mix.Internal)
		mix.Disconnect = max(mix.Disconnect, r.Mix.Disconnect)
		mix.TickLate = max(mix.TickLate, r.Mix.TickLate)
		mix.LedgerSkew = max(mix.LedgerSkew, r.Mix.LedgerSkew.Abs())
		mix.LedgerDriftPPM = max(mix.LedgerDriftPPM, r.Mix.LedgerDriftPPM, -r.Mix.LedgerDriftPPM)
		mix.Boundary = maxBoundaryMix(mix.Boundary, r.Mix.Boundary)
		mix.Sequencing = max(mix.Sequencing, r.Mix.Sequencing)
	}
	return total.missing(results[0].Knobs, mix, len(results))
}

// write prints the counters in report order.
func (c coverage) write(w io.Writer) {
	for _, name := range slices.Concat(allCoverage, advCoverage, massCancelCoverage, declineCoverage, codCoverage, scoreCoverage, protectionCoverage, resumeCoverage, idemCoverage, ticketCoverage) {
		fmt.Fprintf(w, "  %8d  %s\n", c[name], name)
	}
	for _, name := range boundaryGoals(BoundaryMix{Ticket: 1, TTL: 1, Price: 1, Validity: 1, Limit: 1, Batch: 1}) {
		fmt.Fprintf(w, "  %8d  %s\n", c[name], name)
	}
}
