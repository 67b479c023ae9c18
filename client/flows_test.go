package client

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeDesk emulates the desk's registration, key rotation, status and execute behaviour,
// verifying every signature the way the desk does (Ed25519 over raw hash bytes, over the
// UTF-8 challenge).
type fakeDesk struct {
	t *testing.T

	mu         sync.Mutex
	seq        int
	regs       map[string]fakeReg // by registration id
	keys       map[string]string  // API key -> party id
	pubs       map[string][]byte  // party id -> public key
	challenges map[string]string  // challenge -> party id
	actions    map[string][]byte  // action id -> raw hash
	batches    []int              // sizes of execute batches
	failBatch  int                // 1-based batch number answered 503 (0: none)
	partyIDFor func(hint string, pub []byte) string
}

type fakeReg struct {
	partyID, hint string
	pub           []byte
	hashes        [][]byte
}

// newSigner is a fake desk with a client registered on it as "Signer".
func newSigner(t *testing.T) (*fakeDesk, *httptest.Server, *Client) {
	t.Helper()
	d, srv := newFakeDesk(t)
	c, _ := New(srv.URL)
	if _, err := c.Register(context.Background(), "Signer"); err != nil {
		t.Fatal(err)
	}
	return d, srv, c
}

func newFakeDesk(t *testing.T) (*fakeDesk, *httptest.Server) {
	d := &fakeDesk{t: t, regs: map[string]fakeReg{}, keys: map[string]string{}, pubs: map[string][]byte{},
		challenges: map[string]string{}, actions: map[string][]byte{}}
	d.partyIDFor = func(hint string, pub []byte) string {
		// Canton's key fingerprint, computed here apart from the client's Fingerprint.
		sum := sha256.Sum256(append([]byte{0, 0, 0, 12}, pub...))
		return hint + "::1220" + hex.EncodeToString(sum[:])
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /maker/register/start", d.registerStart)
	mux.HandleFunc("POST /maker/register/complete", d.registerComplete)
	mux.HandleFunc("POST /maker/challenge", d.challenge)
	mux.HandleFunc("POST /maker/api-key/rotate", d.rotate)
	mux.HandleFunc("GET /maker/status", d.status)
	mux.HandleFunc("POST /tx/execute", d.execute)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return d, srv
}

func (d *fakeDesk) next(prefix string) string {
	d.seq++
	return fmt.Sprintf("%s%d", prefix, d.seq)
}

// decode decodes a body strictly (unknown fields are 400), as the desk does.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.Header.Get(APIKeyHeader) != "" && strings.HasPrefix(r.URL.Path, "/maker/") &&
		(strings.Contains(r.URL.Path, "register") || strings.Contains(r.URL.Path, "challenge") || strings.Contains(r.URL.Path, "rotate")) {
		writeErr(w, 400, "X-API-Key sent on an unauthenticated call")
		return false
	}
	if r.Header.Get("Content-Type") != "application/json" {
		writeErr(w, 400, "content type")
		return false
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, 400, err.Error())
		return false
	}
	return true
}

