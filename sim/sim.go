package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"math/rand/v2"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// Start is the virtual time every run begins at.
var Start = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// LivenessHorizon is how long the liveness phase runs after the busy phase at the least:
// longer than a usual RFQ (2 minutes here), a quote's lifetime, the trade window
// (validUntil + action lifetime + grace = 11 minutes), the registration lifetime (10
// minutes) and the closed-RFQ retention (10 minutes), with room to spare. An RFQ drawn
// on the TTL bound (max_ttl, an hour) late in the busy phase lives longer: the phase then
// runs until livenessTail past the latest deadline the desk holds when it begins.
const LivenessHorizon = 30 * time.Minute

// livenessTail is how long the liveness phase runs past the latest RFQ deadline, quote
// validity or trade window open when it begins: a trade accepted at that deadline still
// ends (its window is 11 minutes) and its allocations are released.
const livenessTail = 15 * time.Minute

// houseKey is the API key of the desk-signed house taker (configuration, not a secret).
const houseKey = "house-taker-key"

// Sim is one seeded run: the desk process (journal, durability rule, checkpoints,
// snapshots, crashes), the embedded ledger with its own journal and faults, and the actors,
// all driven single-threaded by one event queue on a virtual clock.
type Sim struct {
	k   Knobs
	mix Mix

	rng  *rand.Rand // scheduler tie-breaks
	frng *rand.Rand // faults: latencies, lost answers, crashes, disconnects

	now   time.Time
	q     queue
	seq   uint64
	clock *ledgersim.ManualClock
	// horizon is when the run ends (Run; beginLiveness may push it out).
	horizon time.Time
	// ledgerClock is the ledger's record time: clock, skewed and drifting by the mix.
	ledgerClock *ledgerClock
	// deadlines are the allocateBefore of prepared allocations not yet executed, by
	// prepared id (ledgerclock.go; bounded).
	deadlines map[string]time.Time

	spec    node.LedgerSpec
	cfg     machine.Config
	deskLog *journal.MemLog
	ledLog  *journal.MemLog
	desk    *machine.Desk
	ledger  *ledgeradapter.Adapter
	faults  *faultPlan
	windows [][2]time.Time
	// faultsForced: a test forced a ledger fault (World.Fault) in a run whose profile has
	// none, so a ledger call's answer may be a fault's.
	faultsForced bool

	refPrices map[[2]string]money.Decimal // the reference price of each pair, once divided

	epoch           uint64
	scoreBoot       time.Time // the last restart's time, for the scorecard's coverage (scorecard.go)
	held            []heldOutputs
	deskSyncArmed   bool
	ledgerSyncArmed bool
	ledgerDurable   uint64
	ledgerWaiters   []ledgerWaiter
	resultsInFlight map[string]bool
	tickAt          time.Time
	sinceCheckpoint int
	sinceSnapshot   int
	// checkpointBytes and snapshotBytes are the sizes of the last checkpoint's encoding
	// and of the last snapshots (desk and ledger): they stretch the intervals, see
	// stretched.
	checkpointBytes int
	snapshotBytes   int
	// following is set once the process took its first checkpoint since it started: from
	// then on it checkpoints with marks, as the live loop's follower does (loop/follower.go).
	// markSeq is the mark whose digest is still to come (0: none), markDigest that digest,
	// and markDelay the inputs still to come between them, drawn from mrng.
	following  bool
	markSeq    uint64
	markDigest string
	markDelay  int
	mrng       *rand.Rand

	waiting    map[uint64]*request // desk seq → the request its reply answers
	actors     []*actor
	byParty    map[string]*actor
	makerHints map[string]bool
	nextSocket uint64
	tickets    ticketBook // what the run saw of the stream tickets (streamticket.go)
	maxAcked   uint64     // highest seq whose reply an actor received

	liveness bool
	lost     map[string]bool // command ids whose answer the desk never heard

	takeovers uint64      // crashes that were a standby's takeover (takeover.go)
	standby   *simStandby // the standby the next takeover catches up (takeover.go)

	// ledger bookkeeping for the "never twice" invariants; a crash takes back what it lost
	effects     map[string]string // command id → update id
	prepCmd     map[string]string // prepared id → command id
	settlements map[string]string // settlement id → update id of its settle
	trackUndo   []trackUndo       // changes to the three since the ledger journal's last sync

	// settleTimes is the record time of each settled trade's settle, for telling at the
	// end whether the ledger's deduplication window has passed over it.
	settleTimes map[string]time.Time

	dirtyDesk, dirtyLedger bool
	ledgerSteps            uint64 // steps that changed the ledger
	checkTurn              uint64 // whose reads checkDesk looks at
	deskSteps              uint64 // steps that changed the desk
	// liveTrades are the trades checkDesk watches between its full scans: every trade
	// an accept made, until it is terminal. tradesStale asks for a full scan next (the
	// desk was rebuilt by a recovery).
	liveTrades  []liveTrade
	tradesStale bool
	accepting   map[string]bool // checkDesk's scratch: trades whose accept waits
	orphans     orphanWatch     // the ledger side of the orphan invariant (orphans.go)
	steps       uint64
	failure     *Failure
	audit       audit // the reads audited after actors' reads (lockstep.go)
	stats       Stats
	cov         coverage
	progress    func(Progress)
	busyEnd     func()

	judges     Judges      // how to make and restore the judge (judge.go)
	judge      Judge       // nil: no judge
	judgeSnaps []judgeSnap // the judge beside each desk snapshot kept
	tape       tape        // what a failure's trace needs beyond the durable journals (tape.go)
	finished   bool        // the run reached the end of its liveness phase
	replaying  bool        // a shell of ReplayTrace: no actors, no journals of its own

	// Adversarial parties (adversary.go): how many actors are hostile, the ids they reuse,
	// and the expectation of the hostile input about to be applied.
	advs         int
	probes       int // refusals whose state was compared
	pool         idPool
	nextProbe    *expectation
	failedTrades map[string]bool // trades whose trade.failed the desk emitted (bounded)

	// fp is fingerprint's scratch state (fingerprint_tables.go).
	fp fpScratch
	// deskBytes is the size of the desk's snapshot at the last full digest of a probe
	// (probedigest.go).
	deskBytes int64
	// spendProbes counts the refusals spending a challenge probed past that size.
	spendProbes int
}

