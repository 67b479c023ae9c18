//go:build browser

package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/deskco/rfqdesk/internal/browsertest"
)

// The console in a real browser (`make e2e-browser`): the desk binary on its default
// configuration (the house maker online), a headless Chromium, and every step done by
// clicking and typing in the page.

const step = 30 * time.Second

// consolePage opens the console in a fresh browser context and waits for its script.
func consolePage(t *testing.T, b *browsertest.Browser, base, name string) *browsertest.Page {
	t.Helper()
	p := b.NewPage(name)
	p.Run(t, "open the console", step, chromedp.Navigate(base+"/"), chromedp.WaitReady(chromedp.CSS("body[data-ready]")))
	return p
}

// register types a display name, clicks Register and waits for the party to show.
func register(t *testing.T, p *browsertest.Page, name string) string {
	t.Helper()
	p.Run(t, "register", step,
		chromedp.SendKeys(chromedp.ID("display-name"), name),
		chromedp.Click(chromedp.ID("register")),
		chromedp.WaitVisible(chromedp.ID("signed-in")),
		chromedp.WaitVisible(chromedp.CSS("#stream-state.live")),
	)
	return str(t, p, `document.getElementById("whoami").textContent`)
}

// drawFaucet clicks the faucet and waits until the deposits are accepted and show as
// balances.
func drawFaucet(t *testing.T, p *browsertest.Page) {
	t.Helper()
	p.Run(t, "draw the faucet", step,
		chromedp.Click(chromedp.ID("faucet")),
		chromedp.Poll[chromedp.Void](`document.getElementById("notice").textContent.startsWith("Accepted and signed") &&
			document.getElementById("deposits").children.length === 0 &&
			document.querySelector('#balances td[data-symbol="cbtc"]') && document.querySelector('#balances td[data-symbol="usdcx"]')`),
	)
}