func writeErr(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (d *fakeDesk) registerStart(w http.ResponseWriter, r *http.Request) {
	var req struct{ DisplayName, PublicKey string }
	if !decode(w, r, &req) {
		return
	}
	pub, err := base64.StdEncoding.Strict().DecodeString(req.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize || req.DisplayName == "" {
		writeErr(w, 400, "bad public key or name")
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	hint := strings.ToLower(strings.ReplaceAll(req.DisplayName, " ", "-")) + "-abc123"
	reg := fakeReg{hint: hint, pub: pub, partyID: d.partyIDFor(hint, pub)}
	var topo []TopologyTx
	for i := range 2 {
		h := sha256.Sum256([]byte(fmt.Sprintf("topology %s %d", hint, i)))
		reg.hashes = append(reg.hashes, h[:])
		topo = append(topo, TopologyTx{Hash: base64.StdEncoding.EncodeToString(h[:]), Description: fmt.Sprint("tx ", i)})
	}
	id := d.next("reg_")
	d.regs[id] = reg
	writeJSON(w, 200, map[string]any{"registrationId": id, "partyId": reg.partyID, "topology": topo})
}

func (d *fakeDesk) registerComplete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RegistrationID string
		Signatures     []string
	}
	if !decode(w, r, &req) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	reg, ok := d.regs[req.RegistrationID]
	if !ok {
		writeErr(w, 410, "registration expired")
		return
	}
	if len(req.Signatures) != len(reg.hashes) {
		writeErr(w, 400, "signature count")
		return
	}
	for i, s := range req.Signatures {
		sig, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || !ed25519.Verify(reg.pub, reg.hashes[i], sig) {
			writeErr(w, 401, "bad signature")
			return
		}
	}
	delete(d.regs, req.RegistrationID)
	key := d.next("mk_")
	d.keys[key] = reg.partyID
	d.pubs[reg.partyID] = reg.pub
	writeJSON(w, 200, map[string]any{"apiKey": key, "partyId": reg.partyID, "hint": reg.hint, "actions": []any{}})
}

func (d *fakeDesk) challenge(w http.ResponseWriter, r *http.Request) {
	var req struct{ PartyID string }
	if !decode(w, r, &req) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.pubs[req.PartyID]; !ok {
		writeErr(w, 404, "unknown party")
		return
	}
	ch := d.next("challenge-ü-")
	d.challenges[ch] = req.PartyID
	writeJSON(w, 200, map[string]string{"challenge": ch})
}

func (d *fakeDesk) rotate(w http.ResponseWriter, r *http.Request) {
	var req struct{ PartyID, Challenge, Signature string }
	if !decode(w, r, &req) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.challenges[req.Challenge] != req.PartyID {
		writeErr(w, 410, "challenge expired")
		return
	}
	delete(d.challenges, req.Challenge)
	sig, err := base64.StdEncoding.Strict().DecodeString(req.Signature)
	if err != nil || !ed25519.Verify(d.pubs[req.PartyID], []byte(req.Challenge), sig) {
		writeErr(w, 401, "bad signature")
		return
	}
	for k, p := range d.keys {
		if p == req.PartyID {
			delete(d.keys, k)
		}
	}
	key := d.next("mk_")
	d.keys[key] = req.PartyID
	writeJSON(w, 200, map[string]string{"apiKey": key})
}

// party authenticates a call; it answers 401 itself when the key is unknown.
func (d *fakeDesk) party(w http.ResponseWriter, r *http.Request) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.keys[r.Header.Get(APIKeyHeader)]
	if !ok {
		writeErr(w, 401, "unknown API key")
	}
	return p, ok
}

func (d *fakeDesk) status(w http.ResponseWriter, r *http.Request) {
	p, ok := d.party(w, r)
	if !ok {
		return
	}
	writeJSON(w, 200, MakerStatus{PartyID: p, Hint: strings.Split(p, "::")[0], ServiceActivated: true})
}

// addActions queues n actions with fresh hashes for the signing tests.
func (d *fakeDesk) addActions(n int) []SignAction {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []SignAction
	for range n {
		id := d.next("act_")
		h := sha256.Sum256([]byte(id))
		d.actions[id] = h[:]
		out = append(out, SignAction{ID: id, Kind: "hash", Purpose: PurposeAllocate, Hash: base64.StdEncoding.EncodeToString(h[:])})
	}
	return out
}

