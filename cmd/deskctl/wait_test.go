package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/transport"
)

// noDesk is a desk that must not be asked anything: it counts the calls it gets.
type noDesk struct{ calls atomic.Int64 }

var errNoDesk = errors.New("the probe must not reach the desk")

func (d *noDesk) Do(context.Context, machine.Command_) (machine.Reply, error) {
	d.calls.Add(1)
	return machine.Reply{}, errNoDesk
}

func (d *noDesk) Read(context.Context, string, machine.Query) (machine.Reply, error) {
	d.calls.Add(1)
	return machine.Reply{}, errNoDesk
}

func (d *noDesk) OpenSocket(context.Context, uint64, string, bool) error { return nil }
func (d *noDesk) CloseSocket(context.Context, uint64) error              { return nil }

// TestWaitIsNoAuthFailure: `deskctl wait` against a serving desk exits 0, and the desk
// counts no 401 for it (it polled the keyless probe, not a keyed route) and was not called.
func TestWaitIsNoAuthFailure(t *testing.T) {
	d := &noDesk{}
	srv := transport.New(transport.Options{Desk: d})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	env := func(k string) string { return map[string]string{"DESK_URL": ts.URL}[k] }
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if code := run(ctx, []string{"wait", "-timeout", "5s"}, &out, &errOut, env); code != exitOK {
		t.Fatalf("wait: exit %d: %s", code, errOut.String())
	}
	var probes uint64
	for _, c := range srv.Metrics().Requests {
		if c.Status == http.StatusUnauthorized {
			t.Errorf("wait was counted as a 401: %+v", c)
		}
		if c.Route == transport.HealthRoute && c.Status == http.StatusOK {
			probes += c.Count
		}
	}
	if probes == 0 {
		t.Errorf("wait did not poll %s: %+v", transport.HealthRoute, srv.Metrics().Requests)
	}
	if n := d.calls.Load(); n != 0 {
		t.Errorf("the probe reached the desk %d times", n)
	}
}
