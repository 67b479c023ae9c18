package transport

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/julienschmidt/httprouter"
	"github.com/lxzan/gws"
)

// Options configure a Server. Zero values take the defaults named on each field.
type Options struct {
	// Desk is the desk loop; required.
	Desk Desk
	// Logger receives one debug line per request and warnings and errors; nil discards.
	Logger *slog.Logger
	// PerIPPerMinute is the per-IP limit of POST /maker/register/start and of
	// POST /maker/challenge, each with its own token bucket per IP (default 10).
	PerIPPerMinute int
	// MaxTrackedIPs bounds the per-IP bucket map of each limited endpoint (default 10000).
	MaxTrackedIPs int
	// MaxBodyBytes bounds request bodies; larger ones are 413 (default 64 KiB).
	MaxBodyBytes int64
	// RequestTimeout bounds how long a request waits for the desk (default 20 s); past it
	// the answer is 503 RETRY_LATER.
	RequestTimeout time.Duration
	// PingInterval is the stream heartbeat (default 30 s): every interval each socket that
	// did not answer the previous ping is dropped, the others are pinged.
	PingInterval time.Duration
	// StreamWriteTimeout is the write deadline of one stream frame (default 10 s).
	StreamWriteTimeout time.Duration
	// SendQueue is the bound of each socket's send queue in frames (default 256); a socket
	// whose queue is full is closed as a slow consumer.
	SendQueue int
	// MaxSocketsPerParty bounds the stream sockets bound to one party (default 16).
	MaxSocketsPerParty int
	// MaxSockets bounds the stream sockets open in total (default 10000).
	MaxSockets int
	// SocketOpTimeout bounds the OpenSocket/CloseSocket calls to the desk (default 10 s).
	SocketOpTimeout time.Duration
	// Now is the clock of the per-IP limits (default time.Now); tests inject their own.
	Now func() time.Time
	// Rand is the source of API keys and challenges (default crypto/rand.Reader).
	Rand io.Reader
	// ObserveRequest, if set, hears of every answered request (latency histograms).
	ObserveRequest RequestObserver
	// CORSOrigins opens CORS to these origins (cors.go); empty (the default) sends no CORS
	// header. Each must pass ValidateCORSOrigin.
	CORSOrigins []string
	// Console, if set, serves the browser console to GET and HEAD of "/" and "/console/…"
	// (console.go); nil leaves those paths 404.
	Console http.Handler
}

// Defaults of Options.
const (
	DefaultPerIPPerMinute     = 10
	DefaultMaxTrackedIPs      = 10000
	DefaultMaxBodyBytes       = 64 << 10
	DefaultRequestTimeout     = 20 * time.Second
	DefaultPingInterval       = 30 * time.Second
	DefaultStreamWriteTimeout = 10 * time.Second
	DefaultSendQueue          = 256
	DefaultMaxSocketsPerParty = 16
	DefaultMaxSockets         = 10000
	DefaultSocketOpTimeout    = 10 * time.Second
)

func (o *Options) withDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PerIPPerMinute <= 0 {
		o.PerIPPerMinute = DefaultPerIPPerMinute
	}
	if o.MaxTrackedIPs <= 0 {
		o.MaxTrackedIPs = DefaultMaxTrackedIPs
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if o.SendQueue <= 0 {
		o.SendQueue = DefaultSendQueue
	}
	if o.MaxSocketsPerParty <= 0 {
		o.MaxSocketsPerParty = DefaultMaxSocketsPerParty
	}
	if o.MaxSockets <= 0 {
		o.MaxSockets = DefaultMaxSockets
	}
	if o.SocketOpTimeout <= 0 {
		o.SocketOpTimeout = DefaultSocketOpTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = defaultRand
	}
}

// Server is the HTTP API and the stream of one desk.
type Server struct {
	opts      Options
	desk      Desk
	log       *slog.Logger
	secrets   secrets
	metrics   *metrics
	router    *httprouter.Router
	handler   http.Handler
	hub       *Hub
	upgrade   *gws.Upgrader
	limRegist *ipLimiter
	limChall  *ipLimiter
	cors      corsPolicy

	mu      sync.Mutex
	servers []*http.Server
}

// New builds a Server with its routes and its stream hub. It panics only on a
// programming error (a nil Desk, a CORS origin that ValidateCORSOrigin refuses).
func New(opts Options) *Server {
	if opts.Desk == nil {
		panic("transport.New: Options.Desk is nil")
	}
	cors, err := newCORSPolicy(opts.CORSOrigins)
	if err != nil {
		panic("transport.New: " + err.Error())
	}
	opts.withDefaults()
	s := &Server{
		opts:      opts,
		desk:      opts.Desk,
		log:       opts.Logger,
		secrets:   secrets{rand: opts.Rand},
		metrics:   newMetrics(),
		limRegist: newIPLimiter(opts.PerIPPerMinute, opts.MaxTrackedIPs, opts.Now),
		limChall:  newIPLimiter(opts.PerIPPerMinute, opts.MaxTrackedIPs, opts.Now),
		cors:      cors,
	}
	s.hub = newHub(hubConfig{
		desk: opts.Desk, log: opts.Logger, metrics: s.metrics,
		pingInterval: opts.PingInterval, writeTimeout: opts.StreamWriteTimeout,
		sendQueue: opts.SendQueue, maxPerParty: opts.MaxSocketsPerParty,
		maxSockets: opts.MaxSockets, opTimeout: opts.SocketOpTimeout,
	})
	s.upgrade = s.hub.upgrader()
	s.router = s.buildRouter()
	s.handler = http.HandlerFunc(s.serve)
	return s
}