func (d *fakeDesk) execute(w http.ResponseWriter, r *http.Request) {
	p, ok := d.party(w, r)
	if !ok {
		return
	}
	var req struct{ Signatures []ActionSignature }
	if !decode(w, r, &req) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(req.Signatures) == 0 || len(req.Signatures) > MaxBatch {
		writeErr(w, 400, "batch size")
		return
	}
	d.batches = append(d.batches, len(req.Signatures))
	if len(d.batches) == d.failBatch {
		writeErr(w, 503, "ledger busy")
		return
	}
	results := []ExecuteResult{}
	for _, s := range req.Signatures {
		h, ok := d.actions[s.ActionID]
		sig, err := base64.StdEncoding.Strict().DecodeString(s.Signature)
		switch {
		case !ok:
			results = append(results, ExecuteResult{ActionID: s.ActionID, Status: ExecError, Error: "unknown action"})
		case err != nil || !ed25519.Verify(d.pubs[p], h, sig):
			results = append(results, ExecuteResult{ActionID: s.ActionID, Status: ExecError, Error: "bad signature"})
		default:
			delete(d.actions, s.ActionID)
			results = append(results, ExecuteResult{ActionID: s.ActionID, Status: ExecExecuted})
		}
	}
	writeJSON(w, 200, map[string]any{"results": results})
}

