package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/internal/pgcluster"
	"github.com/deskco/rfqdesk/node"
	"github.com/deskco/rfqdesk/pglog"
)

// pg is the package's PostgreSQL cluster, started by the first test that needs it and
// stopped by TestMain (pgcluster.Lazy.Run).
var pg pgcluster.Lazy

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// pgDatabase returns the URL of a new database for the test (skipping it without
// PostgreSQL).
func pgDatabase(t *testing.T) string { return pg.Database(t) }

// haDesk is a desk process's run on PostgreSQL, in this process.
type haDesk struct {
	ready  chan [2]string
	done   chan struct{} // closed when run returned, with its exit code in code
	code   int
	cancel context.CancelFunc
	stderr *lockedBuffer
}

func startHADesk(t *testing.T, dsn, role, addr, admin string) *haDesk {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "desk.toml")
	if err := os.WriteFile(cfgPath, []byte(baseConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &haDesk{ready: make(chan [2]string, 1), done: make(chan struct{}), cancel: cancel, stderr: &lockedBuffer{}}
	args := []string{"-addr", addr, "-admin-addr", admin, "-data", filepath.Join(dir, "data"), "-config", cfgPath,
		"-log-level", "info", "-journal", dsn, "-role", role}
	go func() {
		d.code = run(ctx, args, io.Discard, d.stderr, os.Getenv, d.ready)
		close(d.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-d.done:
		case <-time.After(20 * time.Second):
			t.Error("a desk did not stop within 20s")
		}
	})
	return d
}

