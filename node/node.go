// Package node assembles a whole desk from a data directory: the embedded ledger and the
// desk core, each recovered from its own journal (genesis record, newest snapshot, the
// records after it), the loop that owns the desk, and the durability rule between them —
// an input's effects leave only once the input is durable, and a ledger call's result is
// handed back only once the ledger inputs it caused are durable.
//
// cmd/desk runs a node on disk; tests and the simulator run the same code, on disk or in
// memory.
package node

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/loop"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// Clock is the time source of both the ledger and the loop.
type Clock interface{ Now() time.Time }

// LedgerSpec is the data of the embedded ledger's genesis. It is journaled as the ledger
// journal's first record, so a restart rebuilds exactly the same genesis.
type LedgerSpec struct {
	Network   machine.Network          `json:"network"`
	Seed      uint64                   `json:"seed"`
	Catalog   []machine.Instrument     `json:"catalog"`
	Reservoir map[string]money.Decimal `json:"reservoir,omitempty"`
	House     []ledgeradapter.House    `json:"house,omitempty"`
	// DedupWindow is the embedded ledger's deduplication window (0: the ledger's default,
	// ledgersim.DefaultDedupWindow). The desk re-issues its in-flight ledger calls at
	// every start and relies on the ledger to deduplicate them.
	DedupWindow time.Duration `json:"dedupWindow,omitempty"`
}

// DefaultCheckpointEvery and DefaultCheckpointBytesPerInput are the default checkpoint
// schedule: every 10,000 inputs, or every state size / 256 inputs when that is longer (a
// 20 MB state checkpoints every 80,000 inputs). Encoding and hashing the state costs
// about 6 ns a byte, so checkpoints cost at most about 1.5 µs per input (applying one
// costs about 3 µs) instead of growing with the desk's retained history, on the loop and
// again when a replay verifies them; a recovery replays at most one interval past its
// snapshot, under half a second.
const (
	DefaultCheckpointEvery         = 10000
	DefaultCheckpointBytesPerInput = 256
)

// DefaultWorkers is the default number of ledger workers (see Options.Workers).
const DefaultWorkers = 64

// Options configure a node.
type Options struct {
	// Dir is the data directory; empty keeps everything in memory (lost on Close).
	Dir string
	// Desk is the desk configuration; its party fields are filled in from the ledger's
	// genesis. A zero Seed (here and in Ledger) is drawn from crypto/rand at the first
	// start and journaled with the genesis, so ids stay unpredictable across desks.
	Desk   machine.Config
	Ledger LedgerSpec
	Clock  Clock
	Sink   loop.Sink
	Logger *slog.Logger
	// CheckpointEvery is how many inputs pass between checkpoints and snapshots. The
	// default (0) is 10,000, stretched for a large state so that checkpoints encode at
	// most DefaultCheckpointBytesPerInput bytes per input (loop.Config); a positive value
	// is kept exactly.
	CheckpointEvery int
	// Sync is the journals' durability mode (SyncAlways by default).
	Sync journal.SyncMode
	// Workers run ledger calls (default DefaultWorkers). With journals of another backend
	// (PostgreSQL) each waits, after its call, for the ledger journal's group commit that
	// makes the call's records durable, so the number bounds how many calls one fsync can
	// release: with 8, a desk on a disk whose fsync takes 5 ms could not finish more than
	// 1,600 ledger calls a second, about 130 trades. With a desk journal on disk the desk
	// journal keeps that order instead (ordered.go) and a worker is free once the ledger
	// answered.
	Workers int
	// FaultPlan and Sleep inject ledger faults (simulation).
	FaultPlan ledgersim.FaultPlan
	Sleep     func(time.Duration)
	// Retries and Backoff govern the adapter's retries of transient ledger failures.
	Retries int
	Backoff func(n int)
	// KeepConfig opens existing data with the configuration in force whatever Desk and
	// Ledger say (a tool or test inspecting a data directory); without it, a start applies
	// their differences from what is in force, or refuses them (reconfigure.go).
	KeepConfig bool
	// Observer, if set, hears of ledger calls and journal fsyncs (metrics).
	Observer Observer
	// Journals, if set, opens both journals instead of files under Dir (journals.go).
	Journals Journals
	// Standby, if set, is taken over: its journals (Journals is not used) and its
	// current ledger and desk, instead of a recovery (standby.go).
	Standby *Standby
}

