package machine

import (
	"crypto/ed25519"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/deskco/rfqdesk/money"
)

// TestTranscripts runs every script under testdata/transcripts: each directive drives the
// desk and its expectation is the DescribeOutputs text of every Apply it caused, with party
// and entity ids replaced by the script's names. `go test ./machine -run Transcripts
// -rewrite` regenerates the expectations (read them before committing).
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/transcripts", func(t *testing.T, path string) {
		tr := newTranscript(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			tr.h.t = t
			return tr.run(td)
		})
	})
}

// transcript is the state of one script: the harness and the names the script gave.
type transcript struct {
	h      *harness
	out    strings.Builder
	actors map[string]actor  // party name → actor
	ids    map[string]string // script name → entity id
	starts map[string]RegisterStartDTO
	subs   []string          // id → name substitutions, id first, in pairs
	as     map[uint64]string // request seq → the name its new entity gets when answered
	next   time.Time         // the last next deadline printed
}

func newTranscript(t *testing.T) *transcript {
	tr := &transcript{h: newHarness(t), actors: map[string]actor{"house": houseTaker},
		ids: map[string]string{}, starts: map[string]RegisterStartDTO{}, as: map[uint64]string{}}
	tr.name(houseTaker.id, "house")
	return tr
}

// name makes the rendering say name wherever id appears.
func (tr *transcript) name(id, name string) {
	tr.subs = append(tr.subs, id, name)
}

// feed applies one input and prints what it caused; in auto mode it then answers every
// ledger call that follows, printing each answer too.
func (tr *transcript) feed(in Input) Reply {
	return tr.feedAs(in, "")
}

// feedAs is feed that names the entity the request creates (when it is answered, perhaps
// later in manual mode).
func (tr *transcript) feedAs(in Input, as string) Reply {
	h := tr.h
	h.seq++
	seq := h.seq
	if as != "" {
		tr.as[seq] = as
	}
	tr.applyPrint(seq, in.Kind(), in)
	tr.answerQueued()
	return h.replies[seq]
}

// answerQueued answers, in auto mode, every queued ledger call and those the answers lead
// to, printing each.
func (tr *transcript) answerQueued() {
	h := tr.h
	for h.auto && len(h.queued) > 0 {
		c := h.queued[0]
		h.queued = h.queued[1:]
		tr.answer(c, h.ledger.answer(c, h.now))
	}
}

func (tr *transcript) applyPrint(seq uint64, label string, in Input) {
	h := tr.h
	out := Apply(h.d, Envelope{Seq: seq, At: h.now, Input: in})
	h.collect(out)
	for _, r := range out.Replies {
		if as, ok := tr.as[r.Seq]; ok {
			switch b := r.Body.(type) {
			case RfqDTO:
				tr.ids[as] = b.RfqID
				tr.name(b.RfqID, as)
			case QuoteWithActionsDTO:
				tr.ids[as] = b.QuoteID
				tr.name(b.QuoteID, as)
			case TradeWithActionsDTO:
				tr.ids[as] = b.TradeID
				tr.name(b.TradeID, as)
			}
		}
	}
	// The next deadline is printed only when it changes.
	if out.NextDeadline.Equal(tr.next) {
		out.NextDeadline = time.Time{}
	} else {
		tr.next = out.NextDeadline
	}
	fmt.Fprintf(&tr.out, "%d %s\n", seq, label)
	for _, line := range strings.Split(strings.TrimSuffix(DescribeOutputs(out), "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(&tr.out, "  %s\n", line)
		}
	}
}

// answer feeds one ledger result.
func (tr *transcript) answer(c LedgerCall, res LedgerResult) {
	tr.h.seq++
	what := "ok"
	if res.Failure != nil {
		what = res.Failure.Category
	}
	tr.applyPrint(tr.h.seq, fmt.Sprintf("ledger answers %s %s: %s", c.Op, c.CommandID, what), res)
}

