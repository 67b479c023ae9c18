package sim

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// Recheck is what replaying a trace with the simulator's checks found (ReplayTrace).
type Recheck struct {
	Version int
	// Recorded is the failure the trace was written for (nil: none).
	Recorded *Failure
	// Checked is false when the trace does not say where the ledger stood at its desk
	// inputs (one made by hand from a data directory); NotChecked then says why.
	Checked    bool
	NotChecked string
	// Violation is the first violation the replay met (nil: none). Its Step is 0: a
	// replay counts inputs, not the run's events.
	Violation *Failure
	// Judged says the judge re-ran too (the trace was judged, or starts at genesis).
	Judged bool
	// Inputs, LedgerRecords and Reads count what the replay applied and re-read.
	Inputs, LedgerRecords, Reads int
	// Diverged is set when the replay did not rebuild the state the trace ends with
	// (its digests), or a read's answer differs from the recorded one.
	Diverged string
	// Tail is the last desk inputs replayed (at most RecheckTail), each with what it
	// produced, as transcripts print them (machine.DescribeStep): what led to a violation.
	Tail []string
}

// RecheckTail is how many of the last desk inputs a replay keeps described.
const RecheckTail = 6

// Reproduced reports whether the replay met the trace's own failure, with the same message.
func (c *Recheck) Reproduced() bool {
	return c.Violation != nil && c.Recorded != nil && c.Violation.Message == c.Recorded.Message
}

// maxRecheckLine bounds one line of a trace: a journal record in base64 plus its wrapping.
const maxRecheckLine = journal.MaxRecordSize/3*4 + 4096

// traceFile is a trace as ReplayTrace reads it.
type traceFile struct {
	header        traceHeader
	version       int
	deskSnapSeq   uint64
	deskSnap      []byte
	judgeSnap     []byte
	ledgerSnapSeq uint64
	ledgerSnap    []byte
	desk, ledger  []traceLine
	read          *traceRead
	ack           *ackObservation
	end           *traceEnd
	hasDeskSnap   bool
	hasLedgerSnap bool
	hasJudgeSnap  bool
}

