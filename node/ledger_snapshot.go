package node

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgersim"
)

// A ledger journal's snapshot is the ledger's own snapshot (ledgersim.Snapshot) with the
// journal's genesis spec in front, so that a journal pruned past its genesis record still
// names the ledger it rebuilds:
//
//	"rfqdesk-ledger-snapshot" ‖ u8 version (1) ‖ u32 big-endian length ‖ spec JSON
//	‖ ledger snapshot
const ledgerSnapshotMagic = "rfqdesk-ledger-snapshot"

const ledgerSnapshotVersion byte = 1

// encodeLedgerSnapshot frames a ledger snapshot with its genesis spec.
func encodeLedgerSnapshot(spec LedgerSpec, ledger []byte) ([]byte, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode the ledger spec: %w", err)
	}
	out := make([]byte, 0, len(ledgerSnapshotMagic)+5+len(js)+len(ledger))
	out = append(out, ledgerSnapshotMagic...)
	out = append(out, ledgerSnapshotVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(js)))
	out = append(out, js...)
	return append(out, ledger...), nil
}

// decodeLedgerSnapshot splits a ledger journal's snapshot into the genesis spec and the
// ledger's snapshot.
func decodeLedgerSnapshot(data []byte) (LedgerSpec, []byte, error) {
	var spec LedgerSpec
	rest, ok := bytes.CutPrefix(data, []byte(ledgerSnapshotMagic))
	if !ok || len(rest) < 5 {
		return spec, nil, errors.New("not a ledger journal snapshot")
	}
	if rest[0] != ledgerSnapshotVersion {
		return spec, nil, fmt.Errorf("ledger journal snapshot version %d, this build reads %d", rest[0], ledgerSnapshotVersion)
	}
	n := binary.BigEndian.Uint32(rest[1:5])
	rest = rest[5:]
	if uint64(n) > uint64(len(rest)) {
		return spec, nil, errors.New("ledger journal snapshot: spec longer than the snapshot")
	}
	if err := json.Unmarshal(rest[:n], &spec); err != nil {
		return spec, nil, fmt.Errorf("ledger journal snapshot: spec: %w", err)
	}
	return spec, rest[n:], nil
}

// readLedgerGenesis returns the spec of a ledger journal: its record 1, or, once that is
// pruned, the spec carried by its newest snapshot.
func readLedgerGenesis(log journal.Log) (LedgerSpec, error) {
	if log.FirstSeq() <= 1 {
		var g genesisRecord
		if err := readFirst(log, &g); err != nil || g.Ledger == nil {
			return LedgerSpec{}, fmt.Errorf("read the ledger genesis record: %v", err)
		}
		if err := checkLedgerVersion(g); err != nil {
			return LedgerSpec{}, err
		}
		return *g.Ledger, nil
	}
	_, data, ok, err := log.LoadSnapshot()
	if err != nil {
		return LedgerSpec{}, fmt.Errorf("load the ledger snapshot: %w", err)
	}
	if !ok {
		return LedgerSpec{}, fmt.Errorf("the ledger journal starts at record %d and has no snapshot", log.FirstSeq())
	}
	spec, _, err := decodeLedgerSnapshot(data)
	return spec, err
}

// LedgerRecovery describes how RecoverLedger rebuilt a ledger.
type LedgerRecovery struct {
	// SnapshotSeq is the ledger journal record the restored snapshot covers (0: none,
	// the ledger was replayed from genesis).
	SnapshotSeq uint64
	// Inputs is how many records were replayed after the snapshot or genesis.
	Inputs uint64
}

// RecoverLedger rebuilds the embedded ledger from its journal: the newest snapshot, if
// the journal has one, restored with genesis's configuration (clock, recorder, faults),
// then the records after it; else genesis itself with every record after record 1.
// genesis is a fresh ledger built from the journal's spec (LedgerGenesis); the ledger
// returned is the one to use (genesis itself when there was no snapshot).
func RecoverLedger(log journal.Log, genesis *ledgersim.Ledger) (*ledgersim.Ledger, LedgerRecovery, error) {
	var rec LedgerRecovery
	seq, data, ok, err := log.LoadSnapshot()
	if err != nil {
		return nil, rec, fmt.Errorf("load the ledger snapshot: %w", err)
	}
	// A snapshot past the log's end can only come from a log limited for replay (a
	// prefix of the journal): replay that prefix from genesis.
	if !ok || seq > log.LastSeq() {
		rec.Inputs, err = ReplayLedger(log, genesis)
		return genesis, rec, err
	}
	_, snap, err := decodeLedgerSnapshot(data)
	if err != nil {
		return nil, rec, err
	}
	l, err := ledgersim.Restore(genesis.Config(), snap)
	if err != nil {
		return nil, rec, fmt.Errorf("restore the ledger snapshot at record %d: %w", seq, err)
	}
	rec.SnapshotSeq = seq
	rec.Inputs, err = replayLedgerFrom(log, seq+1, l)
	return l, rec, err
}