// render replaces ids by names.
func (tr *transcript) render() string {
	s := tr.out.String()
	tr.out.Reset()
	// Longest ids first, so that no id is replaced inside a longer one.
	pairs := make([][2]string, 0, len(tr.subs)/2)
	for i := 0; i+1 < len(tr.subs); i += 2 {
		pairs = append(pairs, [2]string{tr.subs[i], tr.subs[i+1]})
	}
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i][0]) > len(pairs[j][0]) })
	for _, p := range pairs {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	if s == "" {
		return "ok\n"
	}
	return s
}

func (tr *transcript) arg(td *datadriven.TestData, key, def string) string {
	a, ok := td.Arg(key)
	if !ok || len(a.Vals) == 0 {
		return def
	}
	return a.Vals[0]
}

func (tr *transcript) vals(td *datadriven.TestData, key string) []string {
	a, ok := td.Arg(key)
	if !ok {
		return nil
	}
	return a.Vals
}

// who is the actor named by the first positional argument or by=.
func (tr *transcript) who(td *datadriven.TestData, key string) actor {
	tr.h.t.Helper()
	name := tr.arg(td, key, "")
	if name == "" && len(td.CmdArgs) > 0 && len(td.CmdArgs[0].Vals) == 0 {
		name = td.CmdArgs[0].Key
	}
	a, ok := tr.actors[name]
	if !ok {
		if start, ok := tr.starts[name]; ok { // registration not completed: the key it would get
			return actor{id: start.PartyID, key: "mk_" + name}
		}
		if name == "stranger" {
			return actor{id: "stranger::1220ee", key: "no-such-key"}
		}
		tr.h.t.Fatalf("%s: no party %q", td.Pos, name)
	}
	return a
}

// entity is the id the script named key= refers to (or the raw value).
func (tr *transcript) entity(td *datadriven.TestData, key string) string {
	v := tr.arg(td, key, "")
	if id, ok := tr.ids[v]; ok {
		return id
	}
	return v
}

// flow builds the registered flow named by the first positional argument (its journal
// kind) for the caller by=, setting each other key=value argument on the string field of
// that JSON name (a script's entity name becomes its id): a new endpoint is scripted without
// a directive of its own.
func (tr *transcript) flow(td *datadriven.TestData) Input {
	tr.h.t.Helper()
	kind := td.CmdArgs[0].Key
	zero, ok := flows[kind]
	if !ok {
		tr.h.t.Fatalf("%s: no flow of kind %q", td.Pos, kind)
	}
	v := reflect.New(reflect.TypeOf(zero)).Elem()
	v.FieldByName("Req").Set(reflect.ValueOf(tr.who(td, "by").req()))
	for _, arg := range td.CmdArgs[1:] {
		if arg.Key == "by" {
			continue
		}
		set := false
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name != arg.Key:
			case f.Type == reflect.TypeOf(money.Decimal{}):
				v.Field(i).Set(reflect.ValueOf(money.MustParse(tr.arg(td, arg.Key, ""))))
				set = true
			case f.Type.Kind() == reflect.Int:
				n, err := strconv.Atoi(tr.arg(td, arg.Key, ""))
				if err != nil {
					tr.h.t.Fatalf("%s: %s=%s is not an integer", td.Pos, arg.Key, tr.arg(td, arg.Key, ""))
				}
				v.Field(i).SetInt(int64(n))
				set = true
			case f.Type.Kind() == reflect.String:
				v.Field(i).SetString(tr.entity(td, arg.Key))
				set = true
			}
		}
		if !set {
			tr.h.t.Fatalf("%s: %s has no string, integer or decimal field %q", td.Pos, kind, arg.Key)
		}
	}
	return v.Interface().(Input)
}

