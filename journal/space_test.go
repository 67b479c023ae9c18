package journal

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestWaitSpace: once space closes WaitSpace returns nil holding the lock again; when the
// context ends first it returns the context's error with the lock released.
func TestWaitSpace(t *testing.T) {
	var mu sync.Mutex
	space := make(chan struct{})
	mu.Lock()
	close(space)
	if err := WaitSpace(context.Background(), &mu, space); err != nil {
		t.Fatalf("after space: %v", err)
	}
	if mu.TryLock() {
		t.Fatal("after space the lock is not held")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitSpace(ctx, &mu, make(chan struct{})); !errors.Is(err, context.Canceled) {
		t.Fatalf("after the context ended: %v", err)
	}
	if !mu.TryLock() {
		t.Fatal("after the context ended the lock is still held")
	}
}
