//go:build browser

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/deskco/rfqdesk/internal/browsertest"
)

// The operator view in a real browser (-tags browser, as `make e2e-browser` runs it) with a
// Chromium installed; without one the test skips, or fails under RFQDESK_REQUIRE_BROWSER=1.
// Screenshots go to $RFQDESK_SCREENSHOTS/<test> when set, else to the test's artifact
// directory (go test -artifacts -outputdir DIR keeps them).

// opsBrowserStep bounds each step of the browser test.
const opsBrowserStep = 30 * time.Second

// opsEval evaluates a JavaScript expression on the page.
func opsEval[T any](t *testing.T, p *browsertest.Page, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.Ctx, opsBrowserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
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
	b := browsertest.Start(t)
	p := b.NewPage("operator")
	d := startLive(t, opsConfig)
	opsTraffic(t, d)

	p.Run(t, "open the operator view", opsBrowserStep, chromedp.Navigate(d.admin+"/"),
		chromedp.Poll[chromedp.Void](opsFilled, chromedp.WithPollingInterval(200*time.Millisecond)))
	b.Screenshot(p, "desktop")
	if got := opsEval[string](t, p, `location.pathname`); got != "/ops/" {
		t.Fatalf("GET / on the admin listener led to %q", got)
	}
	first := opsEval[string](t, p, `document.getElementById('status').textContent`)
	p.Run(t, "refresh", opsBrowserStep, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`document.getElementById('status').textContent !== %q`, first), chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(3*time.Second)))

	if bad := opsEval[[]string](t, p, opsUnlabelled); len(bad) > 0 {
		t.Errorf("controls without a label: %v", bad)
	}
	p.Run(t, "pause", opsBrowserStep, chromedp.Click(chromedp.ID("pause")),
		chromedp.Poll[chromedp.Void](`document.getElementById('pause').getAttribute('aria-pressed') === 'true'`))
	paused := opsEval[string](t, p, `document.getElementById('status').textContent`)
	p.Run(t, "stay paused", opsBrowserStep, chromedp.Sleep(1500*time.Millisecond))
	if now := opsEval[string](t, p, `document.getElementById('status').textContent`); now != paused {
		t.Errorf("the page refreshed while paused: %q then %q", paused, now)
	}
	p.Run(t, "narrow the window", opsBrowserStep, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('window');
		s.value = '15'; s.dispatchEvent(new Event('change')); })()`),
		chromedp.Click(chromedp.ID("pause")),
		chromedp.Poll[chromedp.Void](`document.getElementById('pause').getAttribute('aria-pressed') === 'false'`))

	p.Run(t, "a phone's width", opsBrowserStep, chromedp.EmulateViewport(390, 844),
		chromedp.Poll[chromedp.Void](opsFilled, chromedp.WithPollingInterval(200*time.Millisecond)))
	if over := opsEval[bool](t, p, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
		t.Errorf("the page is wider than a phone's screen: %v > %v",
			opsEval[float64](t, p, `document.documentElement.scrollWidth`), opsEval[float64](t, p, `window.innerWidth`))
	}
	b.Screenshot(p, "phone")
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %q", errs)
	}
}