// heldOutputs are an input's outputs waiting for the input to be durable.
type heldOutputs struct {
	seq   uint64
	out   machine.Outputs
	reads []func()
}

// ledgerWaiter is a ledger result waiting for the ledger journal to be durable up to seq.
type ledgerWaiter struct {
	seq     uint64
	deliver func()
}

// New builds a run at genesis: journals with their genesis records, the ledger, the desk
// (after its first Boot), and the actors, judged by StandardJudges.
func New(k Knobs) (*Sim, error) {
	j := StandardJudges()
	if k.NoModel {
		j = Judges{}
	}
	return NewJudged(k, j)
}

// NewJudged is New with the judge j makes (none for the zero Judges).
func NewJudged(k Knobs, j Judges) (*Sim, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	root := rand.New(rand.NewPCG(k.Seed, 0x5eed))
	sub := func() uint64 { return root.Uint64() }
	s := &Sim{k: k, now: Start, judges: j, clock: ledgersim.NewManualClock(Start),
		rng: rand.New(rand.NewPCG(sub(), sub())), frng: rand.New(rand.NewPCG(sub(), sub())),
		deskLog: journal.NewMemLog(false), ledLog: journal.NewMemLog(false),
		resultsInFlight: map[string]bool{}, waiting: map[uint64]*request{}, byParty: map[string]*actor{},
		makerHints: map[string]bool{}, lost: map[string]bool{}, accepting: map[string]bool{}, effects: map[string]string{}, settleTimes: map[string]time.Time{},
		prepCmd: map[string]string{}, settlements: map[string]string{}, cov: newCoverage(), orphans: newOrphanWatch(), failedTrades: map[string]bool{},
		stats: Stats{LedgerFailures: map[string]int{}, TradesFailed: map[string]int{}}}
	s.mix = drawMix(k, rand.New(rand.NewPCG(sub(), sub())))
	s.ledgerClock = newLedgerClock(s.clock, s.mix)
	s.faults = &faultPlan{s: s, rng: rand.New(rand.NewPCG(sub(), sub()))}
	s.windows = drawWindows(k, s.mix, rand.New(rand.NewPCG(sub(), sub())))
	ledgerSeed, deskSeed := sub(), sub()
	// Drawn from the desk's seed rather than root, so that the streams root hands out
	// after this (the actors') stay those of runs before marks.
	s.mrng = rand.New(rand.NewPCG(deskSeed, 0x6d61726b))
	if err := s.genesis(ledgerSeed, deskSeed); err != nil {
		return nil, err
	}
	for i := 0; i < k.Makers; i++ {
		s.actors = append(s.actors, newActor(s, len(s.actors), roleMaker, sub()))
	}
	for i := 0; i < k.Takers; i++ {
		s.actors = append(s.actors, newActor(s, len(s.actors), roleTaker, sub()))
	}
	s.actors = append(s.actors, newHouse(s, len(s.actors), sub()))
	s.drawAdversaries(rand.New(rand.NewPCG(sub(), sub())))
	return s, nil
}

// catalog is the instrument catalog of every run.
func catalog() []machine.Instrument {
	return []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("0.05"), RegistryID: "cbtc-registry"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("5000"), RegistryID: "usdcx-registry"},
		{Symbol: "cc", Display: "CC", Decimals: 10, USDPrice: money.MustParse("0.2"), FaucetAmount: money.MustParse("25000"), Native: true, RegistryID: "cc-registry"},
	}
}