// Node is a running desk.
type Node struct {
	// Loop is the desk loop the transports talk to.
	Loop *loop.Loop
	// Ledger is the embedded ledger's adapter (queries may use its L directly).
	Ledger *ledgeradapter.Adapter
	// Config is the desk configuration in force (the journaled one on a restart).
	Config machine.Config
	// Recovered describes what the start found.
	Recovered Recovery
	// Changed is what this start changed of the configuration in force (reconfigure.go).
	Changed ConfigChange

	deskLog, ledgerLog journal.Log
	// drawnDeskSeed and drawnLedgerSeed are set when Open drew the seeds (none configured).
	drawnDeskSeed, drawnLedgerSeed bool
	keepConfig                     bool // Options.KeepConfig
	lastLedger                     atomic.Pointer[journal.Pending]
	log                            *slog.Logger
	observer                       Observer
	// ledgerSpec is the ledger's genesis, carried by each ledger snapshot; ledgerSnapSeq
	// is the record the newest ledger snapshot covers (ledger_snapshot.go).
	ledgerSpec    LedgerSpec
	ledgerSnapSeq atomic.Uint64
	// givenReservoir is the reservoir funding configured at this start (Options.Ledger):
	// it funds an instrument the configuration adds (instrument_listing.go).
	givenReservoir map[string]money.Decimal
	// ledgerFollower takes the ledger snapshots after the first (ledger_follower.go).
	ledgerFollower atomic.Pointer[ledgerFollower]
	// LedgerSnapshots counts the ledger snapshots saved, by where they were encoded.
	LedgerSnapshots LedgerSnapshotStats
	// feeSweep consolidates the fee party's holdings (fee_sweep.go); sweepMu lets one
	// sweep run at a time.
	feeSweep *feeSweeper
	sweepMu  sync.Mutex
}

// LedgerSnapshotStats counts ledger snapshots: encoded from the live ledger (every ledger
// call waits meanwhile) or from its follower (nothing waits), and the follower's failures.
type LedgerSnapshotStats struct {
	FromLedger, FromFollower, FollowerFailures atomic.Uint64
	// LastSeq is the ledger journal record the newest snapshot covers.
	LastSeq atomic.Uint64
	// FollowerLag is how many records waited for the follower after the last ledger
	// record; FollowerStalls counts the records that found its queue full, and
	// FollowerStallNanos how long the ledger call that wrote them waited for room (with
	// the ledger's lock held: every ledger call waited).
	FollowerLag        atomic.Int64
	FollowerStalls     atomic.Uint64
	FollowerStallNanos atomic.Uint64
}

// Recovery describes a start.
type Recovery struct {
	Fresh       bool   // nothing was on disk
	SnapshotSeq uint64 // the desk snapshot restored, 0 for none
	DeskInputs  uint64 // desk records replayed after it
	// LedgerSnapshotSeq is the ledger snapshot restored (the ledger journal record it
	// covers), 0 for none.
	LedgerSnapshotSeq uint64
	LedgerInputs      uint64 // ledger records replayed (after the ledger snapshot)
	Checkpoints       int    // checkpoints whose digest was verified
	DigestMismatch    int    // checkpoints whose digest differed (a determinism bug)
	// SnapshotBytes is the size of the desk snapshot restored, 0 for none.
	SnapshotBytes int
	// FromStandby is set when the desk and the ledger are a standby's, which followed the
	// journals (Options.Standby): DeskInputs then counts what it applied since its own
	// recovery.
	FromStandby bool
}

// genesisRecord is the first record of each journal.
type genesisRecord struct {
	Kind   string          `json:"kind"` // "desk-genesis" or "ledger-genesis"
	Config *machine.Config `json:"config,omitempty"`
	// LedgerVersion is a ledger genesis's LedgerGenesisVersion (absent: version 1).
	LedgerVersion int         `json:"ledgerVersion,omitempty"`
	Ledger        *LedgerSpec `json:"ledger,omitempty"`
}