func (tr *transcript) run(td *datadriven.TestData) string {
	h := tr.h
	switch td.Cmd {
	case "register":
		name := td.CmdArgs[0].Key
		tr.registerStart(name)
		tr.registerComplete(name, false)
		tr.connect(tr.actors[name], td.HasArg("cod"))
	case "register-start":
		tr.registerStart(td.CmdArgs[0].Key)
	case "register-complete":
		tr.registerComplete(td.CmdArgs[0].Key, td.HasArg("bad-signature"))
	case "connect":
		tr.connect(tr.who(td, "by"), td.HasArg("cod"))
	case "disconnect":
		tr.feed(SocketClosed{Socket: tr.socketOf(tr.who(td, "by"))})
	case "rfq":
		taker := tr.who(td, "taker")
		var hints []string
		for _, m := range tr.vals(td, "makers") {
			if a, ok := tr.actors[m]; ok {
				hints = append(hints, h.hint(a))
			} else {
				hints = append(hints, m)
			}
		}
		dir := Direction(strings.ToUpper(tr.arg(td, "dir", "buy")))
		tr.feedAs(CreateRFQ{Req: taker.req(), Direction: dir, Qty: money.MustParse(tr.arg(td, "qty", "0.5")),
			Base: tr.arg(td, "base", "cbtc"), Quote: tr.arg(td, "quote", "usdcx"), InvitedMakers: hints,
			TTLSeconds: int64(tr.seconds(tr.arg(td, "ttl", "60s")))}, tr.arg(td, "as", ""))
	case "cancel":
		tr.feed(CancelRFQ{Req: tr.who(td, "by").req(), RFQID: tr.entity(td, "rfq")})
	case "quote":
		in := SubmitQuote{Req: tr.who(td, "by").req(), RFQID: tr.entity(td, "rfq"), Price: money.MustParse(tr.arg(td, "price", "100000"))}
		if v := tr.arg(td, "valid", ""); v != "" {
			until := h.now.Add(tr.duration(v))
			in.ValidUntil = &until
		}
		tr.feedAs(in, tr.arg(td, "as", ""))
	case "delete":
		tr.feed(DeleteQuote{Req: tr.who(td, "by").req(), QuoteID: tr.entity(td, "quote")})
	case "do":
		tr.feed(tr.flow(td))
	case "accept":
		tr.feedAs(AcceptQuote{Req: tr.who(td, "by").req(), QuoteID: tr.entity(td, "quote")}, tr.arg(td, "as", ""))
	case "sign":
		a := tr.who(td, "by")
		var entries []SignedAction
		for _, x := range h.pending(a) {
			sig := ed25519.Sign(h.keys[a.id], x.Hash)
			if td.HasArg("bad-signature") {
				sig = ed25519.Sign(h.keys[a.id], []byte("not the hash"))
			}
			entries = append(entries, SignedAction{ActionID: x.ID, Signature: sig})
			if td.HasArg("one") {
				break
			}
		}
		tr.feed(ExecuteActions{Req: a.req(), Entries: entries, Batch: len(entries) != 1})
	case "deposit-accept":
		tr.feed(AcceptIncoming{Req: tr.who(td, "by").req(), CID: tr.arg(td, "cid", "00dead")})
	case "faucet":
		tr.feed(FaucetDraw{Req: tr.who(td, "by").req()})
	case "withdraw":
		a := tr.who(td, "by")
		to := tr.arg(td, "to", "someone::1220ff")
		if r, ok := tr.actors[to]; ok {
			to = r.id
		}
		tr.feed(Withdraw{Req: a.req(), Symbol: tr.arg(td, "symbol", "usdcx"), Amount: money.MustParse(tr.arg(td, "amount", "1")), Receiver: to})
	case "tick":
		h.now = h.now.Add(tr.duration(td.CmdArgs[0].Key))
		tr.feed(Tick{})
	case "ledger":
		h.auto = td.CmdArgs[0].Key == "auto"
		return "ok\n"
	case "ledger-answer":
		tr.ledgerAnswer(td)
	case "crash":
		// The state survives as its snapshot; answers in flight and sockets do not.
		_, d := encodeRestore(h.t, h.d)
		fmt.Fprintf(&tr.out, "crashed: %d ledger calls in flight lost\n", len(h.queued))
		h.d, h.queued = d, nil
	case "boot":
		tr.feed(Boot{})
	case "read":
		tr.read(td)
	case "pending":
		if len(h.pending(tr.who(td, "by"))) == 0 {
			tr.out.WriteString("no pending actions\n")
		}
		for _, x := range h.pending(tr.who(td, "by")) {
			fmt.Fprintf(&tr.out, "%s %s %s\n", x.Kind, x.Purpose, x.Description)
		}
	case "state":
		tr.state(td)
	case "coins", "reserved": // coinsel_test.go
		tr.coins(td)
	default:
		h.t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	return tr.render()
}

// duration parses "+30s" or "9m59.999s".
func (tr *transcript) duration(s string) time.Duration {
	d, err := time.ParseDuration(strings.TrimPrefix(s, "+"))
	if err != nil {
		tr.h.t.Fatalf("bad duration %q: %v", s, err)
	}
	return d
}

// seconds parses "+30s", "90s", "10m" or "60" as a count of seconds.
func (tr *transcript) seconds(s string) float64 {
	s = strings.TrimPrefix(s, "+")
	if d, err := time.ParseDuration(s); err == nil {
		return d.Seconds()
	}
	var n float64
	if _, err := fmt.Sscan(s, &n); err != nil {
		tr.h.t.Fatalf("bad duration %q", s)
	}
	return n
}

func (tr *transcript) registerStart(name string) {
	pub, _, _ := ed25519.GenerateKey(deterministicReader(name))
	if dto, ok := tr.feed(RegisterStart{DisplayName: name, PublicKey: pub}).Body.(RegisterStartDTO); ok {
		tr.starts[name] = dto
		tr.name(dto.RegistrationID, name+"-registration")
		tr.name(dto.PartyID, name)
	}
}

func (tr *transcript) registerComplete(name string, bad bool) {
	_, priv, _ := ed25519.GenerateKey(deterministicReader(name))
	start := tr.starts[name]
	sigs := make([][]byte, len(start.Topology))
	for i, x := range start.Topology {
		sigs[i] = ed25519.Sign(priv, x.Hash)
		if bad {
			sigs[i] = ed25519.Sign(priv, []byte("not the topology"))
		}
	}
	key := "mk_" + name
	if dto, ok := tr.feed(RegisterComplete{RegistrationID: start.RegistrationID, Signatures: sigs, NewKeyHash: keyHash(key)}).Body.(RegisterCompleteDTO); ok {
		tr.h.keys[dto.PartyID] = priv
		tr.actors[name] = actor{dto.PartyID, key}
	}
}

// connect opens a stream socket of a; with cod it is opened with ?cancelOnDisconnect=true.
func (tr *transcript) connect(a actor, cod bool) {
	tr.h.socket++
	tr.feed(SocketOpened{Socket: tr.h.socket, KeyHash: keyHash(a.key), CancelOnDisconnect: cod})
}

// socketOf is the last socket the desk bound to a's party.
func (tr *transcript) socketOf(a actor) uint64 {
	var last uint64
	for id, s := range tr.h.d.Sockets {
		if s.PartyID == a.id && id > last {
			last = id
		}
	}
	if last == 0 {
		tr.h.t.Fatalf("%s has no socket", a.id)
	}
	return last
}

// ledgerAnswer answers (manual mode) the first queued call that matches op= and kind=:
// ok, fail=<category>, or lost (the call vanishes; a boot issues it again). With all, it
// answers every matching call, including matching calls the answers cause.
func (tr *transcript) ledgerAnswer(td *datadriven.TestData) {
	tr.ledgerAnswerOne(td)
	for td.HasArg("all") && tr.matching(td) {
		tr.ledgerAnswerOne(td)
	}
}

// matching tells whether a queued call matches op= and kind=.
func (tr *transcript) matching(td *datadriven.TestData) bool {
	op, kind := tr.arg(td, "op", ""), tr.arg(td, "kind", "")
	for _, c := range tr.h.queued {
		if (op == "" || string(c.Op) == op) && (kind == "" || commandKind(c) == kind) {
			return true
		}
	}
	return false
}

func (tr *transcript) ledgerAnswerOne(td *datadriven.TestData) {
	h := tr.h
	op, kind := tr.arg(td, "op", ""), tr.arg(td, "kind", "")
	for i, c := range h.queued {
		if op != "" && string(c.Op) != op || kind != "" && commandKind(c) != kind {
			continue
		}
		h.queued = append(h.queued[:i:i], h.queued[i+1:]...)
		switch {
		case td.HasArg("lost"):
			fmt.Fprintf(&tr.out, "ledger loses %s %s\n", c.Op, c.CommandID)
		case td.HasArg("fail"):
			cat := tr.arg(td, "fail", "")
			tr.answer(c, LedgerResult{CommandID: c.CommandID, Failure: &LedgerFailure{Category: cat, Message: "scripted " + cat}})
		default:
			tr.answer(c, h.ledger.answer(c, h.now))
		}
		tr.answerQueued()
		return
	}
	var queued []string
	for _, c := range h.queued {
		queued = append(queued, fmt.Sprintf("%s %s (%s)", c.Op, c.CommandID, commandKind(c)))
	}
	h.t.Fatalf("%s: no queued ledger call matches op=%q kind=%q; queued: %s", td.Pos, op, kind, strings.Join(queued, ", "))
}

// commandKind names the command of a call: allocate, cancel, settle, transfer, accept, preapproval.
func commandKind(c LedgerCall) string {
	switch cmd := c.Command; {
	case cmd == nil:
		return ""
	case cmd.Allocate != nil:
		return "allocate"
	case cmd.CancelAllocation != nil:
		return "cancel"
	case cmd.Settle != nil:
		return "settle"
	case cmd.Transfer != nil:
		return "transfer"
	case cmd.AcceptTransfer != nil:
		return "accept"
	}
	return "preapproval"
}

// read runs a query as a party and prints its reply.
func (tr *transcript) read(td *datadriven.TestData) {
	a := tr.who(td, "by")
	var q Query
	switch what := tr.arg(td, "what", ""); what {
	case "rfqs":
		q = QRfqMine{}
	case "incoming":
		q = QRfqIncoming{}
	case "history":
		q = QRfqHistory{Limit: 50}
	case "trades":
		q = QTrades{Limit: 50}
	case "maker-trades":
		q = QMakerTrades{Limit: 50}
	case "pending":
		q = QTxPending{}
	case "status":
		q = QMakerStatus{}
	case "config":
		q = QConfig{}
	case "scorecard":
		q = QScorecard{Window: tr.arg(td, "window", DefaultScoreWindow)}
	case "desk":
		q = QDesk{}
	case "protection":
		q = QProtection{}
	default:
		tr.h.t.Fatalf("%s: unknown read %q", td.Pos, what)
	}
	r := Read(tr.h.d, tr.h.now, keyHash(a.key), q)
	tr.out.WriteString(DescribeOutputs(Outputs{Replies: []Reply{r}}))
}

// state prints the state of named entities.
func (tr *transcript) state(td *datadriven.TestData) {
	d := tr.h.d
	for _, a := range td.CmdArgs {
		id := tr.ids[a.Key]
		switch {
		case d.RFQs[id] != nil:
			fmt.Fprintf(&tr.out, "%s: rfq %s\n", a.Key, d.RFQs[id].State)
		case d.Quotes[id] != nil:
			fmt.Fprintf(&tr.out, "%s: quote %s\n", a.Key, d.Quotes[id].State)
		case d.Trades[id] != nil:
			fmt.Fprintf(&tr.out, "%s: trade %s\n", a.Key, d.Trades[id].State)
		default:
			fmt.Fprintf(&tr.out, "%s: gone\n", a.Key)
		}
	}
}