// hashKey is what the transport stores of an API key.
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// genesis journals both genesis records in the process's format, builds the ledger and the
// desk, and applies the first Boot.
func (s *Sim) genesis(ledgerSeed, deskSeed uint64) error {
	cat := catalog()
	s.spec = node.LedgerSpec{Network: machine.Testnet, Seed: ledgerSeed, Catalog: cat,
		House: []ledgeradapter.House{{Hint: "house-taker", Role: machine.HouseTaker, KeyHash: hashKey(houseKey),
			Fund: map[string]money.Decimal{"cbtc": money.MustParse("1000"), "usdcx": money.MustParse("100000000"), "cc": money.MustParse("100000000")}}}}
	rec, err := node.EncodeLedgerGenesis(s.spec)
	if err != nil {
		return err
	}
	if _, err := s.ledLog.Append(context.Background(), rec); err != nil {
		return fmt.Errorf("journal the ledger genesis: %w", err)
	}
	s.ledgerDurable = s.ledLog.LastSeq()
	ad, parties, err := s.embedded(s.spec)
	if err != nil {
		return err
	}
	s.ledger = ad
	cfg := machine.DefaultConfig()
	cfg.Seed = deskSeed
	cfg.Instruments = cat
	cfg.FeeTiers = simFeeTiers()
	cfg.FaucetCooldown = 10 * time.Minute
	cfg.StreamRetentionEvents, cfg.StreamRetention = simStreamRetention(deskSeed)
	parties.Apply(&cfg)
	s.cfg = cfg
	rec, err = node.EncodeDeskGenesis(cfg)
	if err != nil {
		return err
	}
	if _, err := s.deskLog.Append(context.Background(), rec); err != nil {
		return fmt.Errorf("journal the desk genesis: %w", err)
	}
	if s.desk, err = machine.NewDesk(cfg); err != nil {
		return err
	}
	if j := s.judges; j.On() {
		if s.judge, err = j.New(cfg); err != nil {
			return fmt.Errorf("make the judge: %w", err)
		}
	}
	s.input(machine.Boot{})
	return nil
}

// embedded builds a ledger from a genesis spec, recording into the ledger journal.
func (s *Sim) embedded(spec node.LedgerSpec) (*ledgeradapter.Adapter, ledgeradapter.Parties, error) {
	return ledgeradapter.NewEmbedded(ledgeradapter.Embedded{
		Network: spec.Network, Seed: spec.Seed, Clock: s.ledgerClock, Catalog: spec.Catalog,
		Reservoir: spec.Reservoir, House: spec.House, FaultPlan: s.faults, Recorder: s.recordLedger,
		SequencingDelay: s.mix.Sequencing,
	})
}

// Knobs returns the run's knobs; Mix the fault mix its seed drew.
func (s *Sim) Knobs() Knobs { return s.k }

// Mix returns the fault mix the seed drew.
func (s *Sim) Mix() Mix { return s.mix }

// OnProgress sets a function called about every 2^16 steps with the run's progress.
func (s *Sim) OnProgress(f func(Progress)) { s.progress = f }

// OnBusyEnd sets a function called once, as the busy phase ends and the liveness phase
// begins (a benchmark times the busy phase with it).
func (s *Sim) OnBusyEnd(f func()) { s.busyEnd = f }

// Run runs the busy phase, then the liveness phase, checking the invariants after every
// step, and returns the outcome.
func (s *Sim) Run() *Result {
	s.start()
	end := Start.Add(s.k.Duration)
	s.at(end, s.beginLiveness)
	s.horizon = end.Add(LivenessHorizon)
	for s.failure == nil {
		e, ok := s.next()
		if !ok || e.at.After(s.horizon) {
			break
		}
		e.fn()
		s.steps++
		s.afterStep()
		if s.progress != nil && s.steps&0xffff == 0 {
			s.progress(s.snapshotProgress())
		}
	}
	if s.failure == nil {
		s.now = s.horizon
		s.finished = true
		s.finalChecks()
	}
	if s.failure == nil && s.k.RequireCoverage {
		if missing := s.cov.missing(s.k, s.mix, 1); len(missing) > 0 {
			s.failf(Coverage, "never reached: %v", missing)
		}
	}
	return s.result()
}

// start sets the run going: every actor's first wake-up and the first scheduled RFQ.
func (s *Sim) start() {
	for _, a := range s.actors {
		a.wakeSoon()
	}
	s.scheduleRFQ()
}

// afterStep runs the invariants the step may have broken, then maybe crashes the desk.
func (s *Sim) afterStep() {
	if s.dirtyLedger && s.failure == nil {
		s.dirtyLedger = false
		s.ledgerSteps++
		if s.ledgerCheckDue() {
			s.stats.Checks++
			s.stats.LedgerWalks++
			if err := s.ledger.L.CheckInvariants(); err != nil {
				s.failf(Safety, "ledger invariant: %v", err)
			}
		}
	}
	deskChanged := s.dirtyDesk
	if s.dirtyDesk && s.failure == nil {
		s.dirtyDesk = false
		s.checkDesk()
	}
	if s.failure == nil {
		s.checkOrphans(deskChanged)
	}
	if s.failure == nil && !s.liveness && s.k.CrashRate > 0 && s.frng.Float64() < s.crashRate() {
		s.crash()
	}
}

// markCrashBoost multiplies the crash rate while a checkpoint mark waits for its digest.
// That window is short (at most half a checkpoint interval of inputs, and checkpoints
// stretch as the state grows: stretched), so at the plain rate a half-hour run of several
// seeds often never crashed in it; a crash there is what the follower's recovery of an
// unanswered mark must get right.
const markCrashBoost = 5

// crashRate is the chance that this step ends in a crash: Knobs.CrashRate, boosted while a
// mark is unanswered. It takes the same one draw either way, so the fault schedule of the
// steps outside that window is unchanged.
func (s *Sim) crashRate() float64 {
	if s.markSeq != 0 {
		return s.k.CrashRate * markCrashBoost
	}
	return s.k.CrashRate
}