// Open starts a node: it creates or recovers the ledger and the desk and starts the loop
// (whose first input is a Boot).
func Open(opts Options) (*Node, error) {
	if opts.Clock == nil || opts.Sink == nil {
		return nil, errors.New("node: a clock and a sink are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	bytesPerInput := 0
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery, bytesPerInput = DefaultCheckpointEvery, DefaultCheckpointBytesPerInput
	}
	n := &Node{log: opts.Logger, keepConfig: opts.KeepConfig, observer: opts.Observer}
	if err := n.openLogs(opts); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			n.closeLogs()
		}
	}()
	var err error
	if n.drawnDeskSeed, n.drawnLedgerSeed, err = drawSeeds(&opts); err != nil {
		return nil, err
	}
	spec, err := n.ledgerGenesis(opts.Ledger)
	if err != nil {
		return nil, err
	}
	n.ledgerSpec = spec
	n.givenReservoir = opts.Ledger.Reservoir
	adapter, parties, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{
		Network: spec.Network, Seed: spec.Seed, Clock: opts.Clock, Catalog: spec.Catalog,
		Reservoir: spec.Reservoir, House: spec.House, FaultPlan: opts.FaultPlan, Sleep: opts.Sleep,
		Recorder: n.recordLedger, DedupWindow: spec.DedupWindow,
	})
	if err != nil {
		return nil, err
	}
	adapter.Retries, adapter.Backoff = opts.Retries, opts.Backoff
	n.Ledger = adapter
	if err := n.replayLedger(opts.Standby); err != nil {
		return nil, err
	}
	cfg := opts.Desk
	parties.Apply(&cfg)
	desk, err := n.recoverDesk(cfg, opts.Standby)
	if err != nil {
		return nil, err
	}
	if n.drawnDeskSeed {
		cfg.Seed = desk.Cfg.Seed // a drawn seed is not a change
	}
	var change *machine.Reconfigure
	var deltas ConfigChange
	if !opts.KeepConfig {
		if change, deltas, err = n.planReconfigure(desk.Cfg, cfg); err != nil {
			return nil, err
		}
	}
	n.Config = desk.Cfg
	lc := loop.Config{
		Desk: desk, Ledger: durableLedger{n}, Clock: opts.Clock, Sink: opts.Sink,
		Workers: opts.Workers, Logger: opts.Logger, CheckpointEvery: opts.CheckpointEvery,
		CheckpointBytesPerInput: bytesPerInput,
		// Count from the snapshot on disk, not from this start (issue 18, F3).
		SinceCheckpoint: int(min(n.Recovered.DeskInputs, 1<<31)),
		CheckpointBytes: n.Recovered.SnapshotBytes,
	}
	if n.deskLog != nil {
		lc.Journal = n.deskLog
		lc.Snapshot = n.saveSnapshot
	}
	l, err := loop.New(lc)
	if err != nil {
		return nil, err
	}
	n.Loop = l
	l.Start()
	if change != nil {
		if err := n.reconfigure(*change, deltas); err != nil {
			_ = l.Stop(context.Background())
			return nil, err
		}
	}
	n.startFeeSweep()
	ok = true
	return n, nil
}

