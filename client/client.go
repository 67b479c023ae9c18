package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// APIKeyHeader is the header that carries the API key on every authenticated call and on
// the stream's upgrade request.
const APIKeyHeader = "X-API-Key"

// MaxResponseBytes bounds how much of an answer body the client reads. The largest answers
// (500 trades) are far below it.
const MaxResponseBytes = 8 << 20

// Client is a client of the desk's public API. It is safe for concurrent use. The API key,
// and the party's identity and signing key used by the flows (Register, RecoverKey,
// SignAndExecute), can change during its life; the accessors return the current values.
type Client struct {
	base *url.URL
	http *http.Client

	// writeRetries is how many times a write whose answer was lost is sent again, under
	// the same Idempotency-Key (idempotency.go); 0: never.
	writeRetries int

	mu      sync.RWMutex
	apiKey  string
	partyID string
	hint    string
	key     ed25519.PrivateKey
}

// Option configures a Client built by New.
type Option func(*Client)

// WithHTTPClient makes the client send its REST calls through hc (timeouts, transport,
// TLS). The default is a client with no overall timeout: bound calls with the context.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithAPIKey sets the API key sent in X-API-Key.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.apiKey = key }
}

// WithPrivateKey sets the party's Ed25519 signing key, used by SignAndExecute, RecoverKey
// and (instead of a fresh one) Register.
func WithPrivateKey(key ed25519.PrivateKey) Option {
	return func(c *Client) { c.key = key }
}

// WithIdentity sets the API key, party id, hint and signing key from id. Its BaseURL is
// ignored here (see FromIdentity).
func WithIdentity(id *Identity) Option {
	return func(c *Client) {
		c.apiKey, c.partyID, c.hint = id.APIKey, id.PartyID, id.Hint
		if len(id.PrivateKey) == ed25519.SeedSize {
			c.key = ed25519.NewKeyFromSeed(id.PrivateKey)
		}
	}
}

// New returns a client of the desk at baseURL (http or https, with an optional path prefix).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("client: base URL %q: scheme must be http or https", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q: no query or fragment allowed", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	c := &Client{base: u, http: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// FromIdentity returns a client of the desk at id.BaseURL (or baseURL when id.BaseURL is
// empty) that acts as the identity's party.
func FromIdentity(id *Identity, baseURL string, opts ...Option) (*Client, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if id.BaseURL != "" {
		baseURL = id.BaseURL
	}
	return New(baseURL, append([]Option{WithIdentity(id)}, opts...)...)
}

// BaseURL returns the desk's base address, without a trailing slash.
func (c *Client) BaseURL() string { return c.base.String() }

// APIKey returns the API key the client currently sends.
func (c *Client) APIKey() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.apiKey
}

// SetAPIKey replaces the API key sent on later calls and stream connections.
func (c *Client) SetAPIKey(key string) {
	c.mu.Lock()
	c.apiKey = key
	c.mu.Unlock()
}

// PartyID returns the full party id the client acts as, once known.
func (c *Client) PartyID() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.partyID
}

// Hint returns the party hint the client acts as, once known.
func (c *Client) Hint() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.hint
}

// PrivateKey returns the party's signing key, or nil when the client has none.
func (c *Client) PrivateKey() ed25519.PrivateKey {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.key
}

// Identity returns the client's current identity (for SaveIdentity after Register or
// RecoverKey). PrivateKey is nil when the client holds no signing key.
func (c *Client) Identity() *Identity {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id := &Identity{PartyID: c.partyID, Hint: c.hint, APIKey: c.apiKey, BaseURL: c.BaseURL()}
	if c.key != nil {
		id.PrivateKey = c.key.Seed()
	}
	return id
}

// Do sends an authenticated request to path (below the base URL, query included if any) and
// decodes a 2xx JSON answer into out (nil: discard). body nil sends no body, a []byte is
// sent as is with Content-Type application/json, anything else is encoded as JSON. It is the
// escape hatch for calls the typed methods do not cover, and for probing the desk's
// validation in tests. Errors are *APIError or *TransportError, or a decoding error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	return c.do(ctx, method, path, nil, body, true, out)
}

// doOnce sends one request and decodes its answer. auth adds X-API-Key; idemKey, when set,
// is sent as the Idempotency-Key.
func (c *Client) doOnce(ctx context.Context, method, path string, query url.Values, body any, auth bool, out any, idemKey string) error {
	var rd io.Reader
	if body != nil {
		var b []byte
		switch v := body.(type) {
		case []byte:
			b = v
		default:
			var err error
			if b, err = json.Marshal(body); err != nil {
				return fmt.Errorf("client: %s %s: encode request: %w", method, path, err)
			}
		}
		rd = bytes.NewReader(b)
	}
	target := c.base.String() + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		if key := c.APIKey(); key != "" {
			req.Header.Set(APIKeyHeader, key)
		}
	}
	if idemKey != "" {
		req.Header.Set(IdempotencyKeyHeader, idemKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &TransportError{Method: method, Path: path, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return &TransportError{Method: method, Path: path, Err: fmt.Errorf("read answer: %w", err)}
	}
	if len(data) > MaxResponseBytes {
		return fmt.Errorf("client: %s %s: answer larger than %d bytes", method, path, MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeAPIError(method, path, resp.StatusCode, data)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("client: %s %s: decode %d answer: %w", method, path, resp.StatusCode, err)
	}
	return nil
}

// decodeAPIError builds the *APIError of a non-2xx answer. A body that is not the desk's
// `{error, code?}` shape (a proxy's HTML page, say) keeps its start as the message.
func decodeAPIError(method, path string, status int, data []byte) error {
	ae := &APIError{Status: status, Method: method, Path: path}
	var body struct {
		Error *string `json:"error"`
		Code  string  `json:"code"`
	}
	if err := json.Unmarshal(data, &body); err == nil && body.Error != nil {
		ae.Message, ae.Code = *body.Error, body.Code
	} else {
		ae.Message = truncate(strings.TrimSpace(string(data)), 200)
	}
	return ae
}

// errNoKey is returned by the flows that need a signing key when the client has none.
var errNoKey = errors.New("client: no private key (use WithPrivateKey or WithIdentity)")