// ledgerCheckDue says whether this ledger-changing step gets the full ledger walk
// (CheckInvariants costs time in the ledger's size). With LedgerCheckEvery 1 every such
// step does; with 0 (adaptive) the first 10 do, then every n-th with n growing with the
// ledger's history (n = 1 + steps/10: a walk whenever the history grew by about a tenth),
// which keeps the total cost linear in the history at about 14 walks of its final size.
// The end always walks. A broken ledger
// invariant stays broken, so a later walk still catches it.
// The choice never changes the run itself, only how closely it is watched.
func (s *Sim) ledgerCheckDue() bool {
	every := uint64(s.k.LedgerCheckEvery)
	if every == 0 {
		every = 1 + s.ledgerSteps/10
	}
	return s.ledgerSteps%every == 0
}

// beginLiveness stops every fault and every new activity; what is open must now finish.
func (s *Sim) beginLiveness() {
	s.liveness = true
	s.horizon = maxTime(s.horizon, s.latestOpenDeadline().Add(livenessTail))
	if s.busyEnd != nil {
		s.busyEnd()
	}
	pending := 0
	for id := range s.lost {
		if _, ok := s.desk.Pending[id]; ok {
			pending++
		}
	}
	if pending > 0 {
		// A call whose answer was lost waits for a restart to be issued again: restart once
		// (a supervisor would), so that the liveness phase can finish it.
		s.cov.hit(covLivenessRestart)
		s.crash()
	}
}

// ---- The desk process ----

// input journals an input (not yet durable), applies it and holds its outputs until the
// journal is synced: exactly the loop's rule. It returns the input's sequence number.
func (s *Sim) input(in machine.Input) uint64 {
	seq := s.deskLog.LastSeq() + 1
	env := machine.Envelope{Seq: seq, At: s.now, Input: in}
	rec, err := machine.EncodeEnvelope(env)
	if err != nil {
		s.failf(Safety, "encode %s input: %v", in.Kind(), err)
		return seq
	}
	if p := s.deskLog.AppendAsync(rec); func() uint64 { f, _ := p.Seqs(); return f }() != seq {
		s.failf(Safety, "desk journal assigned another sequence number than %d", seq)
	}
	s.tapeDesk(seq, rec)
	obs := s.observeBefore(env)
	pr := s.probeBefore(env)
	race := s.codRaceBefore(in)
	out, panicked := safeApply(s.desk, env)
	if panicked != "" {
		s.failf(Safety, "machine.Apply panicked on %s input %d: %s", in.Kind(), seq, panicked)
		return seq
	}
	s.observeAfter(env, out, obs)
	s.judgeApply(env, out)
	typedReplays(out) // the judge saw the replayed frames' bytes; the rest of the sim wants values
	s.codCoverage(in, out, race)
	s.resumeCoverage(in, out)
	s.ticketCoverage(seq, in, out)
	s.probeAfter(pr, env, out)
	s.stats.Inputs++
	s.held = append(s.held, heldOutputs{seq: seq, out: out})
	s.dirtyDesk = true
	s.armTick(out.NextDeadline)
	s.armDeskSync()
	if !machine.IsCheckpoint(in) {
		s.sinceCheckpoint++
		s.sinceSnapshot++
		s.checkpoint()
	}
	return seq
}

// checkpoint journals the checkpoint records due after an input, as the live loop does:
// the first checkpoint since the process started as a Checkpoint carrying the digest, the
// later ones as a CheckpointMark whose CheckpointDigest comes a few inputs later (the live
// loop's follower answers when it reaches the mark; a crash in between loses the digest).
// The digest is always the live desk's own, so a journal record that loses part of an
// input fails the recovery that replays it.
func (s *Sim) checkpoint() {
	if s.markSeq != 0 {
		if s.markDelay--; s.markDelay < 0 {
			mark := s.markSeq
			s.markSeq = 0
			s.input(machine.CheckpointDigest{Mark: mark, Digest: s.markDigest})
		}
		return
	}
	if s.sinceCheckpoint < s.stretched(s.k.CheckpointEvery, s.checkpointBytes) {
		return
	}
	s.sinceCheckpoint = 0
	h := &countingHash{h: sha256.New()}
	if err := s.desk.WriteSnapshot(h); err != nil {
		s.failf(Safety, "desk digest: %v", err)
		return
	}
	s.checkpointBytes = h.n
	digest := hex.EncodeToString(h.h.Sum(nil))
	if !s.following {
		s.following = true
		s.input(machine.Checkpoint{Digest: digest})
		return
	}
	// The live follower answers once it caught up and encoded its state: up to half an
	// interval later here, so that crashes fall between a mark and its digest too.
	s.markDigest, s.markDelay = digest, s.mrng.IntN(s.k.CheckpointEvery/2+1)
	s.markSeq = s.input(machine.CheckpointMark{})
}

