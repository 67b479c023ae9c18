package machine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Idempotency keys (EXTENSIONS.md, "Idempotency-Key on every write"; docs/api.md).
//
// A write that carries an Idempotency-Key reaches the desk as an Idempotent input: the
// command itself wrapped with the key, the method and path of the request and the SHA-256
// of its body. The desk keeps a record per key and per scope (the caller's party, or the
// client address group of an unauthenticated registration call): the first attempt runs
// the command and the record takes the answer the desk gives it (at once, or later for a
// request held on the ledger); a repeat with the same method, path and body answers that
// answer again, marked replayed, and changes nothing; a repeat with another method, path
// or body is 422 IDEMPOTENCY_KEY_REUSED; a repeat while the first is unanswered is 409
// RETRY_LATER. The record is journaled with its input and carried by the snapshot, so a
// restart answers alike. Answers that ask for a retry (5xx, 429, RETRY_LATER) are not
// recorded (the key runs anew), nor is a request that a restart ended unanswered.

// Idempotency limits.
const (
	// MaxIdempotencyKeysPerScope bounds the records kept per party (or per client address
	// group); at the bound the oldest record is evicted first.
	MaxIdempotencyKeysPerScope = 10000
	// MaxIdempotencyAddressScopes bounds the client address groups that hold records of
	// unauthenticated registration calls; at the bound the group whose newest record is
	// the oldest is evicted with its records.
	MaxIdempotencyAddressScopes = 4096
	// MaxIdempotencyKeyLen is the longest Idempotency-Key accepted.
	MaxIdempotencyKeyLen = 64
	// DefaultIdempotencyRetention is how long a record is kept when the configuration
	// names no idempotency_retention.
	DefaultIdempotencyRetention = 24 * time.Hour
)

// CodeIdempotencyKeyReused is the code of the 422 for a key sent again with another
// method, path or body.
const CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"

