package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Stream resume in the simulation: an actor remembers the last sequence number its
// stream delivered (once a snapshot.end or stream.resumed told it where the numbering
// stands) and reopens its stream after a network drop or a restart with since = that
// number, as the Go client does. Now and then it sends a stale since (to draw a gap for
// events no longer retained) or one ahead of the party's latest (a gap too; also the
// largest number there is, which must change nothing). The model (sim/model, resume.go)
// judges every frame's number and every resume's frames; these are the coverage goals.
const (
	covResumeReplayed = "a resume replayed retained events"
	covResumeGapOld   = "a resume got a gap (too old)"
	covResumeGapAhead = "a resume got a gap (ahead)"
	covResumeRaced    = "a resume raced new events"
	covResumeRestart  = "a resume across a desk restart"
)

// resumeCoverage lists the resume's situations in report order.
var resumeCoverage = []string{covResumeReplayed, covResumeGapOld, covResumeGapAhead, covResumeRaced, covResumeRestart}

// resumeGoals are those a long run of several seeds must reach: replays and both gaps in
// any run of several seeds with drops; a race and a resume across a restart when it crashes.
func resumeGoals(k Knobs, m Mix, runs int) []string {
	if runs < 2 || m.Disconnect == 0 {
		return nil
	}
	goals := []string{covResumeReplayed, covResumeGapOld, covResumeGapAhead, covResumeRaced}
	if k.CrashRate > 0 {
		goals = append(goals, covResumeRestart)
	}
	return goals
}

// simStreamRetention draws the run's retained window from the desk seed: a small count
// bound now and then, so that stale resumes meet trimmed windows, and a short age bound.
func simStreamRetention(seed uint64) (int, time.Duration) {
	r := rand.New(rand.NewPCG(seed, 0x5e9))
	events := []int{16, 64, 512, machine.DefaultStreamRetentionEvents}[r.IntN(4)]
	window := []time.Duration{2 * time.Minute, machine.DefaultStreamRetention}[r.IntN(2)]
	return events, window
}

// resumeState is an actor's view of its party's numbering.
type resumeState struct {
	rng   *rand.Rand // its own draws, so that the actor's other draws stay as they were
	known bool       // last is the number of the last event delivered
	last  uint64
	epoch uint64 // the desk epoch in which last was learned

	// the open request in flight: its socket, the desk's latest number when it was sent,
	// and whether it resumes from a number learned before a restart
	socket    uint64
	sentAt    uint64
	crossed   bool
	requested bool
}

func newResumeState(seed uint64, idx int) resumeState {
	return resumeState{rng: rand.New(rand.NewPCG(seed, uint64(idx)^0x5e9))}
}

// track follows a frame the actor's stream delivered.
func (a *actor) trackSeq(e machine.Event) {
	r := &a.resume
	switch e.Type {
	case machine.EvSnapshotEnd:
		if p, ok := e.Payload.(machine.SnapshotEndPayload); ok {
			r.known, r.last, r.epoch = true, p.Seq, a.s.epoch
		}
		return
	case machine.EvStreamResumed:
		if p, ok := e.Payload.(machine.StreamResumedPayload); ok {
			r.known, r.last, r.epoch = true, p.To, a.s.epoch
		}
		return
	case machine.EvStreamGap:
		r.known = false
		return
	}
	if e.Seq != 0 && r.known {
		r.last = e.Seq
	}
}

// resumeRequest fills a socket.opened input with the actor's since, when it knows one.
func (a *actor) resumeRequest(in *machine.SocketOpened) {
	r := &a.resume
	r.socket, r.requested = in.Socket, false
	if !r.known {
		return
	}
	since := r.last
	switch n := r.rng.IntN(40); {
	case n == 0:
		since = 0 // stale: all but a young party's events are gone
	case n == 1 && since > 0:
		since -= uint64(1 + r.rng.IntN(int(min(since, 1000))))
	case n == 2:
		since += uint64(1 + r.rng.IntN(5)) // ahead of the latest
	case n == 3:
		since = math.MaxUint64 // the largest: a gap, and nothing changes
	}
	in.Resume, in.Since = true, since
	r.requested = true
	r.crossed = r.epoch != a.s.epoch
	r.sentAt = 0
	if st := a.s.desk.Streams[a.party]; st != nil {
		r.sentAt = st.Seq
	}
}

// resumeCoverage counts what a socket.opened with since was served.
func (s *Sim) resumeCoverage(in machine.Input, out machine.Outputs) {
	o, ok := in.(machine.SocketOpened)
	if !ok || !o.Resume {
		return
	}
	a := s.socketOwner(o.Socket)
	if a == nil || a.resume.socket != o.Socket || !a.resume.requested {
		return
	}
	var gap *machine.StreamGapPayload
	for _, e := range out.Events {
		if e.Socket != o.Socket {
			continue
		}
		switch p := e.Payload.(type) {
		case machine.StreamResumedPayload:
			if p.To >= p.From {
				s.cov.hit(covResumeReplayed)
				if a.resume.crossed {
					s.cov.hit(covResumeRestart)
				}
			}
			if p.To > a.resume.sentAt {
				s.cov.hit(covResumeRaced) // events emitted while the open was on its way
			}
		case machine.StreamGapPayload:
			gap = &p
		case machine.SnapshotEndPayload:
			if gap != nil && gap.Since > p.Seq {
				s.cov.hit(covResumeGapAhead)
			} else if gap != nil {
				s.cov.hit(covResumeGapOld)
			}
		}
	}
}

// checkReplayedEvent checks that a frame a resume replayed concerns its party, from its
// payload alone (the desk's state may have moved on since it was sent).
func (s *Sim) checkReplayedEvent(e machine.Event, hint string) {
	ok := true
	switch p := e.Payload.(type) {
	case machine.RfqDTO:
		ok = slices.Contains(p.InvitedMakers, hint) || p.Taker == hint
	case machine.TradeDTO:
		ok = p.Taker == hint || p.Maker == hint
	}
	if !ok {
		s.failf(Safety, "replayed %s event sent to %s, whom it does not concern: %s", e.Type, hint, wireJSON(e.Payload))
	}
}

// typedReplays decodes the payloads of the frames a resume replayed (the JSON the desk
// retained) into the types they were emitted with, in place, for the actors and the
// checks that switch on payload types.
func typedReplays(out machine.Outputs) {
	for i, e := range out.Events {
		if e.Socket != 0 && e.Seq != 0 {
			out.Events[i].Payload = machine.RetainedPayload(e.Type, e.Payload)
		}
	}
}
