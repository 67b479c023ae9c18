// Package browsertest runs a headless Chromium for the console's tests through chromedp:
// it finds the browser (skipping the test with a clear message when there is none, unless
// RFQDESK_REQUIRE_BROWSER=1, which makes that a failure), opens isolated browser contexts
// (each its own storage, like a separate person), records every console error and
// uncaught exception of a page, and saves screenshots. It installs nothing: `make
// e2e-browser` installs Debian's chromium package when it is missing.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// candidates are the executables tried, in order, after $RFQDESK_CHROMIUM.
var candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findBrowser returns the path of a Chromium, or "".
func findBrowser() string {
	if p := os.Getenv("RFQDESK_CHROMIUM"); p != "" {
		return p
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium process for a test.
type Browser struct {
	t     testing.TB
	root  context.Context // the first tab's context: it owns the process
	shots string
	mu    sync.Mutex
	n     int // screenshots taken, for their file names
}

// Start launches a headless Chromium that lives until the end of the test. It skips the
// test when no Chromium is installed, or fails it when RFQDESK_REQUIRE_BROWSER=1.
func Start(t testing.TB) *Browser {
	t.Helper()
	path := findBrowser()
	if path == "" {
		msg := "no Chromium found (tried $RFQDESK_CHROMIUM, " + strings.Join(candidates, ", ") +
			"): install Debian's chromium package, or run `make e2e-browser`, which does"
		if os.Getenv("RFQDESK_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + " (RFQDESK_REQUIRE_BROWSER=1)")
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // containers and CI run as root, where Chromium refuses its sandbox
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	root, cancelRoot := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelRoot(); cancelAlloc() })
	if err := chromedp.Do(root); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	shots := os.Getenv("RFQDESK_SCREENSHOTS")
	if shots == "" {
		shots = t.ArtifactDir() // kept by go test -artifacts -outputdir DIR
	} else {
		shots = filepath.Join(shots, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &Browser{t: t, root: root, shots: shots}
}

// Page is a tab in its own browser context, with its console recorded.
type Page struct {
	// Ctx is the chromedp context of the tab.
	Ctx  context.Context
	b    *Browser
	name string
	mu   sync.Mutex
	errs []string
	// allowed are URL suffixes whose network errors (a refused call the test provokes) are
	// not recorded.
	allowed []string
	sent    []Sent // bounded by maxSent
}

// Sent is one request the page sent, or one WebSocket frame (Method "WS").
type Sent struct {
	Method, URL string
	Headers     map[string]string
	Body        []byte
}

// maxSent bounds the requests a Page records.
const maxSent = 10000

// Sent returns the requests and WebSocket frames the page has sent so far (at most the
// first 10,000).
func (p *Page) Sent() []Sent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Sent(nil), p.sent...)
}

func (p *Page) recordSent(s Sent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sent) < maxSent {
		p.sent = append(p.sent, s)
	}
}

// AllowNetworkError stops recording the browser's network errors (a 4xx or 5xx answer) of
// URLs ending with suffix: a refusal the test provokes on purpose. Calls of the console API
// and exceptions are always recorded.
func (p *Page) AllowNetworkError(suffix string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allowed = append(p.allowed, suffix)
}

func (p *Page) record(m chromedp.ConsoleMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.Source == "network" {
		for _, a := range p.allowed {
			if strings.HasSuffix(m.URL, a) {
				return
			}
		}
	}
	p.errs = append(p.errs, fmt.Sprintf("%s (%s:%d)", m.String(), m.URL, m.Line))
}

// NewPage opens a tab in a fresh browser context (separate cookies and storage). name
// labels its screenshots and errors.
func (b *Browser) NewPage(name string) *Page {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.root, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	p := &Page{Ctx: ctx, b: b, name: name}
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	frames := chromedp.Events(ctx, network.WebSocketFrameSent)
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			s := Sent{Method: ev.Request.Method, URL: ev.Request.URL, Headers: map[string]string{}}
			for k, v := range ev.Request.Headers {
				s.Headers[k] = fmt.Sprint(v)
			}
			for _, e := range ev.Request.PostDataEntries {
				s.Body = append(s.Body, e.Bytes...)
			}
			p.recordSent(s)
		}
	}()
	go func() {
		for ev, err := range frames {
			if err != nil {
				return
			}
			p.recordSent(Sent{Method: "WS", URL: string(ev.RequestID), Body: []byte(ev.Response.PayloadData)})
		}
	}()
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				p.record(m)
			}
		}
	}()
	return p
}

// ConsoleErrors returns the console errors and uncaught exceptions seen so far.
func (p *Page) ConsoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}

// Run runs the steps on the page within timeout, failing the test with what and the
// page's console errors on an error (after a screenshot, "failed-<what>").
func (p *Page) Run(t testing.TB, what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.b.Screenshot(p, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %s: %v (console errors: %q)", p.name, what, err, p.ConsoleErrors())
	}
}

// Screenshot saves a full-page PNG of p as NN-<page>-<step>.png in the screenshot
// directory ($RFQDESK_SCREENSHOTS/<test>, else the test's artifact directory, which
// go test -artifacts -outputdir DIR keeps) and returns its path.
func (b *Browser) Screenshot(p *Page, step string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("%s: screenshot %s: %v", p.name, step, err)
	}
	b.mu.Lock()
	b.n++
	name := fmt.Sprintf("%02d-%s-%s.png", b.n, p.name, step)
	b.mu.Unlock()
	path := filepath.Join(b.shots, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
	return path
}

// Dir is the directory screenshots are saved in.
func (b *Browser) Dir() string { return b.shots }

// AllowDownloads saves the page's downloads in dir under their own names.
func (p *Page) AllowDownloads(t testing.TB, dir string) {
	t.Helper()
	_, err := chromedp.CallBrowser(p.Ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior:         browser.SetDownloadBehaviorBehaviorAllow,
		BrowserContextID: chromedp.FromContext(p.Ctx).BrowserContextID,
		DownloadPath:     dir,
	})
	if err != nil {
		t.Fatalf("%s: allow downloads: %v", p.name, err)
	}
}

// controlRoles are the accessibility roles of the controls a person operates.
var controlRoles = map[string]bool{
	"button": true, "textbox": true, "combobox": true, "checkbox": true, "radio": true,
	"spinbutton": true, "slider": true, "searchbox": true, "listbox": true, "link": true,
}

// UnnamedControls returns the controls of the page's accessibility tree, as Chromium
// computes it (hidden ones are not in it), that have no accessible name: "role (DOM node id)".
func (p *Page) UnnamedControls(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, 20*time.Second)
	defer cancel()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatalf("%s: accessibility tree: %v", p.name, err)
	}
	var out []string
	controls := 0
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		role := strings.Trim(string(n.Role.Value), `"`)
		if !controlRoles[role] {
			continue
		}
		controls++
		name := ""
		if n.Name != nil {
			name = strings.TrimSpace(strings.Trim(string(n.Name.Value), `"`))
		}
		if name == "" {
			out = append(out, fmt.Sprintf("%s (DOM node %d)", role, n.BackendDOMNodeID))
		}
	}
	if controls == 0 {
		t.Fatalf("%s: the accessibility tree has no control at all", p.name)
	}
	return out
}
