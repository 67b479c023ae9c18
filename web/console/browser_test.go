//go:build browser

package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/internal/browsertest"
	"pgregory.net/rapid"
)

// keysPage opens the console's origin in a headless Chromium, so that the page's modules
// can be imported by the tests' scripts.
func keysPage(t *testing.T) *browsertest.Page {
	t.Helper()
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := browsertest.Start(t)
	p := b.NewPage("keys")
	p.Run(t, "open the console", 20*time.Second, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady(chromedp.CSS("body[data-ready]")))
	return p
}

// eval runs an async function body that may use `k` (keys.js) and decodes its result.
func eval[T any](t *testing.T, p *browsertest.Page, body string) T {
	t.Helper()
	js := `(async () => { const k = await import("/console/keys.js"); ` + body + ` })()`
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%v\nscript: %s", err, body)
	}
	return v
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestBrowserSignatureVerifiesInGo: a key made by the page's WebCrypto signs hashes the
// test chooses (wire form, base64); Go's crypto/ed25519 verifies each signature over the
// RAW hash bytes, and the page's fingerprint is client.Fingerprint of the same key. A
// signature over the base64 text instead would fail here.
func TestBrowserSignatureVerifiesInGo(t *testing.T) {
	p := keysPage(t)
	hashes := [][]byte{make([]byte, 32), {0x01}, make([]byte, 68)}
	for _, h := range hashes[1:] {
		_, _ = rand.Read(h)
	}
	sum := sha256.Sum256([]byte("a prepared transaction"))
	hashes[0] = sum[:]
	wire := make([]string, len(hashes))
	for i, h := range hashes {
		wire[i] = b64(h)
	}
	arg, _ := json.Marshal(wire)
	out := eval[struct {
		Pub  string   `json:"pub"`
		FP   string   `json:"fp"`
		Sigs []string `json:"sigs"`
	}](t, p, `const pair = await k.generateKeyPair(); const raw = await k.publicKeyRaw(pair.publicKey);
		const sigs = []; for (const h of `+string(arg)+`) sigs.push(await k.signHash(pair.privateKey, h));
		return {pub: k.toB64(raw), fp: await k.fingerprint(raw), sigs};`)
	pub, err := base64.StdEncoding.DecodeString(out.Pub)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("public key %q: %v", out.Pub, err)
	}
	if want := client.Fingerprint(pub); out.FP != want {
		t.Fatalf("page fingerprint %s, Go %s", out.FP, want)
	}
	for i, s := range out.Sigs {
		sig, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("signature %d: %v", i, err)
		}
		if !ed25519.Verify(pub, hashes[i], sig) {
			t.Fatalf("signature %d does not verify over the raw hash bytes", i)
		}
	}
}

// TestBrowserSignsLikeGo: the page rebuilds a key from a seed Go made (the restore path)
// and its signatures are byte for byte client.SignHash's (Ed25519 is deterministic);
// verifyPartyId accepts the party id Go derives and refuses another key's.
func TestBrowserSignsLikeGo(t *testing.T) {
	p := keysPage(t)
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed)
	key := ed25519.NewKeyFromSeed(seed)
	hash := b64([]byte("hash bytes the desk prepared"))
	want, err := client.SignHash(key, hash)
	if err != nil {
		t.Fatal(err)
	}
	party := "me::" + client.Fingerprint(key.Public().(ed25519.PublicKey))
	other := "me::" + client.Fingerprint(make([]byte, 32))
	got := eval[[]string](t, p, fmt.Sprintf(`const pair = await k.keyPairFromSeed(k.fromB64(%q));
		const raw = await k.publicKeyRaw(pair.publicKey);
		await k.verifyPartyId(%q, raw);
		let refused = "no";
		try { await k.verifyPartyId(%q, raw); } catch (e) { refused = e.message; }
		return [await k.signHash(pair.privateKey, %q), refused];`, b64(seed), party, other, hash))
	if got[0] != want {
		t.Fatalf("page signature %s, Go %s", got[0], want)
	}
	if !strings.Contains(got[1], "not bound") {
		t.Fatalf("another key's party id: %q", got[1])
	}
}

// backupFile is the backup's JSON, as far as Go opens it.
type backupFile struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	PartyID string `json:"partyId"`
	KDF     struct {
		Iterations int    `json:"iterations"`
		Salt       string `json:"salt"`
	} `json:"kdf"`
	Cipher struct {
		IV string `json:"iv"`
	} `json:"cipher"`
	Ciphertext string `json:"ciphertext"`
}

