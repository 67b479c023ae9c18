package main

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

	"github.com/chromedp/chromedp"
)

// The operator view in a real browser: RFQDESK_BROWSER=1 (or -tags browser, as `make
// e2e-browser` runs it) with a Chromium installed; without one the test skips, or fails
// under RFQDESK_REQUIRE_BROWSER=1. Screenshots go to $RFQDESK_SCREENSHOTS/<test> when set,
// else to the test's artifact directory (go test -artifacts -outputdir DIR keeps them).

// opsBrowserStep bounds each step of the browser test.
const opsBrowserStep = 30 * time.Second

// opsChromium returns the Chromium to drive, skipping (or failing) the test without one.
func opsChromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("RFQDESK_BROWSER") != "1" && !opsBrowserTag {
		t.Skip("the operator view's browser test runs with RFQDESK_BROWSER=1 (or -tags browser: make e2e-browser)")
	}
	candidates := []string{os.Getenv("RFQDESK_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := "no Chromium found ($RFQDESK_CHROMIUM, chromium, chromium-browser, google-chrome): install Debian's chromium package"
	if os.Getenv("RFQDESK_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + " (RFQDESK_REQUIRE_BROWSER=1)")
	}
	t.Skip(msg)
	return ""
}

// opsBrowser is a headless Chromium tab with its console errors recorded.
type opsBrowser struct {
	ctx   context.Context
	shots string
	mu    sync.Mutex
	errs  []string
	n     int
}

func startOpsBrowser(t *testing.T) *opsBrowser {
	t.Helper()
	path := opsChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // containers and CI run as root, where Chromium refuses its sandbox
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	b := &opsBrowser{ctx: ctx, shots: t.ArtifactDir()}
	if dir := os.Getenv("RFQDESK_SCREENSHOTS"); dir != "" {
		b.shots = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(b.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, fmt.Sprintf("%s (%s:%d)", m.Text, m.URL, m.Line))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

func (b *opsBrowser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// run runs steps within opsBrowserStep, failing the test with a screenshot on an error.
func (b *opsBrowser) run(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, opsBrowserStep)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.screenshot(t, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v (console errors: %q)", what, err, b.consoleErrors())
	}
}

// eval evaluates a JavaScript expression.
func opsEval[T any](t *testing.T, b *opsBrowser, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, opsBrowserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// screenshot saves a full-page PNG as NN-<step>.png.
func (b *opsBrowser) screenshot(t *testing.T, step string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, opsBrowserStep)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", step, err)
	}
	b.n++
	path := filepath.Join(b.shots, fmt.Sprintf("%02d-operator-%s.png", b.n, step))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
	return path
}

// opsFilled is true once the page shows the desk's traffic: the tables filled and every
// chart drawn with points.
const opsFilled = `(() => {
  const rows = (id) => document.querySelectorAll('#' + id + ' tbody tr').length;
  const drawn = (c) => c && Number(c.dataset.drawn) > 0;
  return rows('table-rfqs') >= 2 && rows('table-quotes') >= 2 && rows('table-trades') >= 1 &&
    rows('table-sign') >= 1 && rows('table-makers') >= 2 &&
    drawn(document.getElementById('chart-trades')) && drawn(document.getElementById('chart-latency')) &&
    drawn(document.getElementById('chart-makers')) &&
    [...document.querySelectorAll('#volume-charts canvas')].filter(drawn).length === 2 &&
    document.getElementById('role').textContent === 'leader';
})()`

// opsUnlabelled lists the controls and charts without an accessible name.
const opsUnlabelled = `[...document.querySelectorAll('button, select, input, textarea, canvas, a')].filter((el) => {
  if (el.getAttribute('aria-label')) return false;
  if (el.labels && el.labels.length > 0) return false;
  if ((el.tagName === 'BUTTON' || el.tagName === 'A') && el.textContent.trim() !== '') return false;
  return true;
}).map((el) => el.tagName + '#' + el.id)`

// TestOperatorViewInBrowser opens the operator view on a desk with a settled trade and a
// quote waiting for signatures, waits for the tables to fill and the charts to draw, and
// checks that it refreshes, that its controls work and are labelled, that it fits a
// phone's width, and that the console shows no error (a CSP refusal included).
func TestOperatorViewInBrowser(t *testing.T) {
	b := startOpsBrowser(t)
	d := startLive(t, opsConfig)
	opsTraffic(t, d)

	b.run(t, "open the operator view", chromedp.Navigate(d.admin+"/"),
		chromedp.Poll[chromedp.Void](opsFilled, chromedp.WithPollingInterval(200*time.Millisecond)))
	b.screenshot(t, "desktop")
	if got := opsEval[string](t, b, `location.pathname`); got != "/ops/" {
		t.Fatalf("GET / on the admin listener led to %q", got)
	}
	first := opsEval[string](t, b, `document.getElementById('status').textContent`)
	b.run(t, "refresh", chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`document.getElementById('status').textContent !== %q`, first), chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(3*time.Second)))

	if bad := opsEval[[]string](t, b, opsUnlabelled); len(bad) > 0 {
		t.Errorf("controls without a label: %v", bad)
	}
	b.run(t, "pause", chromedp.Click(chromedp.ID("pause")),
		chromedp.Poll[chromedp.Void](`document.getElementById('pause').getAttribute('aria-pressed') === 'true'`))
	paused := opsEval[string](t, b, `document.getElementById('status').textContent`)
	b.run(t, "stay paused", chromedp.Sleep(1500*time.Millisecond))
	if now := opsEval[string](t, b, `document.getElementById('status').textContent`); now != paused {
		t.Errorf("the page refreshed while paused: %q then %q", paused, now)
	}
	b.run(t, "narrow the window", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('window');
		s.value = '15'; s.dispatchEvent(new Event('change')); })()`),
		chromedp.Click(chromedp.ID("pause")),
		chromedp.Poll[chromedp.Void](`document.getElementById('pause').getAttribute('aria-pressed') === 'false'`))

	b.run(t, "a phone's width", chromedp.EmulateViewport(390, 844),
		chromedp.Poll[chromedp.Void](opsFilled, chromedp.WithPollingInterval(200*time.Millisecond)))
	if over := opsEval[bool](t, b, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
		t.Errorf("the page is wider than a phone's screen: %v > %v",
			opsEval[float64](t, b, `document.documentElement.scrollWidth`), opsEval[float64](t, b, `window.innerWidth`))
	}
	b.screenshot(t, "phone")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %q", errs)
	}
}