// readTrace parses a trace (version TraceVersion).
func readTrace(r io.Reader) (*traceFile, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxRecheckLine)
	t := &traceFile{}
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l traceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if t.version == 0 && l.Type != "header" {
			return nil, fmt.Errorf("line %d: a %q line before the header", n, l.Type)
		}
		if t.end != nil {
			return nil, fmt.Errorf("line %d: a line after the end line", n)
		}
		switch l.Type {
		case "header":
			if t.version != 0 || l.Header == nil {
				return nil, fmt.Errorf("line %d: a header must be the first line and only there", n)
			}
			if l.Version != TraceVersion {
				return nil, fmt.Errorf("line %d: trace version %d; this replay reads only version %d (re-record the trace with this build)", n, l.Version, TraceVersion)
			}
			t.version, t.header = l.Version, *l.Header
		case "desk-snapshot":
			t.deskSnapSeq, t.deskSnap, t.hasDeskSnap = l.Seq, l.Data, true
		case "judge-snapshot":
			t.judgeSnap, t.hasJudgeSnap = l.Data, true
			if l.Seq != t.deskSnapSeq || !t.hasDeskSnap {
				return nil, fmt.Errorf("line %d: the judge snapshot at desk record %d is not beside the desk snapshot", n, l.Seq)
			}
		case "ledger-snapshot":
			t.ledgerSnapSeq, t.ledgerSnap, t.hasLedgerSnap = l.Seq, l.Data, true
		case "desk", "ledger":
			list := &t.desk
			if l.Type == "ledger" {
				list = &t.ledger
			}
			if k := len(*list); k > 0 && (*list)[k-1].Seq+1 != l.Seq {
				return nil, fmt.Errorf("line %d: %s record %d follows record %d", n, l.Type, l.Seq, (*list)[k-1].Seq)
			}
			*list = append(*list, l)
		case "read":
			if l.Read == nil || t.read != nil {
				return nil, fmt.Errorf("line %d: a read line must carry one read, once", n)
			}
			t.read = l.Read
		case "acknowledged":
			if l.Acknowledged == nil || t.ack != nil {
				return nil, fmt.Errorf("line %d: an acknowledged line must carry one observation, once", n)
			}
			t.ack = l.Acknowledged
		case "end":
			if l.End == nil {
				return nil, fmt.Errorf("line %d: an end line without end", n)
			}
			t.end = l.End
		default:
			return nil, fmt.Errorf("line %d: unknown line type %q", n, l.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if t.version == 0 {
		return nil, fmt.Errorf("no header line")
	}
	return t, nil
}

// ReplayTrace replays a simulator trace (TRACE.md) with the simulator's checks: every
// desk input is applied in the order the run applied it, with the ledger at the record it
// had reached then, and checked as the run checked it (its outputs, its replies, the
// events it sent and the ledger calls it made, and by the judge j makes, when j is on);
// every ledger record is checked for commands and settlements taking effect twice; the
// read a failing check looked at is asked again and checked; and the checks the run made
// in its last step run on the state the trace ends with (a crash's recovery against the
// actors' observation; or the final checks of a finished run; or the ledger's invariants,
// the trades in flight and, for a liveness failure, the deadlines as of its time). It stops
// at the first violation, and compares the state it ends with with the trace's digests. A
// trace without the ledger's position at its desk inputs is read but not checked.
func ReplayTrace(r io.Reader, j Judges) (*Recheck, error) {
	t, err := readTrace(r)
	if err != nil {
		return nil, fmt.Errorf("read the trace: %w", err)
	}
	c := &Recheck{Version: t.version, Recorded: t.header.Failure}
	if !t.ledgerPositions() {
		c.NotChecked = "the trace records no ledger position at its desk inputs (the simulator writes them; a trace made from a data directory cannot)"
		return c, nil
	}
	s, err := replayShell(t)
	if err != nil {
		return nil, err
	}
	s.orphans = newOrphanWatch()
	s.orphans.stale = true
	// The run checked the orphan invariant after every step, incrementally; its other
	// checks at an adaptive cadence (the ledger walk) or in a fixed order. A failure the
	// orphan check found replays with the watch kept step by step as the run kept it (the
	// checks before it in the run's order passed on every state it saw); any other failure
	// replays with the orphan check only at the end, after the others, as the run's order.
	stepOrphans := t.header.Failure != nil && strings.HasPrefix(t.header.Failure.Message, "orphan: ")
	if t.end != nil {
		for _, cid := range t.end.Unheard {
			s.orphans.unheard[cid] = unheard
		}
	}
	if err := s.startJudge(t, j, c); err != nil {
		return nil, err
	}
	c.Checked = true
	ledger := t.ledger
	nextLedger := 0
	if !t.hasLedgerSnap && len(ledger) > 0 && ledger[0].Seq == 1 {
		nextLedger = 1 // the genesis record built the ledger
	}
	advance := func(upto uint64) error {
		for nextLedger < len(ledger) && ledger[nextLedger].Seq <= upto {
			l := ledger[nextLedger]
			nextLedger++
			if t.hasLedgerSnap && l.Seq <= t.ledgerSnapSeq {
				continue
			}
			in, err := node.DecodeLedgerInput(l.Record)
			if err != nil {
				return fmt.Errorf("ledger record %d: %w", l.Seq, err)
			}
			s.trackLedger(in)
			s.trackUndo = s.trackUndo[:0]
			if err := s.ledger.L.Replay(in); err != nil {
				return fmt.Errorf("ledger record %d: %w", l.Seq, err)
			}
			if stepOrphans {
				s.orphans.noteLedgerInput(in)
				s.checkOrphans(false)
			}
			c.LedgerRecords++
			if s.failure != nil {
				return nil
			}
		}
		return nil
	}
	for _, d := range t.desk {
		if d.Seq == 1 || (t.hasDeskSnap && d.Seq <= t.deskSnapSeq) {
			continue // the genesis record or the snapshot made the desk
		}
		if err := advance(d.LedgerSeq); err != nil {
			return nil, err
		}
		if s.failure != nil {
			break
		}
		env, err := machine.DecodeEnvelope(d.Data)
		if err != nil {
			return nil, fmt.Errorf("desk record %d: %w", d.Seq, err)
		}
		out, ok := s.recheckInput(env)
		step := machine.DescribeInput(env) + "\n  (machine.Apply panicked)\n"
		if ok {
			step = machine.DescribeStep(env, out)
		}
		if len(c.Tail) == RecheckTail {
			c.Tail = append(c.Tail[:0], c.Tail[1:]...)
		}
		c.Tail = append(c.Tail, step)
		if stepOrphans && s.failure == nil {
			s.checkOrphans(true)
		}
		c.Inputs++
		if s.failure != nil {
			break
		}
	}
	if s.failure == nil {
		if err := advance(^uint64(0)); err != nil {
			return nil, err
		}
	}
	if s.failure == nil {
		s.endChecks(t, c)
	}
	c.Violation = s.failure
	if s.failure == nil && t.end != nil {
		c.Diverged = s.compareEnd(t.end)
	}
	return c, nil
}

// replayShell is a Sim without actors or journals, holding the desk and the ledger a
// trace starts from: the checks are the Sim's own methods.
func replayShell(t *traceFile) (*Sim, error) {
	s := &Sim{k: t.header.Knobs, mix: t.header.Mix, now: Start, clock: ledgersim.NewManualClock(Start),
		deskLog: journal.NewMemLog(true), ledLog: journal.NewMemLog(true),
		resultsInFlight: map[string]bool{}, waiting: map[uint64]*request{}, byParty: map[string]*actor{},
		makerHints: map[string]bool{}, lost: map[string]bool{}, accepting: map[string]bool{}, effects: map[string]string{},
		prepCmd: map[string]string{}, settlements: map[string]string{}, cov: newCoverage(), replaying: true, settleTimes: map[string]time.Time{},
		stats: Stats{LedgerFailures: map[string]int{}, TradesFailed: map[string]int{}}}
	// The desk: its snapshot, or genesis.
	switch {
	case t.hasDeskSnap:
		d, err := machine.Restore(t.deskSnap)
		if err != nil {
			return nil, fmt.Errorf("the trace's desk snapshot: %w", err)
		}
		s.desk = d
	case len(t.desk) > 0 && t.desk[0].Seq == 1:
		log := journal.NewMemLog(true)
		if _, err := log.Append(context.Background(), t.desk[0].Data); err != nil {
			return nil, err
		}
		cfg, err := node.DeskGenesis(log)
		if err != nil {
			return nil, fmt.Errorf("the trace's desk genesis: %w", err)
		}
		if s.desk, err = machine.NewDesk(cfg); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("the trace's desk records start after record 1 but it has no desk snapshot")
	}
	s.cfg = s.desk.Cfg
	// The ledger: its snapshot, or genesis.
	log := journal.NewMemLog(true)
	switch {
	case t.hasLedgerSnap:
		// A journal pruned behind the snapshot, as node.RecoverLedger reads one.
		for range t.ledgerSnapSeq {
			log.AppendAsync(nil)
		}
		log.Sync()
		for range journal.DefaultKeepSnapshots {
			if err := log.SaveSnapshot(t.ledgerSnapSeq, t.ledgerSnap); err != nil {
				return nil, err
			}
		}
		if err := log.Prune(); err != nil {
			return nil, err
		}
	case len(t.ledger) > 0 && t.ledger[0].Seq == 1:
		if _, err := log.Append(context.Background(), t.ledger[0].Record); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("the trace's ledger records start after record 1 but it has no ledger snapshot")
	}
	s.ledgerClock = newLedgerClock(s.clock, s.mix)
	spec, err := node.LedgerGenesis(log)
	if err != nil {
		return nil, fmt.Errorf("the trace's ledger genesis: %w", err)
	}
	s.spec = spec
	ad, _, err := ledgeradapter.NewEmbedded(ledgeradapter.Embedded{Network: spec.Network, Seed: spec.Seed, Clock: s.ledgerClock,
		Catalog: spec.Catalog, Reservoir: spec.Reservoir, House: spec.House})
	if err != nil {
		return nil, fmt.Errorf("rebuild the ledger genesis: %w", err)
	}
	if t.hasLedgerSnap {
		l, _, err := node.RecoverLedger(log, ad.L)
		if err != nil {
			return nil, fmt.Errorf("the trace's ledger snapshot: %w", err)
		}
		ad.L = l
	}
	s.ledger = ad
	return s, nil
}

// startJudge makes the judge the trace's first desk state needs: restored from the
// trace's judge snapshot, or new at genesis.
func (s *Sim) startJudge(t *traceFile, j Judges, c *Recheck) error {
	if !j.On() {
		return nil
	}
	var err error
	switch {
	case t.hasJudgeSnap:
		if s.judge, err = j.Restore(t.judgeSnap); err != nil {
			return fmt.Errorf("restore the trace's judge snapshot: %w", err)
		}
	case !t.hasDeskSnap:
		if s.judge, err = j.New(s.cfg); err != nil {
			return fmt.Errorf("make the judge: %w", err)
		}
	default:
		return nil // a run without a judge, pruned: the judge cannot know the state
	}
	c.Judged = true
	return nil
}

// recheckInput applies one desk input as Sim.input does, with the same checks, and checks
// its replies as the actors' deliveries do. It returns what the input produced (false:
// Apply panicked).
func (s *Sim) recheckInput(env machine.Envelope) (machine.Outputs, bool) {
	s.now = env.At
	s.clock.Set(env.At)
	obs := s.observeBefore(env)
	out, panicked := safeApply(s.desk, env)
	if panicked != "" {
		s.failf(Safety, "machine.Apply panicked on %s input %d: %s", env.Input.Kind(), env.Seq, panicked)
		return out, false
	}
	s.observeAfter(env, out, obs)
	s.judgeApply(env, out)
	for _, rep := range out.Replies {
		if rep.Seq != 0 {
			s.checkReply(rep)
		}
	}
	return out, true
}

// endChecks are the checks of the run's last step, on the state the trace ends with: the
// read a check failed on; then the final checks of a run that reached its horizon, or
// else the ledger's invariants, the trades in flight and, for a liveness failure, the
// deadlines as of the failure's time.
func (s *Sim) endChecks(t *traceFile, c *Recheck) {
	at := s.now
	if t.header.Failure != nil {
		at = t.header.Failure.At
	}
	if rd := t.read; rd != nil {
		s.now = rd.At
		s.recheckRead(rd, c)
		if s.failure != nil || c.Diverged != "" {
			return
		}
	}
	s.now = at
	if t.ack != nil {
		// The run failed checking a crash's recovery against what the actors knew: the
		// trace ends with the recovered journals, and that check was the step's last.
		s.checkAckObservation(*t.ack, t.lastDesk())
		return
	}
	if t.end != nil && t.end.Finished {
		// The run reached its horizon: only the final checks ran after its last step.
		s.finalChecks()
		return
	}
	// The orphan invariant closes each step: here from a full walk of the ledger, with the
	// allocations the run knew were made by a crashed process's calls (the end line's
	// unheard).
	orphans := func() {
		s.orphans.stale = true
		s.checkOrphans(true)
	}
	if err := s.ledger.L.CheckInvariants(); err != nil {
		s.failf(Safety, "ledger invariant: %v", err)
		return
	}
	s.tradesStale = true
	s.checkDesk()
	if s.failure == nil {
		orphans()
	}
	// The run looks at every deadline only every so many steps: a replay, as of the
	// failure's time, only when that is what failed.
	if s.failure == nil && t.header.Failure != nil && t.header.Failure.Class == Liveness {
		s.checkOverdue()
	}
}

// recheckRead asks a recorded read again and checks it as the run did.
func (s *Sim) recheckRead(rd *traceRead, c *Recheck) {
	q, err := decodeQuery(rd.Query)
	if err != nil {
		c.Diverged = fmt.Sprintf("the read line: %v", err)
		return
	}
	c.Reads++
	rep := machine.Read(s.desk, rd.At, rd.KeyHash, q)
	got, err := json.Marshal(rep)
	if err != nil {
		c.Diverged = fmt.Sprintf("encode the %s read's answer: %v", queryKind(q), err)
		return
	}
	if string(got) != string(rd.Reply) {
		c.Diverged = fmt.Sprintf("the %s read answers %s, the trace recorded %s", queryKind(q), got, rd.Reply)
		return
	}
	party, _ := s.desk.Caller(rd.KeyHash)
	switch rd.Check {
	case readTakerView:
		if _, ok := q.(machine.QRfqMine); !ok {
			c.Diverged = fmt.Sprintf("a taker-view read line asks %s, not rfq.mine", queryKind(q))
			return
		}
		if rep.Err == nil {
			s.checkTakerView(party, rep)
		}
	default:
		s.checkRead(party, rep)
		s.judgeRead(rd.At, rd.KeyHash, q, rep)
	}
}

// compareEnd says how the replayed state differs from the trace's end ("": it does not).
func (s *Sim) compareEnd(end *traceEnd) string {
	d, err := s.desk.Digest()
	if err != nil {
		return fmt.Sprintf("desk digest: %v", err)
	}
	if got := hex.EncodeToString(d[:]); got != end.DeskDigest {
		return fmt.Sprintf("the replayed desk's digest is %s, the trace ends with %s", got, end.DeskDigest)
	}
	l := s.ledger.L.Digest()
	if got := hex.EncodeToString(l[:]); got != end.LedgerDigest {
		return fmt.Sprintf("the replayed ledger's digest is %s, the trace ends with %s", got, end.LedgerDigest)
	}
	return ""
}

// lastDesk is the last desk record the trace holds (that its snapshot covers, without any).
func (t *traceFile) lastDesk() uint64 {
	if n := len(t.desk); n > 0 {
		return t.desk[n-1].Seq
	}
	return t.deskSnapSeq
}

// ledgerPositions reports whether the trace says where the ledger stood at its desk inputs
// (the simulator writes it at every one).
func (t *traceFile) ledgerPositions() bool {
	for _, d := range t.desk {
		if d.LedgerSeq > 0 {
			return true
		}
	}
	return len(t.desk) == 0
}