// TestBackupRoundTrip: the page exports an identity sealed with a passphrase; importing it
// with the passphrase gives back the same party, API key and key (it signs the same); a
// wrong passphrase and an altered file are refused; and Go opens the file with PBKDF2 and
// AES-GCM to a seed whose public key is the page's, so the format is what it says.
func TestBackupRoundTrip(t *testing.T) {
	p := keysPage(t)
	const pass = "correct horse battery"
	out := eval[struct {
		File, Pub, Sig, Sig2, Party, APIKey, Wrong, Tampered string
	}](t, p, `const pair = await k.generateKeyPair(); const raw = await k.publicKeyRaw(pair.publicKey);
		const id = {partyId: "me::" + await k.fingerprint(raw), hint: "me", apiKey: "mk_test", keys: pair};
		const file = await k.exportBackup(id, "`+pass+`");
		const back = await k.importBackup(file, "`+pass+`");
		const h = k.toB64(new Uint8Array([1, 2, 3]));
		const err = async (f) => { try { await f(); return "accepted"; } catch (e) { return e.message; } };
		const f = JSON.parse(file); f.partyId = "other::" + f.partyId.split("::")[1];
		return {File: file, Pub: k.toB64(raw), Sig: await k.signHash(pair.privateKey, h), Sig2: await k.signHash(back.keys.privateKey, h),
			Party: back.partyId, APIKey: back.apiKey,
			Wrong: await err(() => k.importBackup(file, "not the passphrase")),
			Tampered: await err(() => k.importBackup(JSON.stringify(f), "`+pass+`"))};`)
	pub, _ := base64.StdEncoding.DecodeString(out.Pub)
	if out.Party != "me::"+client.Fingerprint(pub) || out.APIKey != "mk_test" || out.Sig != out.Sig2 {
		t.Fatalf("restored %+v", out)
	}
	if out.Wrong != "wrong passphrase or damaged file" || out.Tampered != "wrong passphrase or damaged file" {
		t.Fatalf("wrong passphrase: %q, altered header: %q", out.Wrong, out.Tampered)
	}
	if strings.Contains(out.File, "mk_test") {
		t.Fatal("the API key is in the backup file in clear")
	}

	var f backupFile
	if err := json.Unmarshal([]byte(out.File), &f); err != nil {
		t.Fatal(err)
	}
	salt, _ := base64.StdEncoding.DecodeString(f.KDF.Salt)
	iv, _ := base64.StdEncoding.DecodeString(f.Cipher.IV)
	sealed, _ := base64.StdEncoding.DecodeString(f.Ciphertext)
	key, err := pbkdf2.Key(sha256.New, pass, salt, f.KDF.Iterations, 32)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCM(block)
	ad, _ := json.Marshal(struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
		PartyID string `json:"partyId"`
	}{f.Format, f.Version, f.PartyID})
	plain, err := gcm.Open(nil, iv, sealed, ad)
	if err != nil {
		t.Fatalf("Go cannot open the backup: %v", err)
	}
	var inner struct {
		PartyID string `json:"partyId"`
		Seed    []byte `json:"seed"`
	}
	if err := json.Unmarshal(plain, &inner); err != nil {
		t.Fatal(err)
	}
	if got := ed25519.NewKeyFromSeed(inner.Seed).Public().(ed25519.PublicKey); !got.Equal(ed25519.PublicKey(pub)) || inner.PartyID != f.PartyID {
		t.Fatalf("the seed in the backup gives another key (%x, want %x)", got, pub)
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %q", errs)
	}
}

// TestErrorsInThePersonsTerms: a refusal reads as a sentence, then the desk's message, then
// the HTTP status and code; an unknown code falls back on the status; no answer at all says
// the desk cannot be reached.
func TestErrorsInThePersonsTerms(t *testing.T) {
	p := keysPage(t)
	js := `(async () => { const { DeskError } = await import("/console/api.js");
		return [new DeskError(409, "INSUFFICIENT_FUNDS", "needs 10 usdcx", "POST", "/rfq").explain(),
			new DeskError(404, "", "no such quote", "POST", "/quote/q/accept").explain(),
			new DeskError(422, "SOMETHING_NEW", "x", "POST", "/rfq").explain(),
			new DeskError(0, "", "Failed to fetch", "GET", "/balances").explain()]; })()`
	got, err := chromedp.Run(p.Ctx, chromedp.Evaluate[[]string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Not enough funds for this: needs 10 usdcx (HTTP 409 INSUFFICIENT_FUNDS)",
		"Not found (it may have expired or been withdrawn): no such quote (HTTP 404)",
		"The desk could not process this: x (HTTP 422 SOMETHING_NEW)",
		"The desk cannot be reached: Failed to fetch (no answer)",
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("explained %q, want %q", got, want)
		}
	}
}

// TestBrowserSignsAnyHashRaw is the law behind TestBrowserSignatureVerifiesInGo, for hashes
// rapid draws (any length, any bytes): the page's signature of the wire form verifies with
// crypto/ed25519 over the decoded bytes, under the page's key.
func TestBrowserSignsAnyHashRaw(t *testing.T) {
	p := keysPage(t)
	pubB64 := eval[string](t, p, `window.pair = await k.generateKeyPair(); return k.toB64(await k.publicKeyRaw(window.pair.publicKey));`)
	pub, err := base64.StdEncoding.DecodeString(pubB64)
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		hash := rapid.SliceOfN(rapid.Byte(), 1, 128).Draw(rt, "hash")
		sigB64, err := chromedp.Run(p.Ctx, chromedp.Evaluate[string](
			fmt.Sprintf(`(async () => (await import("/console/keys.js")).signHash(window.pair.privateKey, %q))()`, b64(hash)),
			chromedp.EvalAwaitPromise))
		if err != nil {
			rt.Fatal(err)
		}
		sig, err := base64.StdEncoding.DecodeString(sigB64)
		if err != nil || !ed25519.Verify(pub, hash, sig) {
			rt.Fatalf("signature %q of %x does not verify (%v)", sigB64, hash, err)
		}
	})
}