func (d *haDesk) waitReady(t *testing.T, within time.Duration) [2]string {
	t.Helper()
	select {
	case a := <-d.ready:
		return a
	case <-d.done:
		t.Fatalf("desk exited %d before serving: %s", d.code, d.stderr.String())
	case <-time.After(within):
		t.Fatalf("desk did not serve within %v: %s", within, d.stderr.String())
	}
	return [2]string{}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestHAStandbyTakesOver: a second desk on the same database with -role leader is
// refused; with -role auto it stands by (public API 503 RETRY_LATER with Retry-After,
// /readyz not ready) and, when the leader stops, takes over on the same addresses and
// serves the parties the leader registered, with their funds.
func TestHAStandbyTakesOver(t *testing.T) {
	dsn := pgDatabase(t)
	leader := startHADesk(t, dsn, roleLeader, "127.0.0.1:0", "127.0.0.1:0")
	la := leader.waitReady(t, 20*time.Second)

	second := startHADesk(t, dsn, roleLeader, "127.0.0.1:0", "127.0.0.1:0")
	select {
	case <-second.done:
		if code := second.code; code != 1 || !strings.Contains(second.stderr.String(), "another desk leads") {
			t.Fatalf("a second leader exited %d: %s", code, second.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second -role leader desk started")
	}

	addr, admin := freeAddr(t), freeAddr(t)
	standby := startHADesk(t, dsn, roleAuto, addr, admin)
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; {
		var err error
		if resp, err = http.Get("http://" + addr + "/desk"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby does not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !bytes.Contains(body, []byte(`"code":"RETRY_LATER"`)) {
		t.Fatalf("the standby answered %d (Retry-After %q): %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, err := http.Get("http://" + admin + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the standby's /readyz: %v %v", resp, err)
	}

	c, err := client.New("http://" + la[0])
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Register(ctx(t), "Before")
	if err != nil {
		t.Fatal(err)
	}
	fundAll(t, c, 2)
	before, err := c.Balances(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// The party's stream numbering, to resume from on the new leader.
	end := openRaw(t, "http://"+la[0], c.APIKey(), "").until(t, "snapshot.end")
	var latest struct{ Seq uint64 }
	if err := json.Unmarshal(end[len(end)-1].Payload, &latest); err != nil || latest.Seq == 0 {
		t.Fatalf("snapshot.end %s: the party has no numbered event to resume from (%v)", end[len(end)-1].raw, err)
	}

	start := time.Now()
	leader.cancel()
	<-leader.done
	if code := leader.code; code != 0 {
		t.Fatalf("the leader exited %d: %s", code, leader.stderr.String())
	}
	sa := standby.waitReady(t, 15*time.Second)
	t.Logf("take over after a clean stop: %v", time.Since(start))
	if !strings.Contains(standby.stderr.String(), "from_standby=true") {
		t.Errorf("the take over did not start from the standby's followed state: %s", standby.stderr.String())
	}
	if sa[0] != addr {
		t.Fatalf("the new leader serves on %s, not its standby address %s", sa[0], addr)
	}
	if resp, err := http.Get("http://" + admin + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the new leader's /readyz: %v %v", resp, err)
	}
	c2, err := client.New("http://"+addr, client.WithIdentity(id))
	if err != nil {
		t.Fatal(err)
	}
	after, err := c2.Balances(ctx(t))
	if err != nil {
		t.Fatalf("the new leader does not know the party the old one registered: %v", err)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("balances after the take over %+v, before %+v", after, before)
	}
	// A stream resume works across the take over: the last event again, then
	// stream.resumed; a since ahead of the party's numbering is a gap.
	got := openRaw(t, "http://"+addr, c.APIKey(), fmt.Sprintf("since=%d", latest.Seq-1)).until(t, "stream.resumed")
	if len(got) != 2 || got[0].Seq != latest.Seq ||
		string(got[1].raw) != fmt.Sprintf(`{"type":"stream.resumed","payload":{"from":%d,"to":%d}}`, latest.Seq, latest.Seq) {
		t.Fatalf("resume from %d on the new leader: %d frames, the last %s", latest.Seq-1, len(got), got[len(got)-1].raw)
	}
	if f := openRaw(t, "http://"+addr, c.APIKey(), fmt.Sprintf("since=%d", latest.Seq+1)).until(t, "snapshot.end"); f[0].Type != "stream.gap" {
		t.Fatalf("a since ahead on the new leader: first frame %s", f[0].raw)
	}
	resp, err = http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"desk_ha_leader 1", "desk_ha_takeover_seconds", "desk_ha_follower_records_total", "desk_ha_follower_checkpoint_mismatches_total 0", "desk_ha_follower_checkpoints_verified_total"} {
		if !bytes.Contains(metrics, []byte(m)) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
}

// TestHAFencedLeaderExits: when another writer takes the journals over behind the
// leader's back (a standby that got the lock while this desk was paused), the leader's
// next write is refused and it stops serving at once, exiting 1 with a message that
// says it was fenced.
func TestHAFencedLeaderExits(t *testing.T) {
	dsn := pgDatabase(t)
	leader := startHADesk(t, dsn, roleLeader, "127.0.0.1:0", "127.0.0.1:0")
	la := leader.waitReady(t, 20*time.Second)
	store, err := pglog.Open(context.Background(), dsn, pglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l, err := store.Log(context.Background(), node.DeskJournal)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.TakeOver(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, err := client.New("http://" + la[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx(t), "After the take over"); err == nil {
		t.Fatal("a fenced desk acknowledged a registration")
	}
	select {
	case <-leader.done:
		if code := leader.code; code != 1 || !strings.Contains(leader.stderr.String(), "fenced") {
			t.Fatalf("the fenced desk exited %d: %s", code, leader.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the fenced desk still runs: %s", leader.stderr.String())
	}
}

// TestHABadConfiguration: a -journal that is not a PostgreSQL URL, -role auto on files, an
// unknown role, and an unreachable database each stop the start with a clear message
// (never the password) and the right exit status, before anything serves.
func TestHABadConfiguration(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-journal", "mysql://x"}, 2, "-journal: want a postgres://"},
		{[]string{"-role", "auto"}, 2, "-role auto needs -journal postgres://"},
		{[]string{"-role", "boss", "-journal", "postgres://h/db"}, 2, `-role: "boss" is neither leader nor auto`},
		{[]string{"-journal", "postgres://desk:s3cret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"}, 1, "cannot reach postgres://desk:xxxxx@127.0.0.1:1/db"},
	} {
		var stderr lockedBuffer
		args := append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", filepath.Join(dir, "data")}, tc.args...)
		ready := make(chan [2]string, 1)
		code := run(context.Background(), args, io.Discard, &stderr, os.Getenv, ready)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "s3cret") {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", tc.args, code, tc.code, tc.want, stderr.String())
		}
		if len(ready) != 0 {
			t.Errorf("%v: the desk served", tc.args)
		}
	}
}