// stretched is the interval, in inputs, until the next checkpoint or snapshot: the
// configured one, or longer when the last one encoded more than Knobs.StateBytesPerInput
// per input of it. The desk keeps thousands of finished trades and the ledger up to its
// retained updates, so the state grows for hours before it levels off; an interval counted
// in inputs alone would make a long run's checkpoints cost more and more per input. The
// sizes are the run's own, so the schedule stays deterministic.
func (s *Sim) stretched(every, lastBytes int) int {
	if s.k.StateBytesPerInput <= 0 {
		return every
	}
	return max(every, lastBytes/s.k.StateBytesPerInput)
}

// countingHash is a hash that counts the bytes written to it.
type countingHash struct {
	h hash.Hash
	n int
}

// Write hashes p.
func (c *countingHash) Write(p []byte) (int, error) {
	c.n += len(p)
	return c.h.Write(p)
}

// safeApply applies an input, turning a panic into a reported failure.
func safeApply(d *machine.Desk, env machine.Envelope) (out machine.Outputs, panicked string) {
	defer func() {
		if p := recover(); p != nil {
			panicked = fmt.Sprint(p)
		}
	}()
	return machine.Apply(d, env), ""
}

// armTick schedules a Tick at the desk's next deadline, unless an earlier one is armed.
func (s *Sim) armTick(t time.Time) {
	if t.IsZero() || (!s.tickAt.IsZero() && !t.Before(s.tickAt)) {
		return
	}
	s.tickAt = t
	e := s.epoch
	late := time.Duration(0)
	if s.mix.TickLate > 0 && !s.liveness {
		late = time.Duration(s.frng.Int64N(int64(s.mix.TickLate)))
	}
	s.at(t.Add(late), func() {
		if e != s.epoch || !s.tickAt.Equal(t) {
			return
		}
		s.tickAt = time.Time{}
		s.input(machine.Tick{})
	})
}

// armDeskSync schedules the next group commit of the desk journal.
func (s *Sim) armDeskSync() { s.armSync(&s.deskSyncArmed, s.syncDesk) }

// armSync schedules a journal's next group commit, sync, unless *armed says one is
// scheduled already; a crash in between (a new epoch) cancels it.
func (s *Sim) armSync(armed *bool, sync func()) {
	if *armed {
		return
	}
	*armed = true
	e := s.epoch
	s.after(s.jitter(s.mix.SyncEvery), func() {
		if e == s.epoch {
			sync()
		}
	})
}

// syncDesk makes the desk journal durable and releases every held output; then maybe
// saves a snapshot and prunes.
func (s *Sim) syncDesk() {
	s.deskSyncArmed = false
	if plantedBuild && plantedOn("lost-commit") {
		s.after(s.mix.SyncEvery, s.syncDeskLog) // planted bug: outputs leave before the commit
	} else {
		s.syncDeskLog()
	}
	s.stats.DeskSyncs++
	held := s.held
	s.held = nil
	for _, h := range held {
		s.release(h)
	}
	if s.sinceSnapshot >= s.stretched(s.k.SnapshotEvery, s.snapshotBytes) {
		s.sinceSnapshot = 0
		state, err := s.desk.EncodeSnapshot()
		if err != nil {
			s.failf(Safety, "encode desk snapshot: %v", err)
			return
		}
		s.snapshotBytes = len(state)
		if err := s.deskLog.SaveSnapshot(s.deskLog.LastSeq(), state); err != nil {
			s.failf(Safety, "save desk snapshot: %v", err)
			return
		}
		s.judgeSnapshot(s.deskLog.LastSeq())
		if err := s.deskLog.Prune(); err != nil {
			s.failf(Safety, "prune desk journal: %v", err)
		}
		s.tapePruned()
		s.stats.Snapshots++
		s.snapshotLedger()
	}
}

// snapshotLedger snapshots the ledger into its journal and prunes behind it, as the process
// does alongside every desk snapshot, so that a recovery replays only what came after.
// The ledger journal is group-committed first: a snapshot covers durable records only.
func (s *Sim) snapshotLedger() {
	if s.ledLog.LastSeq() > s.ledgerDurable {
		s.syncLedger()
	}
	state, seq, err := s.ledger.L.SnapshotWith(s.ledLog.LastSeq)
	if err != nil {
		s.failf(Safety, "snapshot the ledger: %v", err)
		return
	}
	if prev, _, ok, _ := s.ledLog.LoadSnapshot(); ok && prev >= seq {
		return // nothing new since the last one
	}
	data, err := node.EncodeLedgerSnapshot(s.spec, state)
	if err != nil {
		s.failf(Safety, "encode the ledger snapshot: %v", err)
		return
	}
	s.snapshotBytes += len(data)
	if err := s.ledLog.SaveSnapshot(seq, data); err != nil {
		s.failf(Safety, "save the ledger snapshot: %v", err)
		return
	}
	if err := s.ledLog.Prune(); err != nil {
		s.failf(Safety, "prune the ledger journal: %v", err)
	}
	s.stats.LedgerSnapshots++
}

