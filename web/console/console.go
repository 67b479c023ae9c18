// Package console serves the taker and maker console: a single page of plain JavaScript
// (ES modules, no build step) embedded in the binary, served on the public listener at "/"
// and "/console/…". It fetches nothing from elsewhere at run time: the page talks only to
// the desk's own API and stream, with the key it makes and keeps in the browser.
//
// Every answer, a miss included, carries a strict Content-Security-Policy (scripts, styles,
// images and connections from the desk's own origin only, no inline script, no framing),
// X-Content-Type-Options: nosniff, X-Frame-Options: DENY and Referrer-Policy: no-referrer.
// A file is served with Cache-Control: no-cache and an ETag (the files change with the
// binary; the browser revalidates cheaply), gzip-compressed when the browser accepts it.
//
// What the page keeps, and where: one record in the browser's IndexedDB (store.js) with the
// party id, hint, API key and the Ed25519 key pair as WebCrypto key objects. The private key
// is extractable only so that the page can seal it into the encrypted backup file
// (keys.js); it is never sent anywhere. Nothing else is stored: balances, RFQs and trades
// are read from the desk each time.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every console answer. connect-src 'self' covers
// ws: and wss: of the page's own host (CSP level 3), which every browser with the WebCrypto
// Ed25519 the page needs implements, so the page can open no socket to another host.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file, ready to serve.
type file struct {
	body, gz []byte // gz is nil when compressing does not pay
	ctype    string
	etag     string
}

// Handler serves the console's files. Build it with New.
type Handler struct {
	files map[string]file // by URL path: "/" and "/console/<name>"
}

// New loads the embedded files and compresses them once.
func New() (*Handler, error) {
	h := &Handler{files: map[string]file{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return fmt.Errorf("console: read %s: %w", p, err)
		}
		f, err := newFile(p, body)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "static/")
		h.files["/console/"+name] = f
		if name == "index.html" {
			h.files["/"] = f
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if _, ok := h.files["/"]; !ok {
		return nil, fmt.Errorf("console: no index.html embedded")
	}
	return h, nil
}

func newFile(p string, body []byte) (file, error) {
	ctype := mime.TypeByExtension(path.Ext(p))
	switch path.Ext(p) { // the system's MIME table may lack or differ on these
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".png":
		ctype = "image/png"
	case ".svg":
		ctype = "image/svg+xml"
	}
	if ctype == "" {
		return file{}, fmt.Errorf("console: no content type for %s", p)
	}
	sum := sha256.Sum256(body)
	f := file{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return file{}, fmt.Errorf("console: gzip %s: %w", p, err)
	}
	if _, err := zw.Write(body); err != nil {
		return file{}, fmt.Errorf("console: gzip %s: %w", p, err)
	}
	if err := zw.Close(); err != nil {
		return file{}, fmt.Errorf("console: gzip %s: %w", p, err)
	}
	if buf.Len() < len(body) {
		f.gz = buf.Bytes()
	}
	return f, nil
}

// Paths returns the URL paths the handler serves, sorted ("/" and "/console/…").
func (h *Handler) Paths() []string {
	out := make([]string, 0, len(h.files))
	for p := range h.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Has reports whether the handler serves the URL path p.
func (h *Handler) Has(p string) bool {
	_, ok := h.files[p]
	return ok
}

// SetHeaders sets the console's security headers on w.
func SetHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// ServeHTTP answers GET and HEAD of an embedded file, gzip-compressed when the browser
// accepts it, 304 on a matching If-None-Match, and 404 (JSON, the desk's error shape)
// for any other path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SetHeaders(w)
	f, ok := h.files[r.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"no such console file"}` + "\n"))
		return
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	hd.Set("Vary", "Accept-Encoding")
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", f.ctype)
	body := f.body
	if f.gz != nil && acceptsGzip(r) {
		hd.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// acceptsGzip reports whether the request's Accept-Encoding names gzip without q=0.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
