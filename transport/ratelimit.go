package transport

import (
	"container/list"
	"sync"
	"time"
)

// ipLimiter is a token bucket per client IP: capacity perMinute, refilled at perMinute per
// minute. The map of buckets is bounded: past maxIPs the least recently seen IP is evicted
// (it starts again with a full bucket, which is the price of a bounded map).
type ipLimiter struct {
	mu        sync.Mutex
	perMinute float64
	maxIPs    int
	now       func() time.Time
	buckets   map[string]*list.Element
	lru       *list.List // front: most recently seen
}

type bucket struct {
	ip     string
	tokens float64
	at     time.Time
}

func newIPLimiter(perMinute, maxIPs int, now func() time.Time) *ipLimiter {
	return &ipLimiter{
		perMinute: float64(perMinute), maxIPs: maxIPs, now: now,
		buckets: make(map[string]*list.Element), lru: list.New(),
	}
}

// allow takes one token for ip and reports whether there was one, and if not how long
// until the next token.
func (l *ipLimiter) allow(ip string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	el, ok := l.buckets[ip]
	if !ok {
		for l.lru.Len() >= l.maxIPs {
			old := l.lru.Back()
			delete(l.buckets, old.Value.(*bucket).ip)
			l.lru.Remove(old)
		}
		el = l.lru.PushFront(&bucket{ip: ip, tokens: l.perMinute, at: now})
		l.buckets[ip] = el
	} else {
		l.lru.MoveToFront(el)
	}
	b := el.Value.(*bucket)
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens += elapsed.Minutes() * l.perMinute
		if b.tokens > l.perMinute {
			b.tokens = l.perMinute
		}
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.perMinute * float64(time.Minute))
	return false, wait
}

// size is the number of IPs tracked (for tests).
func (l *ipLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
