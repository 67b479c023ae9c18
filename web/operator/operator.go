// Package operator is the desk's operator view: one page of plain JavaScript and CSS,
// embedded in the binary, that the admin listener serves under /ops/ beside the JSON it
// reads (/ops/state and /ops/series, served by cmd/desk). Nothing is fetched from
// elsewhere: the page draws its charts itself on canvases, and its Content-Security-Policy
// allows only its own files and its own origin.
package operator

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// CSP is the Content-Security-Policy of every file of the view: scripts, styles, images
// and fetches from the page's own origin only; no inline script or style, no frames, no
// forms.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the view's files (index.html at "/") with CSP and the usual hardening
// headers. Mount it with http.StripPrefix under the path the page lives at.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree has the directory: a build without it does not compile
	}
	files := http.FileServerFS(static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
