package transport

import (
	"sort"
	"sync"
	"sync/atomic"
)

// RouteStatusCount is the number of requests answered on one route with one status.
// Route is the registered pattern ("POST /quote/:id/accept"), or NotFoundRoute /
// MethodNotAllowedRoute for requests that matched none, so the label set stays bounded.
type RouteStatusCount struct {
	Route  string
	Status int
	Count  uint64
}

// Route labels of requests that matched no registered route.
const (
	NotFoundRoute         = "NOT_FOUND"
	MethodNotAllowedRoute = "METHOD_NOT_ALLOWED"
)

// MetricsSnapshot is a copy of the transport's counters, for rendering (Prometheus or else).
type MetricsSnapshot struct {
	// Requests by route and status, sorted by route then status.
	Requests []RouteStatusCount
	// RateLimited counts 429 answers of the per-IP limits (also inside Requests).
	RateLimited uint64
	// SocketsOpen is the number of stream sockets currently registered in the hub.
	SocketsOpen int64
	// SocketsOpened counts stream sockets that finished their handshake, ever.
	SocketsOpened uint64
	// FramesSent counts stream data frames written to sockets.
	FramesSent uint64
	// StreamWrites counts the socket writes that carried them: stream frames queued
	// together for one socket go out in one write (coalesce.go).
	StreamWrites uint64
	// SlowConsumersDropped counts sockets closed because their send queue was full.
	SlowConsumersDropped uint64
	// PongTimeouts counts sockets dropped because they missed a pong.
	PongTimeouts uint64
	// SocketsRefused counts upgrades refused or closed at once: missing key, too many
	// sockets in total or for the party, shutting down.
	SocketsRefused uint64
}

// metrics holds the counters; routes × statuses is a bounded set.
type metrics struct {
	mu       sync.Mutex
	requests map[routeStatus]uint64

	rateLimited   atomic.Uint64
	socketsOpen   atomic.Int64
	socketsOpened atomic.Uint64
	framesSent    atomic.Uint64
	streamWrites  atomic.Uint64
	slowDropped   atomic.Uint64
	pongTimeouts  atomic.Uint64
	refused       atomic.Uint64
}

type routeStatus struct {
	route  string
	status int
}

func newMetrics() *metrics { return &metrics{requests: make(map[routeStatus]uint64)} }

func (m *metrics) request(route string, status int) {
	m.mu.Lock()
	m.requests[routeStatus{route, status}]++
	m.mu.Unlock()
}

func (m *metrics) snapshot() MetricsSnapshot {
	m.mu.Lock()
	reqs := make([]RouteStatusCount, 0, len(m.requests))
	for k, n := range m.requests {
		reqs = append(reqs, RouteStatusCount{Route: k.route, Status: k.status, Count: n})
	}
	m.mu.Unlock()
	sort.Slice(reqs, func(i, j int) bool {
		if reqs[i].Route != reqs[j].Route {
			return reqs[i].Route < reqs[j].Route
		}
		return reqs[i].Status < reqs[j].Status
	})
	return MetricsSnapshot{
		Requests:             reqs,
		RateLimited:          m.rateLimited.Load(),
		SocketsOpen:          m.socketsOpen.Load(),
		SocketsOpened:        m.socketsOpened.Load(),
		FramesSent:           m.framesSent.Load(),
		StreamWrites:         m.streamWrites.Load(),
		SlowConsumersDropped: m.slowDropped.Load(),
		PongTimeouts:         m.pongTimeouts.Load(),
		SocketsRefused:       m.refused.Load(),
	}
}