// release lets a durable input's outputs leave: replies and events to the actors (after a
// network latency), socket closes, ledger calls to the ledger, reads that waited.
func (s *Sim) release(h heldOutputs) {
	e := s.epoch
	for _, rep := range h.out.Replies {
		r := s.waiting[rep.Seq]
		if r == nil {
			continue
		}
		delete(s.waiting, rep.Seq)
		rep := rep
		s.after(s.netLatency(), func() { r.deliver(rep) })
	}
	for _, b := range h.out.Bindings {
		if a := s.socketOwner(b.Socket); a != nil && a.party != b.Party {
			s.failf(Safety, "socket %d of %s bound to party %s", b.Socket, a.party, b.Party)
		}
	}
	for _, ev := range h.out.Events {
		ev := ev
		a := s.byParty[ev.Party]
		if a == nil {
			continue
		}
		s.after(s.netLatency(), func() {
			if e == s.epoch && a.socket != 0 && (ev.Socket == 0 || ev.Socket == a.socket) {
				s.stats.Events++
				a.onEvent(ev)
			}
		})
	}
	for _, c := range h.out.Closes {
		c := c
		s.after(s.netLatency(), func() {
			if e != s.epoch {
				return
			}
			if a := s.socketOwner(c.Socket); a != nil {
				a.socketClosed(c.Code)
			}
		})
	}
	for _, c := range h.out.Calls {
		s.issue(c)
	}
	for _, r := range h.reads {
		r()
	}
}

// socketOwner finds the actor holding a socket.
func (s *Sim) socketOwner(id uint64) *actor {
	for _, a := range s.actors {
		if a.socket == id {
			return a
		}
	}
	return nil
}

// ---- The ledger side ----

// issue sends a ledger call: it executes after a latency, and its result comes back to
// the desk after another, once the ledger journal holds what the call did.
func (s *Sim) issue(c machine.LedgerCall) {
	s.stats.LedgerCalls++
	e := s.epoch
	s.after(s.ledgerLatency(), func() {
		if e != s.epoch {
			// Sent by the process that crashed: the request may still reach an external
			// ledger and take effect; the desk will never hear, and re-issues it.
			if s.frng.IntN(2) == 0 {
				return
			}
			s.cov.hit(covStaleCallExecuted)
		}
		s.execLedger(c, e)
	})
}

// execLedger runs one call against the ledger now.
func (s *Sim) execLedger(c machine.LedgerCall, e uint64) {
	before := s.ledger.L.Offset()
	free := s.freeBeforeSpend(c)                      // coinsel.go
	s.beginLedger(c, func(res machine.LedgerResult) { // inflight.go
		s.judgeSelection(c, free, res)
		s.ledgerAnswered(c, e, before, res)
	})
}

// ledgerAnswered takes the ledger's answer to a call sent at epoch e when the ledger's end
// was before: at once, or when an execute in flight committed.
func (s *Sim) ledgerAnswered(c machine.LedgerCall, e uint64, before int64, res machine.LedgerResult) {
	s.dirtyLedger = true
	if e != s.epoch {
		// A call of a crashed process that lands late: the desk may already have taken a
		// refusal of its re-issue for the answer, and never hears what this one made. Only
		// an update this very call made counts (one the re-issue made, which the desk
		// heard of, stays an ordinary allocation).
		s.orphans.unheardCall(s.ledger.L, c, before)
	}
	if res.Failure != nil {
		s.stats.LedgerFailures[res.Failure.Category]++
	}
	s.noteDeadlineSkew(c, res)
	s.noteInputContention(res)
	s.noteAnsweredFromCompletions(res, before)
	if e != s.epoch {
		return
	}
	if res.Failure == nil && !s.liveness && s.mix.LostAnswer > 0 && s.frng.Float64() < s.mix.LostAnswer {
		s.lost[c.CommandID] = true
		s.cov.hit(covLostAnswer)
		return
	}
	last := s.ledLog.LastSeq()
	id := c.CommandID
	s.resultsInFlight[id] = res.Failure == nil
	deliver := func() {
		s.after(s.ledgerLatency(), func() {
			if e != s.epoch {
				return
			}
			delete(s.resultsInFlight, id)
			s.input(res)
		})
	}
	if last <= s.ledgerDurable {
		deliver()
		return
	}
	s.ledgerWaiters = append(s.ledgerWaiters, ledgerWaiter{seq: last, deliver: deliver})
	s.armLedgerSync()
}

// recordLedger is the ledger's Recorder: it journals every ledger input (not yet durable).
func (s *Sim) recordLedger(in ledgersim.Input) {
	rec, err := node.EncodeLedgerInput(in)
	if err != nil {
		s.failf(Safety, "encode ledger input: %v", err)
		return
	}
	s.ledLog.AppendAsync(rec)
	s.tapeLedger(s.ledLog.LastSeq(), rec)
	s.trackLedger(in)
	s.orphans.noteLedgerInput(in)
	s.armLedgerSync()
}

// armLedgerSync schedules the next group commit of the ledger journal.
func (s *Sim) armLedgerSync() { s.armSync(&s.ledgerSyncArmed, s.syncLedger) }

// syncLedger makes the ledger journal durable and lets the results that waited go.
func (s *Sim) syncLedger() {
	s.ledgerSyncArmed = false
	s.ledLog.Sync()
	s.tapeLedgerSynced()
	s.ledgerDurable = s.ledLog.LastSeq()
	s.trackUndo = s.trackUndo[:0] // every tracked record is durable now
	waiters := s.ledgerWaiters
	s.ledgerWaiters = nil
	for _, w := range waiters {
		if w.seq <= s.ledgerDurable {
			w.deliver()
		} else {
			s.ledgerWaiters = append(s.ledgerWaiters, w)
		}
	}
}