// saveLedgerSnapshot snapshots the embedded ledger into its journal at the record the
// snapshot covers, then prunes what no restart needs any more. The snapshot is the ledger
// follower's (ledger_follower.go); without one, or when it failed, it is taken from the live
// ledger, which then seeds a new follower. The live ledger's Recorder appends under the
// ledger's lock, and SnapshotWith reads the journal's last sequence number under that lock
// too, so the snapshot holds exactly the records up to it.
func (n *Node) saveLedgerSnapshot() {
	if n.ledgerLog == nil {
		return
	}
	var state []byte
	var seq uint64
	fromFollower := false
	if f := n.ledgerFollower.Load(); f != nil {
		s := f.snapshot(n.ledgerLog.LastSeq())
		if s.err != nil {
			n.LedgerSnapshots.FollowerFailures.Add(1)
			n.log.Error("the ledger follower failed; this snapshot is taken from the ledger", "err", s.err)
		}
		state, seq, fromFollower = s.state, s.seq, s.err == nil
	}
	if !fromFollower {
		var err error
		if state, seq, err = n.liveLedgerSnapshot(); err != nil {
			n.log.Error("snapshot the ledger", "err", err)
			return
		}
	}
	if seq <= n.ledgerSnapSeq.Load() {
		return // nothing new since the last one
	}
	data, err := encodeLedgerSnapshot(n.ledgerSpec, state)
	if err != nil {
		n.log.Error("encode the ledger snapshot", "err", err)
		return
	}
	if err := n.ledgerLog.SaveSnapshot(seq, data); err != nil {
		n.log.Error("save ledger snapshot", "seq", seq, "err", err)
		return
	}
	n.ledgerSnapSeq.Store(seq)
	if fromFollower {
		n.LedgerSnapshots.FromFollower.Add(1)
	} else {
		n.LedgerSnapshots.FromLedger.Add(1)
	}
	n.LedgerSnapshots.LastSeq.Store(seq)
	if err := n.ledgerLog.Prune(); err != nil {
		n.log.Warn("prune the ledger journal", "err", err)
	}
}

// liveLedgerSnapshot snapshots the live ledger (every call waits meanwhile) and seeds a
// new follower with it, installed at the record the snapshot covers.
func (n *Node) liveLedgerSnapshot() ([]byte, uint64, error) {
	var f, old *ledgerFollower
	state, seq, err := n.Ledger.L.SnapshotWith(func() uint64 {
		seq := n.ledgerLog.LastSeq()
		f = newLedgerFollower(n.Ledger.L.Config(), seq)
		f.start()                      // it waits for its seed
		old = n.ledgerFollower.Swap(f) // under the ledger's lock: no Recorder runs
		return seq
	})
	if old != nil {
		old.stop()
	}
	if err != nil {
		n.replaceLedgerFollower(nil)
		return nil, 0, err
	}
	f.seed <- state // it only reads it, as the snapshot's encoder does
	return state, seq, nil
}

// replaceLedgerFollower installs f (nil: none) while no Recorder runs, and stops the
// follower it replaces.
func (n *Node) replaceLedgerFollower(f *ledgerFollower) {
	if n.Ledger == nil {
		return
	}
	var old *ledgerFollower
	n.Ledger.L.Exclusive(func() { old = n.ledgerFollower.Swap(f) })
	if f == nil {
		n.LedgerSnapshots.FollowerLag.Store(0)
	}
	if old != nil {
		old.stop()
	}
}

// replayLedgerFrom applies the ledger inputs journaled from record from on to l (as
// ReplayLedger does from record 2).
func replayLedgerFrom(log journal.Log, from uint64, l *ledgersim.Ledger) (uint64, error) {
	var n uint64
	if log.LastSeq() < from {
		return 0, nil
	}
	err := log.ReadFrom(from, func(seq uint64, raw []byte) error {
		in, err := decodeLedgerInput(raw)
		if err != nil {
			return fmt.Errorf("ledger record %d: %w", seq, err)
		}
		if err := l.Replay(in); err != nil {
			return fmt.Errorf("ledger record %d: %w", seq, err)
		}
		n++
		return nil
	})
	return n, err
}
