//go:build browser

package main

// opsBrowserTag: built with -tags browser (make e2e-browser), the operator view's browser
// test runs without RFQDESK_BROWSER=1.
const opsBrowserTag = true
