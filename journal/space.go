package journal

import (
	"context"
	"sync"
)

// WaitSpace is for implementations of Log whose queue is bounded: called with mu held
// while the queue is full, it unlocks mu and waits until space is closed (the writer took
// the queue; space is read under mu, so pass the current channel) or ctx ends. After
// space it returns nil with mu locked again, to look at the queue anew; when ctx ends it
// returns ctx's error with mu unlocked.
func WaitSpace(ctx context.Context, mu sync.Locker, space <-chan struct{}) error {
	mu.Unlock()
	select {
	case <-space:
		mu.Lock()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