// trackLedger checks, as the ledger records them, that no command id takes effect twice
// and no settlement settles twice.
func (s *Sim) trackLedger(in ledgersim.Input) {
	var cmd string
	switch in.Kind {
	case ledgersim.InputPrepare:
		s.setTracked(s.prepCmd, in.PreparedID, in.CommandID)
		return
	case ledgersim.InputExecute:
		cmd = s.prepCmd[in.PreparedID]
	case ledgersim.InputSubmit:
		cmd = in.CommandID
		if in.Command != nil {
			if c, err := in.Command.Command(); err == nil {
				if st, ok := c.(ledgersim.Settle); ok {
					if prev, dup := s.settlements[st.Settlement.ID]; dup && prev != in.UpdateID {
						s.failf(Safety, "settlement %s settled twice (updates %s and %s)", st.Settlement.ID, prev, in.UpdateID)
					}
					s.setTracked(s.settlements, st.Settlement.ID, in.UpdateID)
				}
			}
		}
	default:
		return
	}
	if cmd == "" {
		return
	}
	if prev, dup := s.effects[cmd]; dup && prev != in.UpdateID {
		s.failf(Safety, "command %s took effect twice (updates %s and %s)", cmd, prev, in.UpdateID)
	}
	s.setTracked(s.effects, cmd, in.UpdateID)
}

// ---- Crash and recovery ----

// crash drops the desk's and the ledger's memory, loses both journals' non-durable tails,
// and recovers exactly as the process does: ledger from its newest snapshot (or genesis) +
// journal, desk from the newest snapshot + journal, then a Boot.
func (s *Sim) crash() {
	s.stats.Crashes++
	zombie := s.beginTakeover()
	pre := s.desk
	for _, ok := range s.resultsInFlight {
		if ok {
			s.cov.hit(covCrashBeforeAck)
			break
		}
	}
	if len(s.held) > 0 {
		s.cov.hit(covCrashWithHeldOutputs)
	}
	s.epoch++
	s.deskLog.Crash()
	s.ledLog.Crash()
	s.tapeCrashed()
	s.held, s.ledgerWaiters = nil, nil
	if s.markSeq != 0 {
		s.cov.hit(covMarkUnanswered)
	}
	s.following, s.markSeq = false, 0 // the follower is gone with the process
	s.waiting = map[uint64]*request{}
	s.resultsInFlight = map[string]bool{}
	s.deskSyncArmed, s.ledgerSyncArmed = false, false
	s.tickAt = time.Time{}
	// The restarted process counts inputs from its newest snapshot and checkpoint, not from
	// its start: a desk that crashes more often than it snapshots would otherwise never
	// snapshot again, and every recovery would replay the whole history.
	s.ledgerDurable = s.ledLog.LastSeq()
	for _, a := range s.actors {
		a.crashed()
	}
	s.tradesStale = true
	s.orphans.stale, s.orphans.updates = true, s.orphans.updates[:0]
	if err := s.recover(); err != nil {
		s.failf(CrashRecovery, "recover after crash %d: %v", s.stats.Crashes, err)
		return
	}
	s.checkAcknowledged(pre)
	if s.failure != nil {
		return
	}
	// The restored ledger was checked against its digest by Restore; the full invariant
	// walk comes at the adaptive cadence of every other ledger change.
	s.dirtyLedger = true
	if zombie != nil {
		s.checkStandby()
	}
	s.scoreRestarted(s.now)
	reserved := s.reservedCount() // coinsel.go
	s.input(machine.Boot{})
	s.noteReservationsFreed(reserved)
	s.zombieWrites(zombie)
	s.prepareStandby()
}

// recover rebuilds the ledger and the desk from their journals with node's functions.
func (s *Sim) recover() error {
	spec, err := node.LedgerGenesis(s.ledLog)
	if err != nil {
		return err
	}
	ad, _, err := s.embedded(spec)
	if err != nil {
		return err
	}
	l, lrec, err := node.RecoverLedger(s.ledLog, ad.L)
	if err != nil {
		return fmt.Errorf("recover the ledger: %w", err)
	}
	if lrec.SnapshotSeq > 0 {
		s.cov.hit(covRecoverLedgerSnapshot)
	}
	ad.L = l
	s.ledger = ad
	var mismatch uint64
	desk, rec, err := node.ReplayDesk(s.deskLog, true, func(st node.Step) bool {
		if st.Checkpoint && !st.Verified && mismatch == 0 {
			mismatch = st.Seq
		}
		if _, ok := st.Envelope.Input.(machine.CheckpointDigest); ok && st.Verified {
			s.cov.hit(covMarkVerified)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("replay the desk: %w", err)
	}
	if mismatch != 0 {
		return fmt.Errorf("the replayed desk differs from the digest journaled at checkpoint %d (a determinism bug)", mismatch)
	}
	if rec.SnapshotSeq > 0 {
		s.cov.hit(covRecoverFromSnapshot)
	}
	if rec.Checkpoints > 0 {
		s.cov.hit(covCheckpointVerified)
	}
	s.desk = desk
	s.undoLedgerTracking()
	return s.recoverJudge(rec.SnapshotSeq)
}

// trackUndo is how to take back one change of the ledger bookkeeping maps.
type trackUndo struct {
	m         map[string]string
	key, prev string
	had       bool
}

// setTracked changes one bookkeeping entry, remembering how to take it back while the
// ledger record that caused it is not durable.
func (s *Sim) setTracked(m map[string]string, key, val string) {
	prev, had := m[key]
	s.trackUndo = append(s.trackUndo, trackUndo{m: m, key: key, prev: prev, had: had})
	m[key] = val
}

// undoLedgerTracking takes back the bookkeeping of the ledger records a crash lost (their
// effects may legitimately happen again): every change since the last group commit of the
// ledger journal, newest first. The cost is in what changed, not in the history.
func (s *Sim) undoLedgerTracking() {
	for i := len(s.trackUndo) - 1; i >= 0; i-- {
		u := s.trackUndo[i]
		if u.had {
			u.m[u.key] = u.prev
		} else {
			delete(u.m, u.key)
		}
	}
	s.trackUndo = s.trackUndo[:0]
}

// ---- Randomness of the environment ----

// jitter returns a duration in [d/2, 3d/2), at least a microsecond.
func (s *Sim) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Microsecond
	}
	return d/2 + time.Duration(s.frng.Int64N(int64(d))) + time.Microsecond
}