func TestRegisterThenRecoverKey(t *testing.T) {
	_, srv := newFakeDesk(t)
	ctx := context.Background()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Register(ctx, "Bob Bot")
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if !strings.HasPrefix(id.APIKey, "mk_") || id.Hint != "bob-bot-abc123" || id.BaseURL != srv.URL || len(id.PrivateKey) != 32 {
		t.Fatalf("identity %+v", id)
	}
	key, _ := id.Key()
	if !strings.HasSuffix(id.PartyID, "::"+Fingerprint(key.Public().(ed25519.PublicKey))) {
		t.Errorf("party id %q not bound to the key", id.PartyID)
	}
	if c.APIKey() != id.APIKey || c.PartyID() != id.PartyID || c.Hint() != id.Hint {
		t.Error("client did not adopt the identity")
	}
	st, err := c.Status(ctx)
	if err != nil || st.PartyID != id.PartyID || !st.ServiceActivated {
		t.Fatalf("status %+v %v", st, err)
	}

	// The key is lost: a fresh client from the saved identity minus its key recovers it.
	lost := *id
	lost.APIKey = "mk_lost"
	c2, err := FromIdentity(&lost, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Status(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("status with a lost key: %v", err)
	}
	newKey, err := c2.RecoverKey(ctx)
	if err != nil {
		t.Fatalf("RecoverKey: %v", err)
	}
	if newKey == id.APIKey || c2.APIKey() != newKey || c2.Identity().APIKey != newKey {
		t.Errorf("new key %q not adopted", newKey)
	}
	if _, err := c2.Status(ctx); err != nil {
		t.Errorf("status with the new key: %v", err)
	}
	if _, err := c.Status(ctx); Status(err) != 401 {
		t.Errorf("old key still works: %v", err)
	}
}

func TestRegisterWithOwnKey(t *testing.T) {
	_, srv := newFakeDesk(t)
	key := testPrivateKey(9)
	c, _ := New(srv.URL, WithPrivateKey(key))
	id, err := c.Register(context.Background(), "Own Key")
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := id.Key(); !k.Equal(key) {
		t.Error("Register replaced the client's key")
	}
}

func TestRegisterRefusesForeignPartyID(t *testing.T) {
	d, srv := newFakeDesk(t)
	d.partyIDFor = func(hint string, _ []byte) string { return hint + "::1220" + strings.Repeat("0", 64) }
	c, _ := New(srv.URL)
	if _, err := c.Register(context.Background(), "Bob"); err == nil || !strings.Contains(err.Error(), "not bound") {
		t.Fatalf("foreign party id accepted: %v", err)
	}
	if c.APIKey() != "" {
		t.Error("client adopted a key from a refused registration")
	}
}

// TestRegisterRefusesLegacyPartyID: a desk that still forms party ids the old way (the
// SHA-256 of the raw key alone) is refused with an error that names that form, and the
// client adopts nothing.
func TestRegisterRefusesLegacyPartyID(t *testing.T) {
	d, srv := newFakeDesk(t)
	d.partyIDFor = func(hint string, pub []byte) string {
		sum := sha256.Sum256(pub)
		return hint + "::1220" + hex.EncodeToString(sum[:])
	}
	c, _ := New(srv.URL)
	if _, err := c.Register(context.Background(), "Bob"); err == nil || !strings.Contains(err.Error(), "SHA-256 of the raw key") {
		t.Fatalf("old-form party id: %v, want a refusal naming the old form", err)
	}
	if c.APIKey() != "" || c.PartyID() != "" {
		t.Error("client adopted an identity from a refused registration")
	}
}

func TestRecoverKeyNeedsIdentity(t *testing.T) {
	_, srv := newFakeDesk(t)
	c, _ := New(srv.URL)
	if _, err := c.RecoverKey(context.Background()); err == nil {
		t.Error("RecoverKey without a key")
	}
	c, _ = New(srv.URL, WithPrivateKey(testPrivateKey(1)))
	if _, err := c.RecoverKey(context.Background()); err == nil {
		t.Error("RecoverKey without a party id")
	}
	c, _ = New(srv.URL, WithIdentity(&Identity{PartyID: "nobody::1220", PrivateKey: testPrivateKey(1).Seed()}))
	if _, err := c.RecoverKey(context.Background()); Status(err) != 404 {
		t.Errorf("unknown party: %v, want 404", err)
	}
}

func TestSignAndExecuteBatches(t *testing.T) {
	d, _, c := newSigner(t)
	ctx := context.Background()
	actions := d.addActions(120)
	bad := SignAction{ID: "act_bad", Hash: "not base64"}
	actions = append(actions[:60], append([]SignAction{bad}, actions[60:]...)...)
	unknown := d.addActions(1)
	d.mu.Lock()
	delete(d.actions, unknown[0].ID)
	d.mu.Unlock()
	actions = append(actions, unknown[0])

	results, err := c.SignAndExecute(ctx, actions)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(actions) {
		t.Fatalf("%d results for %d actions", len(results), len(actions))
	}
	if fmt.Sprint(d.batches) != "[50 50 21]" {
		t.Errorf("batches %v, want [50 50 21]", d.batches)
	}
	for i, r := range results {
		if r.ActionID != actions[i].ID {
			t.Fatalf("result %d is for %q, want %q", i, r.ActionID, actions[i].ID)
		}
		switch r.ActionID {
		case "act_bad":
			if r.OK() || r.Retryable || !strings.HasPrefix(r.Error, "client:") {
				t.Errorf("undecodable hash: %+v", r)
			}
		case unknown[0].ID:
			if r.OK() || r.Error != "unknown action" {
				t.Errorf("unknown action: %+v", r)
			}
		default:
			if !r.OK() {
				t.Errorf("entry %d: %+v", i, r)
			}
		}
	}
	if res, err := c.SignAndExecute(ctx, nil); err != nil || len(res) != 0 || len(d.batches) != 3 {
		t.Errorf("empty input: %v %v, batches %v", res, err, d.batches)
	}
}

func TestSignAndExecuteStopsOnFailedBatch(t *testing.T) {
	d, srv, c := newSigner(t)
	ctx := context.Background()
	d.failBatch = 2
	results, err := c.SignAndExecute(ctx, d.addActions(120))
	if Status(err) != 503 || !IsRetryable(err) {
		t.Fatalf("error %v, want the 503", err)
	}
	if len(results) != 50 || fmt.Sprint(d.batches) != "[50 50]" {
		t.Errorf("%d results, batches %v; want the first batch's 50 and no third call", len(results), d.batches)
	}
	for _, r := range results {
		if !r.OK() {
			t.Errorf("%+v", r)
		}
	}
	c2, _ := New(srv.URL)
	if _, err := c2.SignAndExecute(ctx, d.addActions(1)); err == nil {
		t.Error("signed without a key")
	}
}