func (n *Node) openLogs(opts Options) error {
	if opts.Standby != nil {
		return opts.Standby.takeOver(context.Background(), n)
	}
	if opts.Journals != nil {
		return n.openSharedLogs(context.Background(), opts.Journals)
	}
	if opts.Dir == "" {
		n.Recovered.Fresh = true
		return nil
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	jo := journal.Options{Sync: opts.Sync, Logger: opts.Logger}
	ledgerLog, err := journal.OpenDir(filepath.Join(opts.Dir, "ledger"), withSyncObserver(jo, opts.Observer, "ledger"))
	if err != nil {
		return fmt.Errorf("open the ledger journal: %w", err)
	}
	deskLog, err := journal.OpenDir(filepath.Join(opts.Dir, "desk"), withSyncObserver(jo, opts.Observer, "desk"))
	if err != nil {
		_ = ledgerLog.Close()
		return fmt.Errorf("open the desk journal: %w", err)
	}
	n.ledgerLog, n.deskLog = ledgerLog, deskLog
	n.Recovered.Fresh = ledgerLog.LastSeq() == 0 && deskLog.LastSeq() == 0
	return nil
}

func (n *Node) closeLogs() {
	for _, l := range []journal.Log{n.deskLog, n.ledgerLog} {
		if l != nil {
			if err := l.Close(); err != nil {
				n.log.Error("close journal", "err", err)
			}
		}
	}
}

// ledgerGenesis journals the ledger's genesis on a fresh start, or reads the journaled one.
func (n *Node) ledgerGenesis(spec LedgerSpec) (LedgerSpec, error) {
	if n.ledgerLog == nil {
		return spec, nil
	}
	if n.ledgerLog.LastSeq() == 0 {
		rec, err := ledgerGenesisRecord(spec)
		if err != nil {
			return spec, err
		}
		if _, err := n.ledgerLog.Append(context.Background(), rec); err != nil {
			return spec, fmt.Errorf("journal ledger genesis: %w", err)
		}
		return spec, nil
	}
	// Record 1, or the copy in the newest ledger snapshot once record 1 is pruned.
	journaled, err := readLedgerGenesis(n.ledgerLog)
	if err != nil {
		return spec, err
	}
	if journaled.DedupWindow == 0 && spec.DedupWindow == ledgersim.DefaultDedupWindow {
		spec.DedupWindow = 0 // journaled before the window was: the same default
	}
	if !n.keepConfig {
		if err := checkLedgerSpec(spec, journaled, n.drawnLedgerSeed); err != nil {
			return spec, err
		}
	}
	return journaled, nil
}

// readFirst decodes the journal's record 1.
func readFirst(l journal.Log, v any) error {
	stop := errors.New("stop")
	err := l.ReadFrom(1, func(_ uint64, rec []byte) error {
		if err := json.Unmarshal(rec, v); err != nil {
			return err
		}
		return stop
	})
	if errors.Is(err, stop) {
		return nil
	}
	if err == nil {
		return errors.New("the journal is empty")
	}
	return err
}

// drawSeeds replaces a zero seed with a random one. On a restart the journaled genesis
// wins anyway, and a drawn seed is not reported as a change (see warnIfChanged).
func drawSeeds(opts *Options) (deskDrawn, ledgerDrawn bool, err error) {
	draw := func(seed *uint64) (bool, error) {
		if *seed != 0 {
			return false, nil
		}
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return false, fmt.Errorf("draw a seed: %w", err)
		}
		*seed = binary.BigEndian.Uint64(b[:]) | 1
		return true, nil
	}
	if deskDrawn, err = draw(&opts.Desk.Seed); err != nil {
		return false, false, err
	}
	ledgerDrawn, err = draw(&opts.Ledger.Seed)
	return deskDrawn, ledgerDrawn, err
}

// replayLedger recovers the ledger: the newest ledger snapshot, if any, replaces the
// genesis ledger, then the journaled inputs after it are replayed (ledger_snapshot.go).
func (n *Node) replayLedger(sb *Standby) error {
	if n.ledgerLog == nil {
		return nil
	}
	var l *ledgersim.Ledger
	var rec LedgerRecovery
	var err error
	if sb != nil {
		if l, rec, err = sb.warmLedger(n); err != nil {
			return err
		}
	}
	if l == nil {
		if l, rec, err = RecoverLedger(n.ledgerLog, n.Ledger.L); err != nil {
			return err
		}
	}
	n.Ledger.L = l
	n.ledgerSnapSeq.Store(rec.SnapshotSeq)
	n.Recovered.LedgerSnapshotSeq, n.Recovered.LedgerInputs = rec.SnapshotSeq, rec.Inputs
	return nil
}

// decodeLedgerInput reads a ledger journal record after genesis, in either form
// (ledgersim.DecodeInput: binary, or the JSON that earlier builds wrote).
func decodeLedgerInput(raw []byte) (ledgersim.Input, error) {
	return ledgersim.DecodeInput(raw)
}

// recordLedger journals one ledger input in its binary form (ledgersim.Input.AppendBinary);
// it runs under the ledger's lock, in apply order.
func (n *Node) recordLedger(in ledgersim.Input) {
	if n.ledgerLog == nil {
		return
	}
	rec, err := in.AppendBinary(nil)
	if err != nil {
		n.log.Error("encode ledger input", "err", err)
		return
	}
	p := n.ledgerLog.AppendAsync(rec)
	n.lastLedger.Store(p)
	if f := n.ledgerFollower.Load(); f != nil {
		seq, _ := p.Seqs()
		it := ledgerFollowRecord{seq: seq, rec: rec}
		select {
		case f.feed <- it:
		default:
			start := time.Now()
			f.feed <- it
			n.LedgerSnapshots.FollowerStalls.Add(1)
			n.LedgerSnapshots.FollowerStallNanos.Add(uint64(time.Since(start)))
		}
		n.LedgerSnapshots.FollowerLag.Store(int64(len(f.feed)))
	}
}