// Handler is the whole HTTP API, the stream upgrade included.
func (s *Server) Handler() http.Handler { return s.handler }

// Hub is the stream hub; the desk loop calls its Deliver.
func (s *Server) Hub() *Hub { return s.hub }

// Metrics returns a copy of the request and stream counters.
func (s *Server) Metrics() MetricsSnapshot { return s.metrics.snapshot() }

// HTTPServer builds an *http.Server for addr serving Handler, with the timeouts of a JSON
// API: ReadHeaderTimeout 5 s, ReadTimeout 30 s (a 64 KiB body), WriteTimeout a little over
// RequestTimeout, IdleTimeout 2 min, 64 KiB of headers. Hijacked stream connections are
// not bound by these deadlines. Shutdown shuts the servers built here down too.
func (s *Server) HTTPServer(addr string) *http.Server {
	hs := &http.Server{
		Addr:              addr,
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.opts.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.mu.Lock()
	s.servers = append(s.servers, hs)
	s.mu.Unlock()
	return hs
}

// Shutdown closes every stream socket with 1001 (going away), refuses new ones, shuts down
// the http.Servers built by HTTPServer (in-flight requests finish) and waits for both, at
// most until ctx is done (then the remaining sockets are cut). Keep the desk loop running
// until Shutdown returns: requests in flight and socket closes still reach it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	servers := append([]*http.Server(nil), s.servers...)
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(servers)+1)
	for i, hs := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = hs.Shutdown(ctx)
		}()
	}
	errs[len(servers)] = s.hub.Shutdown(ctx)
	wg.Wait()
	return errors.Join(errs...)
}

// serve is the outermost handler: it gives every request its id (RequestIDHeader), and
// counts, observes and logs it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	reqID := stampRequestID(sw, r)
	defer func() {
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		route := sw.route
		if route == "" {
			route = NotFoundRoute
		}
		took := time.Since(start)
		s.metrics.request(route, status)
		if s.opts.ObserveRequest != nil {
			s.opts.ObserveRequest(route, status, took)
		}
		// The path, never the headers: the API key lives in a header. A refusal or a failure
		// is what a client asks the operator about, by its request id: those are logged at
		// info; a success only at debug (one line per request costs the busy desk).
		level := slog.LevelDebug
		if status >= 400 {
			level = slog.LevelInfo
		}
		s.log.Log(r.Context(), level, "request", "id", reqID, "method", r.Method, "path", r.URL.Path, "route", route, "status", status, "duration", took)
	}()
	if s.console(sw, r) {
		return
	}
	if s.cors.handle(sw, r, s.router) {
		return
	}
	s.router.ServeHTTP(sw, r)
}

// route is one registered operation.
type route struct {
	method  string
	path    string // httprouter pattern
	auth    bool   // X-API-Key required
	handler handlerFunc
}

// handlerFunc handles a routed request; keyHash is the caller's hashed key on
// authenticated routes and empty elsewhere.
type handlerFunc func(w http.ResponseWriter, r *http.Request, ps httprouter.Params, keyHash string)