// netLatency is a client↔desk hop.
func (s *Sim) netLatency() time.Duration {
	return time.Millisecond + time.Duration(s.frng.Int64N(int64(20*time.Millisecond)))
}

// ledgerLatency is one desk↔ledger hop: the profile's base, sometimes a tail.
func (s *Sim) ledgerLatency() time.Duration {
	d := s.jitter(s.mix.LatencyBase)
	if !s.liveness && s.mix.TailProb > 0 && s.mix.TailMax > 0 && s.frng.Float64() < s.mix.TailProb {
		d += time.Duration(s.frng.Int64N(int64(s.mix.TailMax)))
		s.cov.hit(covLatencyTail)
	}
	return d
}

// faultPlan is the ledger's FaultPlan: the seed's mix of rejections and unknown outcomes,
// and the unavailability windows; nothing once the liveness phase began.
type faultPlan struct {
	s   *Sim
	rng *rand.Rand
}

// Decide draws one call's fault.
func (f *faultPlan) Decide(ledgersim.CallInfo) ledgersim.Fault {
	s := f.s
	if s.liveness {
		return ledgersim.Fault{}
	}
	for _, w := range s.windows {
		if !s.now.Before(w[0]) && s.now.Before(w[1]) {
			s.cov.hit(covUnavailableWindow)
			return ledgersim.Fault{Reject: ledgersim.CategoryUnavailable}
		}
	}
	m := s.mix
	u, lose := f.rng.Float64(), f.rng.Float64()
	var out ledgersim.Fault
	switch {
	case u < m.Contention:
		out.Reject = ledgersim.CategoryContention
	case u < m.Contention+m.Unavailable:
		out.Reject = ledgersim.CategoryUnavailable
	case u < m.Contention+m.Unavailable+m.Rejected:
		out.Reject = ledgersim.CategoryRejected
	case u < m.Contention+m.Unavailable+m.Rejected+m.Internal:
		out.Reject = ledgersim.CategoryInternal
	}
	if out.Reject == ledgersim.CategoryNone && lose < m.UnknownOutcome {
		out.LoseAnswer = true
		s.cov.hit(covUnknownOutcome)
	}
	if out.Reject != ledgersim.CategoryNone {
		s.cov.hit(covInjectedRejection)
	}
	return out
}

// drawWindows draws the ledger's unavailability windows over the busy phase.
func drawWindows(k Knobs, m Mix, rng *rand.Rand) [][2]time.Time {
	if m.Windows <= 0 || m.WindowMax <= 0 {
		return nil
	}
	expected := m.Windows * k.Duration.Hours()
	n := int(expected)
	if rng.Float64() < expected-float64(n) {
		n++
	}
	var out [][2]time.Time
	for i := 0; i < n && i < 1000; i++ {
		from := Start.Add(time.Duration(rng.Int64N(int64(k.Duration))))
		out = append(out, [2]time.Time{from, from.Add(time.Second + time.Duration(rng.Int64N(int64(m.WindowMax))))})
	}
	return out
}

// latestOpenDeadline is the latest RFQ deadline, quote validity or trade window the desk
// holds open (the maximum: the maps' order decides nothing).
func (s *Sim) latestOpenDeadline() time.Time {
	var latest time.Time
	d := s.desk
	for _, r := range d.RFQs {
		if r.State == machine.RFQOpen {
			latest = maxTime(latest, r.Deadline)
		}
	}
	for _, q := range d.Quotes {
		if q.State == machine.QuoteFunding || q.State == machine.QuoteLive {
			latest = maxTime(latest, q.ValidUntil)
		}
	}
	for _, t := range d.Trades {
		if t.State == machine.TradeAllocating || t.State == machine.TradeSettling {
			latest = maxTime(latest, t.WindowEnds)
		}
	}
	return latest
}

// maxTime is the later of two times.
func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