// waitBalance waits until the page shows want of symbol (the page refreshes on stream
// events and every 5 s), and fails the test with what it shows after step.
func waitBalance(t *testing.T, p *browsertest.Page, symbol string, want *big.Rat) {
	t.Helper()
	deadline := time.Now().Add(step)
	for {
		got := balance(t, p, symbol)
		if got.Cmp(want) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page shows %s %s, want %s", symbol, got.FloatString(8), want.FloatString(8))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// str evaluates a JavaScript expression giving a string.
func str(t *testing.T, p *browsertest.Page, js string) string {
	t.Helper()
	s, err := chromedp.Run(p.Ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return s
}

// balance reads the amount of a token in the page's balances ("0" when none).
func balance(t *testing.T, p *browsertest.Page, symbol string) *big.Rat {
	t.Helper()
	s := str(t, p, fmt.Sprintf(`(document.querySelector('#balances td[data-symbol=%q]') || {textContent: "0"}).textContent`, symbol))
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("balance of %s: %q", symbol, s)
	}
	return r
}

// checkAccessible fails the test for any input, select or button without an accessible
// name (a label, aria-label, aria-labelledby or, for a button, its text).
func checkAccessible(t *testing.T, p *browsertest.Page) {
	t.Helper()
	unnamed := str(t, p, `[...document.querySelectorAll("input, select, button, textarea")].filter((el) => {
		const by = (el.getAttribute("aria-labelledby") || "").split(/\s+/).filter(Boolean).map((id) => (document.getElementById(id) || {}).textContent || "").join("");
		const labels = [...(el.labels || [])].map((l) => l.textContent).join("");
		const own = el.tagName === "BUTTON" ? el.textContent : "";
		return !((el.getAttribute("aria-label") || "") + by + labels + own + (el.title || "")).trim();
	}).map((el) => el.outerHTML.slice(0, 120)).join("\n")`)
	if unnamed != "" {
		t.Errorf("controls without an accessible name:\n%s", unnamed)
	}
}

// checkKeyStaysHome fails when a request or stream frame the page sent carries its
// private key (the seed as base64, base64url or hex), or went to another origin than the
// desk's: the key never leaves the browser, and nothing is fetched from elsewhere.
func checkKeyStaysHome(t *testing.T, p *browsertest.Page, base string) {
	t.Helper()
	d, err := chromedp.Run(p.Ctx, chromedp.Evaluate[string](`(async () => {
		const id = await (await import("/console/store.js")).load();
		return (await crypto.subtle.exportKey("jwk", id.keys.privateKey)).d; })()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the page's key: %v", err)
	}
	seed, err := base64.RawURLEncoding.DecodeString(d)
	if err != nil || len(seed) != 32 {
		t.Fatalf("the page's seed %q: %v", d, err)
	}
	forms := []string{base64.StdEncoding.EncodeToString(seed), base64.RawStdEncoding.EncodeToString(seed), d, hex.EncodeToString(seed)}
	ws := "ws" + strings.TrimPrefix(base, "http")
	sent := p.Sent()
	if len(sent) < 10 {
		t.Fatalf("only %d requests recorded", len(sent))
	}
	for _, r := range sent {
		if r.Method != "WS" && !strings.HasPrefix(r.URL, base+"/") && !strings.HasPrefix(r.URL, ws+"/") && !strings.HasPrefix(r.URL, "blob:"+base+"/") && !strings.HasPrefix(r.URL, "data:") {
			t.Errorf("the page sent %s %s, another origin than the desk's", r.Method, r.URL)
		}
		all := r.URL + fmt.Sprint(r.Headers) + string(r.Body)
		for _, f := range forms {
			if strings.Contains(all, f) {
				t.Errorf("the page sent its private key: %s %s", r.Method, r.URL)
			}
		}
	}
}

// checkPhoneWidth renders the page at a phone's width and fails on horizontal overflow.
func checkPhoneWidth(t *testing.T, b *browsertest.Browser, p *browsertest.Page) {
	t.Helper()
	p.Run(t, "phone width", step, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1), chromedp.EmulateMobile))
	time.Sleep(200 * time.Millisecond) // one layout
	if over := str(t, p, `String(document.documentElement.scrollWidth - window.innerWidth)`); over != "0" {
		t.Errorf("at 390 px the page is %s px wider than the screen", over)
	}
	b.Screenshot(p, "phone")
	p.Run(t, "desktop width", step, chromedp.EmulateViewport(1280, 900))
}

// restoreBackup downloads the taker's encrypted backup, restores it in a fresh browser
// context (a wrong passphrase first, refused) and sees the same party and balances.
func restoreBackup(t *testing.T, b *browsertest.Browser, taker *browsertest.Page, base string, cbtc *big.Rat) *browsertest.Page {
	t.Helper()
	dir := t.TempDir()
	taker.AllowDownloads(t, dir)
	taker.Run(t, "download a backup", step,
		chromedp.SendKeys(chromedp.ID("backup-pass"), "a long passphrase"),
		chromedp.Click(chromedp.ID("backup")),
		chromedp.Poll[chromedp.Void](`document.getElementById("notice").textContent.startsWith("Backup downloaded")`),
	)
	var file string
	for deadline := time.Now().Add(10 * time.Second); file == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, "rfqdesk-*.backup.json")); len(m) == 1 {
			file = m[0]
		}
	}
	if file == "" {
		t.Fatal("no backup file was downloaded")
	}
	data, err := os.ReadFile(file)
	if err != nil || bytes.Contains(data, []byte("mk_")) {
		t.Fatalf("backup file: %v (holds the API key in clear: %v)", err, bytes.Contains(data, []byte("mk_")))
	}
	party := str(t, taker, `document.getElementById("party-id").textContent`)
	restored := consolePage(t, b, base, "restored")
	restored.Run(t, "restore with a wrong passphrase", step,
		chromedp.SetUploadFiles(chromedp.ID("restore-file"), []string{file}),
		chromedp.SendKeys(chromedp.ID("restore-pass"), "not the passphrase"),
		chromedp.Click(chromedp.ID("restore")),
		chromedp.Poll[chromedp.Void](`!document.getElementById("banner").hidden && document.getElementById("banner").textContent.includes("wrong passphrase")`),
	)
	restored.Run(t, "restore the backup", step,
		chromedp.SendKeys(chromedp.ID("restore-pass"), "a long passphrase"),
		chromedp.Click(chromedp.ID("restore")),
		chromedp.WaitVisible(chromedp.ID("signed-in")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#balances td[data-symbol]").length >= 2`),
	)
	b.Screenshot(restored, "restored")
	if got := str(t, restored, `document.getElementById("party-id").textContent`); got != party {
		t.Fatalf("restored party %q, want %q", got, party)
	}
	if got := balance(t, restored, "cbtc"); got.Cmp(cbtc) != 0 {
		t.Fatalf("restored page shows cbtc %s, want %s", got.FloatString(8), cbtc.FloatString(8))
	}
	if errs := restored.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("restored page: console errors %q", errs)
	}
	return restored
}

// TestConsoleInBrowser: a taker registers in the console, draws the faucet, asks the house
// maker, accepts and sees the trade settled with its ledger proof and the balances moved;
// its backup restores in another browser context; a maker registered in a second context
// quotes the taker's next RFQ, signs the allocation in one click and sees the trade. Every
// step is a click or keystrokes; then the pages fit a phone's width, every control has a
// name, no page logged an error, and no request or frame carried a private key or went
// elsewhere than the desk. Last, a new API key from the restored page (the old key's page
// is told 401).
func TestConsoleInBrowser(t *testing.T) {
	b := browsertest.Start(t) // first: it skips the test when there is no Chromium
	dir := t.TempDir()
	bin := buildBinary(t, dir, ".", "desk")
	desk := startWalkthroughDesk(t, bin, dir, nil) // the default configuration: testnet, house maker online
	t.Logf("screenshots in %s", b.Dir())

	// The taker: register, fund, ask the house maker, accept, settled.
	taker := consolePage(t, b, desk.base, "taker")
	b.Screenshot(taker, "open")
	// What the first load transferred, as the browser counts it (headers and gzip bodies).
	loaded := str(t, taker, `String([...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
		.reduce((sum, e) => sum + e.transferSize, 0))`)
	if n, err := strconv.Atoi(loaded); err != nil || n <= 0 || n >= 300<<10 {
		t.Errorf("a load of the console transferred %s bytes, want under 300 KB", loaded)
	} else {
		t.Logf("a load of the console transferred %d bytes", n)
	}
	takerHint := register(t, taker, "Browser Taker")
	b.Screenshot(taker, "registered")
	drawFaucet(t, taker)
	cbtc0, usdcx0 := balance(t, taker, "cbtc"), balance(t, taker, "usdcx")
	b.Screenshot(taker, "funded")
	taker.AllowNetworkError("/rfq") // the refusal provoked next
	taker.Run(t, "send an RFQ too small for the desk", step,
		chromedp.Click(chromedp.CSS(`#rfq-makers input[value="house-maker"]`)),
		chromedp.SetValue(chromedp.ID("rfq-side"), "SELL"),
		chromedp.SendKeys(chromedp.ID("rfq-qty"), "0.00000001"),
		chromedp.SetValue(chromedp.ID("rfq-base"), "cbtc"),
		chromedp.SetValue(chromedp.ID("rfq-quote"), "usdcx"),
		chromedp.Click(chromedp.ID("send-rfq")),
		chromedp.Poll[chromedp.Void](`!document.getElementById("banner").hidden`),
	)
	b.Screenshot(taker, "refused")
	if msg := str(t, taker, `document.getElementById("banner").textContent`); !strings.Contains(msg, "too small") || !strings.Contains(msg, "(HTTP 4") {
		t.Errorf("the refusal shows %q, want the person's terms with the HTTP status and code", msg)
	}
	taker.Run(t, "send an RFQ to the house maker", step,
		chromedp.SendKeys(chromedp.ID("rfq-qty"), kb.End+strings.Repeat(kb.Backspace, len("0.00000001"))), // erase it
		chromedp.SendKeys(chromedp.ID("rfq-qty"), "0.01"),
		chromedp.Click(chromedp.ID("send-rfq")),
		chromedp.WaitVisible(chromedp.CSS(`#my-rfqs tr.quote button`)),
	)
	b.Screenshot(taker, "quoted")
	taker.Run(t, "accept the house maker's quote", step,
		chromedp.Click(chromedp.CSS(`#my-rfqs tr.quote button`)),
		chromedp.WaitVisible(chromedp.CSS(`#trades tr.trade[data-status="settled"]`)),
	)
	waitBalance(t, taker, "cbtc", new(big.Rat).Sub(cbtc0, big.NewRat(1, 100)))
	b.Screenshot(taker, "settled")
	proof := str(t, taker, `document.querySelector('#trades tr.trade[data-status="settled"] td.mono').title`)
	if proof == "" {
		t.Fatal("the settled trade shows no ledger update id")
	}
	cbtc1, usdcx1 := balance(t, taker, "cbtc"), balance(t, taker, "usdcx")
	if want := new(big.Rat).Sub(cbtc0, big.NewRat(1, 100)); cbtc1.Cmp(want) != 0 || usdcx1.Cmp(usdcx0) <= 0 {
		t.Fatalf("balances after the trade: cbtc %s → %s (want %s), usdcx %s → %s (want more)",
			cbtc0.FloatString(8), cbtc1.FloatString(8), want.FloatString(8), usdcx0.FloatString(6), usdcx1.FloatString(6))
	}
	if n := str(t, taker, `document.getElementById("notice").textContent`); !strings.Contains(n, "settled: ledger update "+proof) {
		t.Errorf("notice after settlement: %q", n)
	}
	price := str(t, taker, `document.querySelector('#trades tr.trade td.num').textContent.split(" ")[0]`)
	restored := restoreBackup(t, b, taker, desk.base, cbtc1)

	// The maker, in a second browser context: register, fund, see the taker's RFQ, quote,
	// sign the allocation in one click, and see the trade.
	maker := consolePage(t, b, desk.base, "maker")
	makerHint := register(t, maker, "Browser Maker")
	drawFaucet(t, maker)
	b.Screenshot(maker, "funded")
	taker.Run(t, "ask the browser maker", step,
		chromedp.Click(chromedp.CSS(`#rfq-makers input[value="house-maker"]`)), // uncheck
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#rfq-makers input[value=%q]`, makerHint))),
		chromedp.Click(chromedp.ID("send-rfq")),
		chromedp.WaitVisible(chromedp.CSS(`#my-rfqs article`)),
	)
	maker.Run(t, "quote the taker's RFQ", step,
		chromedp.WaitVisible(chromedp.CSS(`#incoming-rfqs input[data-rfq]`)),
		chromedp.SendKeys(chromedp.CSS(`#incoming-rfqs input[data-rfq]`), price),
		chromedp.Click(chromedp.CSS(`#incoming-rfqs article button`)),
		chromedp.Poll[chromedp.Void](`document.getElementById("pending-count").textContent !== "0"`),
	)
	b.Screenshot(maker, "quoted")
	maker.Run(t, "sign the allocation", step,
		chromedp.Click(chromedp.ID("sign-all")),
		chromedp.Poll[chromedp.Void](`(document.querySelector("#incoming-rfqs .myquote") || {textContent: ""}).textContent.includes("(anchored)")`),
	)
	b.Screenshot(maker, "anchored")
	taker.Run(t, "accept the browser maker's quote", step,
		chromedp.WaitVisible(chromedp.CSS(`#my-rfqs tr.quote button`)),
		chromedp.Click(chromedp.CSS(`#my-rfqs tr.quote button`)),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#trades tr.trade[data-status="settled"]').length === 2`),
	)
	maker.Run(t, "see the trade", step,
		chromedp.WaitVisible(chromedp.CSS(`#maker-trades tr.trade[data-status="settled"]`)),
	)
	b.Screenshot(maker, "traded")
	b.Screenshot(taker, "traded")
	taker.Run(t, "ask the browser maker again", step,
		chromedp.Click(chromedp.ID("send-rfq")),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#my-rfqs article")].some((a) => a.textContent.includes(" open until"))`),
	)
	maker.Run(t, "quote, sign, then delete the quote", step,
		chromedp.WaitVisible(chromedp.CSS(`#incoming-rfqs input[data-rfq]`)),
		chromedp.SendKeys(chromedp.CSS(`#incoming-rfqs input[data-rfq]`), price),
		chromedp.Click(chromedp.CSS(`#incoming-rfqs article:has(input[data-rfq]) button`)),
		chromedp.Poll[chromedp.Void](`document.getElementById("pending-count").textContent !== "0"`),
		chromedp.Click(chromedp.ID("sign-all")),
		chromedp.Poll[chromedp.Void](`(document.querySelector("#incoming-rfqs article:has(input[data-rfq]) .myquote") || {textContent: ""}).textContent.includes("(anchored)")`),
		chromedp.Click(chromedp.CSS(`#incoming-rfqs article:has(input[data-rfq]) .myquote button`)),
		chromedp.WaitVisible(chromedp.CSS(`#incoming-rfqs article:has(input[data-rfq]) .myquote[data-status="revoked"]`)),
	)
	b.Screenshot(maker, "deleted")
	if out := os.Getenv("RFQDESK_DOCS_SCREENSHOT"); out != "" { // README's picture: docs/console.png
		png, err := chromedp.Run(taker.Ctx, chromedp.ScreenshotScale(chromedp.CSS("body"), 0.6))
		if err != nil || os.WriteFile(out, png, 0o644) != nil {
			t.Fatalf("docs screenshot: %v", err)
		}
	}
	if !strings.HasPrefix(makerHint, "browser-maker") || !strings.HasPrefix(takerHint, "browser-taker") {
		t.Errorf("hints %q and %q", takerHint, makerHint)
	}

	for _, p := range []*browsertest.Page{taker, maker} {
		checkAccessible(t, p)
		checkKeyStaysHome(t, p, desk.base)
		if u := p.UnnamedControls(t); len(u) > 0 {
			t.Errorf("controls without an accessible name in Chromium's accessibility tree: %v", u)
		}
		checkPhoneWidth(t, b, p)
		if errs := p.ConsoleErrors(); len(errs) > 0 {
			t.Errorf("console errors: %q", errs)
		}
	}

	// Key recovery: the restored page proves the party key (challenge, signature, rotate)
	// and keeps working with its new API key; the taker's page, on the old key, is told.
	restored.Run(t, "get a new API key", step,
		chromedp.Click(chromedp.ID("recover")),
		chromedp.Poll[chromedp.Void](`document.getElementById("notice").textContent.startsWith("A new API key is in use")`),
		chromedp.WaitVisible(chromedp.CSS("#stream-state.live")),
	)
	taker.Run(t, "see the old key refused", step,
		chromedp.Poll[chromedp.Void](`!document.getElementById("banner").hidden && document.getElementById("banner").textContent.includes("HTTP 401")`),
	)
	// By now the desk has closed the old key's sockets: the restored page's stream, reopened
	// with the new key, is live, no error shows, and its calls work.
	restored.Run(t, "refresh with the new key", step,
		chromedp.Click(chromedp.ID("refresh")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#trades tr.trade").length === 2`),
	)
	if s := str(t, restored, `document.getElementById("stream-state").className + " " + document.getElementById("banner").hidden`); s != "badge live true" {
		t.Errorf("restored page after the rotation: stream and banner-hidden %q", s)
	}
	b.Screenshot(taker, "key-rotated-away")
}