// ValidIdempotencyKey reports whether s is a well-formed Idempotency-Key: 1 to 64 of
// A-Z, a-z, 0-9, '_', '.', ':' and '-'.
func ValidIdempotencyKey(s string) bool {
	if len(s) == 0 || len(s) > MaxIdempotencyKeyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// Idempotent is a write that carried an Idempotency-Key: the command with the key, the
// request's method and path, the hex SHA-256 of its body and, for an unauthenticated
// registration call, the caller's client address group (Address; a keyed call is scoped
// by its party, which the desk resolves from the command's key hash).
type Idempotent struct {
	Key      string   `json:"key"`
	Address  string   `json:"address,omitempty"`
	Method   string   `json:"method"`
	Path     string   `json:"path"`
	BodyHash string   `json:"bodyHash"`
	Cmd      Command_ `json:"cmd"`
}

// Kind names the input in the journal.
func (Idempotent) Kind() string { return "idempotent" }

func (c Idempotent) header() Req {
	if c.Cmd == nil {
		return Req{}
	}
	return c.Cmd.header()
}

// IdemRecord is the record of one Idempotency-Key: what the first attempt was and, once
// answered (Done), its answer: Status and Body (the JSON of the reply's body; nil for 204)
// or Err.
type IdemRecord struct {
	Key      string    `json:"key"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	BodyHash string    `json:"bodyHash"`
	At       time.Time `json:"at"`
	Seq      uint64    `json:"seq"` // the first attempt's input
	Done     bool      `json:"done"`
	Status   int       `json:"status,omitempty"`
	Body     []byte    `json:"body,omitempty"`
	Err      *APIError `json:"err,omitempty"`
}

// IdemScope holds the records of one party or client address group, oldest first (for
// retention and eviction).
type IdemScope struct {
	Records []*IdemRecord `json:"records"`
	// byKey indexes Records by key; derived, not state (built on first use).
	byKey map[string]*IdemRecord
}

// get returns the record of a key, if any.
func (s *IdemScope) get(key string) *IdemRecord {
	if s.byKey == nil {
		s.byKey = make(map[string]*IdemRecord, len(s.Records))
		for _, r := range s.Records {
			if r != nil {
				s.byKey[r.Key] = r
			}
		}
	}
	return s.byKey[key]
}

// newest is the time of the scope's newest record (zero when it has none).
func (s *IdemScope) newest() time.Time {
	if n := len(s.Records); n > 0 && s.Records[n-1] != nil {
		return s.Records[n-1].At
	}
	return time.Time{}
}

// idemRef names a record in flight.
type idemRef struct{ scope, key string }

// idemAddressPrefix marks the scope of a client address group apart from party ids.
const idemAddressPrefix = "addr:"

// idempotencyRetention is the retention in force.
func (c *Config) idempotencyRetention() time.Duration {
	if c.IdempotencyRetention > 0 {
		return c.IdempotencyRetention
	}
	return DefaultIdempotencyRetention
}

var (
	errIdemBadKey    = badRequest("Idempotency-Key must be 1 to %d letters, digits, '_', '.', ':' or '-'", MaxIdempotencyKeyLen)
	errIdemNoCommand = badRequest("an idempotent request without a command")
	errIdemSecret    = badRequest("Idempotency-Key is not accepted here: the answer carries a new API key, which the desk never stores, so it cannot be answered again")
	errIdemInFlight  = apiErr(http.StatusConflict, CodeRetryLater, "a request with this Idempotency-Key is still in progress; retry later")
	errIdemReused    = apiErr(http.StatusUnprocessableEntity, CodeIdempotencyKeyReused, "this Idempotency-Key was used with another method, path or body")
)

// idempotent applies a write that carried an Idempotency-Key.
func (a *applier) idempotent(in Idempotent) {
	if in.Cmd == nil {
		a.refuse(errIdemNoCommand)
		return
	}
	var scope string
	switch in.Cmd.(type) {
	case RegisterComplete, RotateKey:
		a.refuse(errIdemSecret)
		return
	case IssueStreamTicket:
		if _, ok := a.d.partyByKey(in.Cmd.header().KeyHash); !ok {
			a.refuse(errUnknownKey) // authenticate first
			return
		}
		a.refuse(errIdemTicket)
		return
	case RegisterStart, ChallengeRequest:
		scope = idemAddressPrefix + in.Address
	default:
		caller, ok := a.d.partyByKey(in.Cmd.header().KeyHash)
		if !ok {
			a.refuse(errUnknownKey)
			return
		}
		scope = caller.ID
	}
	if !ValidIdempotencyKey(in.Key) {
		a.refuse(errIdemBadKey)
		return
	}
	s := a.d.idemScope(scope, false)
	if s != nil {
		// A lookup changes nothing; an expired record is as good as none.
		if r := s.get(in.Key); r != nil && a.d.Now.Sub(r.At) < a.d.Cfg.idempotencyRetention() {
			switch {
			case r.Method != in.Method || r.Path != in.Path || r.BodyHash != in.BodyHash:
				a.refuse(errIdemReused)
			case !r.Done:
				a.refuse(errIdemInFlight)
			default:
				a.replay(r)
			}
			return
		}
	}
	if s == nil {
		s = a.d.idemScope(scope, true)
	}
	// Expired records go first: they are the oldest, the key's own among them if it had one.
	a.d.idemExpire(s)
	if len(s.Records) >= MaxIdempotencyKeysPerScope {
		a.d.idemDropAt(s, 0)
	}
	r := &IdemRecord{Key: in.Key, Method: in.Method, Path: in.Path, BodyHash: in.BodyHash, At: a.d.Now, Seq: a.seq}
	s.Records = append(s.Records, r)
	s.get(in.Key) // builds the index when it was not yet
	s.byKey[in.Key] = r
	if a.d.idemInFlight == nil {
		a.d.idemInFlight = map[uint64]idemRef{}
	}
	a.d.idemInFlight[a.seq] = idemRef{scope: scope, key: in.Key}
	if a.quiet {
		// A quiet apply (a replay) leaves some answers out altogether; the record needs
		// the answer, so the command runs loud and ApplyQuiet drops the outputs.
		a.quiet = false
		defer func() { a.quiet = true }()
	}
	a.command(in.Cmd)
}

// replay answers the current request with a record's answer again.
func (a *applier) replay(r *IdemRecord) {
	if a.quiet {
		return
	}
	rep := Reply{Seq: a.seq, Status: r.Status, Replayed: true}
	if r.Err != nil {
		e := *r.Err
		rep.Err = &e
	} else if r.Body != nil {
		rep.Body = json.RawMessage(r.Body)
	}
	a.out.Replies = append(a.out.Replies, rep)
}

// idemWants reports whether the answer to request seq must be built even in a quiet
// apply: its record keeps it.
func (a *applier) idemWants(seq uint64) bool {
	_, ok := a.d.idemInFlight[seq]
	return ok
}

// idemAnswered records the answer the desk gives request seq, when it carried a key. An
// answer that asks for a retry (transientAnswer) is not recorded: the record goes, and the
// key runs anew.
func (a *applier) idemAnswered(seq uint64, status int, body any, err *APIError) {
	ref, ok := a.d.idemInFlight[seq]
	if !ok {
		return
	}
	delete(a.d.idemInFlight, seq)
	s := a.d.Idem[ref.scope]
	if s == nil {
		return
	}
	r := s.get(ref.key)
	if r == nil || r.Seq != seq {
		return
	}
	if transientAnswer(status, err) {
		a.d.idemDrop(ref.scope, s, ref.key)
		return
	}
	r.Done, r.Status = true, status
	if err != nil {
		e := *err
		r.Err = &e
		return
	}
	if status == http.StatusNoContent {
		return
	}
	b, merr := json.Marshal(body)
	if merr != nil {
		// A body the desk built that cannot be encoded is answered 500 by the transport;
		// it is not recorded, like any 5xx.
		a.d.idemDrop(ref.scope, s, ref.key)
		return
	}
	r.Body = b
}

// transientAnswer reports an answer that tells the client to try again later: a 5xx, a 429
// or any RETRY_LATER. It is not recorded, so that the retry it asks for, under the same
// key, runs anew instead of getting the same answer for as long as the key lives.
func transientAnswer(status int, err *APIError) bool {
	if err != nil && (err.Code == CodeRetryLater || err.Status >= 500 || err.Status == http.StatusTooManyRequests) {
		return true
	}
	return status >= 500 || status == http.StatusTooManyRequests
}

// idemBoot ends the records of the requests a restart undid (undone: a quote submission or
// an accept never answered), so that a retry under their key runs anew. The records of
// the requests whose flow carries on after the restart (a withdrawal, a deposit, a faucet
// draw, a registration, an execute) stay unanswered: a repeat is 409 RETRY_LATER until the
// flow's answer is recorded (idemOrphanAnswered), or, if the flow ends without one, until
// idemSweepOrphans lets the key run anew. Dropping them here let a retry run the write a
// second time while the first still went on (a review found a second withdrawal).
func (a *applier) idemBoot(undone []uint64) {
	for _, seq := range undone {
		a.idemForget(seq)
	}
}

// idemForget drops the unanswered record of request seq, if it has one: its key runs anew.
func (a *applier) idemForget(seq uint64) {
	ref, ok := a.d.idemInFlight[seq]
	if !ok {
		return
	}
	delete(a.d.idemInFlight, seq)
	if s := a.d.Idem[ref.scope]; s != nil {
		if r := s.get(ref.key); r != nil && r.Seq == seq {
			a.d.idemDrop(ref.scope, s, ref.key)
		}
	}
}

// idemOrphanAnswered records the answer a flow reached for a keyed request that a restart
// left without a client (no longer held): the answer a repeat of its key gets.
func (a *applier) idemOrphanAnswered(seq uint64, status int, body any, err *APIError) {
	if len(a.d.idemInFlight) > 0 {
		a.idemAnswered(seq, status, body, err)
	}
}

// idemSweepOrphans lets the key of an unanswered request run anew once nothing can answer
// it any more: the request is not held and no ledger call of its flow is pending (the flow
// ended without an answer, as a withdrawal the ledger refused after a restart does, which
// took no effect).
func (a *applier) idemSweepOrphans() {
	if len(a.d.idemInFlight) == 0 {
		return
	}
	var orphans []uint64
	for seq := range a.d.idemInFlight { // collected, then sorted: the order decides nothing
		if _, held := a.d.Held[seq]; !held {
			orphans = append(orphans, seq)
		}
	}
	if len(orphans) == 0 {
		return
	}
	slices.Sort(orphans)
	pending := map[uint64]bool{}
	for _, c := range a.d.Pending { // a set of request numbers: the order decides nothing
		if c.ReqSeq != 0 {
			pending[c.ReqSeq] = true
		}
	}
	for _, seq := range orphans {
		if !pending[seq] {
			a.idemForget(seq)
		}
	}
}

// idemScope returns a scope's records, creating them when create is set (evicting an
// address group at MaxIdempotencyAddressScopes).
func (d *Desk) idemScope(scope string, create bool) *IdemScope {
	if s := d.Idem[scope]; s != nil || !create {
		return s
	}
	if d.Idem == nil {
		d.Idem = map[string]*IdemScope{}
	}
	if len(scope) >= len(idemAddressPrefix) && scope[:len(idemAddressPrefix)] == idemAddressPrefix {
		d.idemEvictAddress()
	}
	s := &IdemScope{byKey: map[string]*IdemRecord{}}
	d.Idem[scope] = s
	return s
}

// idemEvictAddress makes room for one more client address group: at the bound, the group
// whose newest record is the oldest goes (ties: the smaller name).
func (d *Desk) idemEvictAddress() {
	n := 0
	victim, oldest := "", time.Time{}
	for _, name := range sortedKeys(d.Idem) {
		if !strings.HasPrefix(name, idemAddressPrefix) {
			continue
		}
		n++
		if at := d.Idem[name].newest(); victim == "" || at.Before(oldest) {
			victim, oldest = name, at
		}
	}
	if n < MaxIdempotencyAddressScopes {
		return
	}
	for _, r := range d.Idem[victim].Records {
		if r != nil && !r.Done {
			delete(d.idemInFlight, r.Seq)
		}
	}
	delete(d.Idem, victim)
}

// idemExpire drops a scope's records older than the retention (they are oldest first).
func (d *Desk) idemExpire(s *IdemScope) {
	ret := d.Cfg.idempotencyRetention()
	n := 0
	for ; n < len(s.Records); n++ {
		r := s.Records[n]
		if r != nil && d.Now.Sub(r.At) < ret {
			break
		}
		d.idemForget(s, r)
	}
	if n > 0 {
		s.Records = s.Records[n:]
	}
}

// idemForget removes a record from the indexes (not from Records).
func (d *Desk) idemForget(s *IdemScope, r *IdemRecord) {
	if r == nil {
		return
	}
	if !r.Done {
		delete(d.idemInFlight, r.Seq)
	}
	if s.get(r.Key) == r {
		delete(s.byKey, r.Key)
	}
}

// idemDropAt removes the record at index i of a scope.
func (d *Desk) idemDropAt(s *IdemScope, i int) {
	d.idemForget(s, s.Records[i])
	if i == 0 {
		s.Records[0] = nil
		s.Records = s.Records[1:] // the eviction at the bound: O(1)
		return
	}
	s.Records = slices.Delete(s.Records, i, i+1)
}

// idemDrop removes the record of a key; a scope left empty goes.
func (d *Desk) idemDrop(scope string, s *IdemScope, key string) {
	r := s.get(key)
	if r == nil {
		return
	}
	if i := slices.Index(s.Records, r); i >= 0 {
		d.idemDropAt(s, i)
	}
	if len(s.Records) == 0 {
		delete(d.Idem, scope)
	}
}

// IdempotencyRecords counts the records the desk holds (for tests and the benchmark).
func (d *Desk) IdempotencyRecords() int {
	n := 0
	for _, s := range d.Idem {
		n += len(s.Records)
	}
	return n
}

// ---- journal and snapshot ----

// encodeIdempotent writes the wrapper's fields, then the command's kind and body.
func encodeIdempotent(e *encoder, v Idempotent) error {
	if v.Cmd == nil {
		return fmt.Errorf("idempotent input without a command")
	}
	if _, nested := v.Cmd.(Idempotent); nested {
		return fmt.Errorf("idempotent input wrapping another")
	}
	e.Str(v.Key)
	e.Str(v.Address)
	e.Str(v.Method)
	e.Str(v.Path)
	e.Str(v.BodyHash)
	e.Str(v.Cmd.Kind())
	return encodeInput(e, v.Cmd)
}

// decodeIdempotent reads what encodeIdempotent wrote.
func decodeIdempotent(d *decoder, version byte) (Input, error) {
	v := Idempotent{Key: d.Str(), Address: d.Str(), Method: d.Str(), Path: d.Str(), BodyHash: d.Str()}
	kind := d.Str()
	if d.Err() != nil {
		return nil, fmt.Errorf("decode idempotent input: %w", d.Err())
	}
	if kind == (Idempotent{}).Kind() {
		return nil, fmt.Errorf("decode idempotent input: it wraps another")
	}
	in, err := decodeInput(d, kind, version)
	if err != nil {
		return nil, err
	}
	cmd, ok := in.(Command_)
	if !ok {
		return nil, fmt.Errorf("decode idempotent input: %q is not a command", kind)
	}
	v.Cmd = cmd
	return v, nil
}

// writeIdemSection writes the records (snapshot version 3): the scopes in ascending name
// order, each with its records oldest first.
func writeIdemSection(e *encoder, idem map[string]*IdemScope) {
	writePtrMap(e, idem, func(e *encoder, s *IdemScope) {
		writeSlice(e, s.Records, func(e *encoder, rp **IdemRecord) {
			r := *rp
			e.Bool(r != nil)
			if r == nil {
				return
			}
			e.Str(r.Key)
			e.Str(r.Method)
			e.Str(r.Path)
			e.Str(r.BodyHash)
			e.Time(r.At)
			e.Uvarint(r.Seq)
			e.Bool(r.Done)
			e.Varint(int64(r.Status))
			e.Bytes(r.Body)
			e.Bool(r.Err != nil)
			if r.Err != nil {
				writeApiError(e, r.Err)
			}
		})
	})
}

// readIdemSection reads what writeIdemSection wrote into d, with the in-flight index.
func readIdemSection(dec *decoder, d *Desk) error {
	d.Idem = readMap(dec, (*decoder).Str, func(dec *decoder) *IdemScope {
		return &IdemScope{Records: readSlice(dec, func(dec *decoder) *IdemRecord {
			if !dec.Bool() {
				return nil
			}
			r := &IdemRecord{Key: dec.Str(), Method: dec.Str(), Path: dec.Str(), BodyHash: dec.Str(), At: dec.Time(), Seq: dec.Uvarint(), Done: dec.Bool()}
			r.Status = int(dec.Varint())
			r.Body = dec.Bytes()
			if dec.Bool() {
				r.Err = readApiError(dec)
			}
			return r
		})}
	})
	for _, name := range sortedKeys(d.Idem) {
		s := d.Idem[name]
		if s == nil {
			continue
		}
		for _, r := range s.Records {
			if r != nil && !r.Done {
				if d.idemInFlight == nil {
					d.idemInFlight = map[uint64]idemRef{}
				}
				d.idemInFlight[r.Seq] = idemRef{scope: name, key: r.Key}
			}
		}
	}
	return dec.Err()
}