// routes lists every operation of SPEC.md and DECISIONS.md: a command without a body is
// one line (command, idCommand), as is a read (query, limitedQuery). Every GET under /rfq/ is
// static; :id appears on DELETE /rfq/:id only (httprouter forbids a static sibling of a
// parameter on the same method).
func (s *Server) routes() []route {
	return []route{
		{"POST", "/maker/register/start", false, s.registerStart},
		{"POST", "/maker/register/complete", false, s.registerComplete},
		{"POST", "/maker/challenge", false, s.challenge},
		{"POST", "/maker/api-key/rotate", false, s.rotateKey},
		{"GET", "/maker/status", true, s.query(qMakerStatus)},
		{"POST", "/maker/preapproval", true, s.command(func(rq machine.Req) machine.Command_ { return machine.Preapproval{Req: rq} })},
		{"POST", "/maker/quotes", true, s.submitQuote},
		{"DELETE", "/maker/quotes/:id", true, s.deleteQuote},
		{"DELETE", "/maker/quotes", true, s.command(func(rq machine.Req) machine.Command_ { return machine.CancelAllQuotes{Req: rq} })},
		{"POST", "/maker/rfq/:id/decline", true, s.declineRFQ},
		{"GET", "/maker/trades", true, s.limitedQuery(qMakerTrades)},
		{"GET", "/maker/stream", false, s.stream}, // the key is checked after the handshake (4401)
		{"GET", "/maker/reference-price", true, s.referencePrice},
		{"GET", "/rfq/incoming", true, s.query(qRfqIncoming)},
		{"GET", "/rfq/mine", true, s.query(qRfqMine)},
		{"POST", "/rfq", true, s.createRFQ},
		{"DELETE", "/rfq/:id", true, s.cancelRFQ},
		{"GET", "/rfq-history", true, s.limitedQuery(qRfqHistory)},
		{"POST", "/quote/:id/accept", true, s.idCommand("id", func(rq machine.Req, id string) machine.Command_ { return machine.AcceptQuote{Req: rq, QuoteID: id} })},
		{"GET", "/trades", true, s.limitedQuery(qTrades)},
		{"GET", "/desk", true, s.query(qDesk)},
		{"GET", "/config", true, s.query(qConfig)},
		{"GET", "/instruments", true, s.query(qInstruments)},
		{"GET", "/balances", true, s.query(qBalances)},
		{"GET", "/wallet/holdings", true, s.query(qBalances)},
		{"GET", "/wallet/incoming", true, s.query(qIncoming)},
		{"POST", "/wallet/incoming/:cid/accept", true, s.idCommand("cid", func(rq machine.Req, cid string) machine.Command_ { return machine.AcceptIncoming{Req: rq, CID: cid} })},
		{"POST", "/wallet/withdraw", true, s.withdraw},
		{"POST", "/faucet", true, s.command(func(rq machine.Req) machine.Command_ { return machine.FaucetDraw{Req: rq} })},
		{"GET", "/faucet", true, s.query(qFaucetInfo)},
		{"GET", "/tx/pending", true, s.query(qTxPending)},
		{"POST", "/tx/execute", true, s.execute},
		{"GET", "/healthz", false, s.healthz},
		{"GET", "/maker/scorecard", true, s.scorecard},
		{"GET", "/maker/protection", true, s.query(qProtection)},
		{"PUT", "/maker/protection", true, s.setProtection},
		{"POST", "/maker/protection/reset", true, s.command(resetProtection)},
		{"POST", "/maker/stream/ticket", true, s.streamTicket},
	}
}

func (s *Server) buildRouter() *httprouter.Router {
	rt := httprouter.New()
	rt.RedirectTrailingSlash = false
	rt.RedirectFixedPath = false
	rt.HandleOPTIONS = false
	rt.HandleMethodNotAllowed = true
	rt.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setRoute(w, NotFoundRoute)
		s.writeError(w, r, http.StatusNotFound, "", "no such endpoint")
	})
	rt.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// httprouter has set Allow; the status is ours to write.
		setRoute(w, MethodNotAllowedRoute)
		s.writeError(w, r, http.StatusMethodNotAllowed, "", "method "+r.Method+" is not allowed here")
	})
	rt.PanicHandler = s.recovered
	for _, rte := range s.routes() {
		rt.Handle(rte.method, rte.path, s.wrap(rte))
	}
	return rt
}

// wrap names the route for the counters and checks the API key where required: a missing
// key is 401 without a desk call; an unknown one is the desk's 401, before any refusal of
// the request's contents (authfirst.go).
func (s *Server) wrap(rte route) httprouter.Handle {
	name := rte.method + " " + rte.path
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		setRoute(w, name)
		keyHash := ""
		if rte.auth {
			key := r.Header.Get("X-API-Key")
			if key == "" {
				s.writeError(w, r, http.StatusUnauthorized, "", "missing X-API-Key header")
				return
			}
			keyHash = HashKey(key)
			setKeyHash(w, keyHash)
		}
		r, ok := s.idempotency(w, r, rte)
		if !ok {
			return
		}
		rte.handler(w, r, ps, keyHash)
	}
}

// recovered answers a handler panic with a JSON 500 that leaks nothing, and logs it.
// http.ErrAbortHandler is re-raised so net/http aborts the response as intended.
func (s *Server) recovered(w http.ResponseWriter, r *http.Request, v any) {
	if v == http.ErrAbortHandler {
		panic(v)
	}
	s.log.Error("handler panic", "id", requestIDOf(w), "method", r.Method, "path", r.URL.Path, "panic", panicValue(v), "stack", string(debug.Stack()))
	if sw, ok := w.(*statusWriter); ok && (sw.hijacked || sw.status != 0) {
		return // too late for a body
	}
	s.writeError(w, r, http.StatusInternalServerError, "", "internal error")
}

// clientIP is the address the per-IP limits count: the peer's IP (no proxy headers are
// trusted).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return strings.TrimSpace(host)
}

// withTimeout derives the context of a desk call from the request.
func (s *Server) withTimeout(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.opts.RequestTimeout)
}

// deadlineIn is now + d.
func deadlineIn(d time.Duration) time.Time { return time.Now().Add(d) }
