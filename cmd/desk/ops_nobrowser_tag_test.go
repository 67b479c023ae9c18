//go:build !browser

package main

// opsBrowserTag: without -tags browser, the operator view's browser test runs only with
// RFQDESK_BROWSER=1.
const opsBrowserTag = false