// recoverDesk builds the desk: fresh (journaling its genesis), or from the newest
// snapshot and the records after it.
func (n *Node) recoverDesk(cfg machine.Config, sb *Standby) (*machine.Desk, error) {
	if n.deskLog == nil {
		return machine.NewDesk(cfg)
	}
	if sb != nil && n.deskLog.LastSeq() > 0 {
		desk, rec, err := sb.warmDesk()
		if err != nil {
			return nil, err
		}
		if desk != nil {
			rec.LedgerInputs, rec.LedgerSnapshotSeq, rec.Fresh = n.Recovered.LedgerInputs, n.Recovered.LedgerSnapshotSeq, n.Recovered.Fresh
			rec.FromStandby = true
			n.Recovered = rec
			return desk, nil
		}
	}
	if n.deskLog.LastSeq() == 0 {
		rec, err := json.Marshal(genesisRecord{Kind: "desk-genesis", Config: &cfg})
		if err != nil {
			return nil, fmt.Errorf("encode desk genesis: %w", err)
		}
		if _, err := n.deskLog.Append(context.Background(), rec); err != nil {
			return nil, fmt.Errorf("journal desk genesis: %w", err)
		}
		return machine.NewDesk(cfg)
	}
	desk, rec, err := ReplayDesk(n.deskLog, true, func(s Step) bool {
		if s.Checkpoint && !s.Verified {
			n.log.Error("replayed desk state differs from the journaled digest", "seq", s.Seq)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	rec.LedgerInputs, rec.LedgerSnapshotSeq, rec.Fresh = n.Recovered.LedgerInputs, n.Recovered.LedgerSnapshotSeq, n.Recovered.Fresh
	n.Recovered = rec
	return desk, nil
}

// saveSnapshot stores a desk snapshot and prunes what no restart needs any more; the
// ledger is snapshotted (and its journal pruned) alongside, in ledger_snapshot.go.
func (n *Node) saveSnapshot(seq uint64, state []byte) {
	defer n.saveLedgerSnapshot()
	if err := n.deskLog.SaveSnapshot(seq, state); err != nil {
		n.log.Error("save desk snapshot", "seq", seq, "err", err)
		return
	}
	if err := n.deskLog.Prune(); err != nil {
		n.log.Warn("prune the desk journal", "err", err)
	}
}

// Close stops the loop (letting applied inputs become durable and their outputs leave)
// and closes the journals.
func (n *Node) Close(ctx context.Context) error {
	n.stopFeeSweep()
	err := n.Loop.Stop(ctx)
	n.replaceLedgerFollower(nil)
	n.closeLogs()
	return err
}

// durableLedger answers a ledger call only once the ledger inputs it caused are durable.
type durableLedger struct{ n *Node }

func (d durableLedger) Do(ctx context.Context, call machine.LedgerCall) machine.LedgerResult {
	start := time.Now()
	res := d.do(ctx, call)
	d.observe(call, res, start)
	return res
}

// observe reports a ledger call to the observer, if any.
func (d durableLedger) observe(call machine.LedgerCall, res machine.LedgerResult, start time.Time) {
	if o := d.n.observer; o != nil {
		failure := ""
		if res.Failure != nil {
			failure = res.Failure.Category
		}
		o.LedgerCall(call.Op, time.Since(start), failure)
	}
}

func (d durableLedger) do(ctx context.Context, call machine.LedgerCall) machine.LedgerResult {
	res := d.n.Ledger.Do(ctx, call)
	if p := d.n.lastLedger.Load(); p != nil {
		if _, err := p.Wait(ctx); err != nil {
			d.n.log.Error("ledger journal append failed", "err", err)
			return machine.LedgerResult{CommandID: call.CommandID, Failure: &machine.LedgerFailure{
				Category: machine.LedgerUnknownOutcome, Message: "the ledger could not persist the command"}}
		}
	}
	return res
}

func (d durableLedger) Holdings(party string) []machine.LedgerHolding {
	return d.n.Ledger.Holdings(party)
}

func (d durableLedger) Incoming(party string) []machine.LedgerTransfer {
	return d.n.Ledger.Incoming(party)
}
