package main

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// process is a desk binary running as its own process.
type process struct {
	cmd   *exec.Cmd
	base  string
	admin string // the admin listener's base URL
}

var servingLine = regexp.MustCompile(`msg="desk serving" addr=(\S+) admin=(\S+)`)

// deskFixture builds the desk binary into a fresh temporary directory and writes the base
// configuration beside it: the binary, the configuration file and the data directory (not
// created yet) of a desk process for the test to start, kill and restart.
func deskFixture(t *testing.T) (bin, cfg, data string) {
	t.Helper()
	dir := t.TempDir()
	bin = buildBinary(t, dir, ".", "desk")
	cfg = filepath.Join(dir, "desk.toml")
	if err := os.WriteFile(cfg, []byte(baseConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return bin, cfg, filepath.Join(dir, "data")
}

func startProcess(t *testing.T, bin, dir, cfg string) *process {
	t.Helper()
	// Frequent snapshots, so that kills also land between a snapshot and the records after it.
	return launch(t, exec.Command(bin, "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", dir, "-config", cfg,
		"-checkpoint-every", "50"), true)
}

// killedAtEnd starts a desk process as startProcess and kills it when the test ends.
func killedAtEnd(t *testing.T, bin, dir, cfg string) *process {
	t.Helper()
	p := startProcess(t, bin, dir, cfg)
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

// launch starts cmd, a desk binary, and waits until its log says it serves; with echo
// (for a desk the test stops itself) its log goes to the test's with -v. A desk that does
// not serve within 15 seconds is killed and fails the test.
func launch(t testing.TB, cmd *exec.Cmd, echo bool) *process {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if echo && testing.Verbose() {
				t.Log(sc.Text())
			}
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- [2]string{m[1], m[2]}
			}
		}
	}()
	select {
	case a := <-addrs:
		return &process{cmd: cmd, base: "http://" + a[0], admin: "http://" + a[1]}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the desk process did not start within 15s")
	}
	return nil
}

// account is what a client knows the desk acknowledged for one party.
type account struct {
	mu    sync.Mutex
	id    *client.Identity
	acked map[string]money.Decimal // symbol → deposits whose execute was acknowledged
	// inFlight sums the deposits whose execute got no answer: the desk journaled some of
	// them before it died and re-issues them after the restart, so they may land at any
	// later moment, or never.
	inFlight map[string]money.Decimal
}

// load registers a party and keeps funding it until ctx ends, recording acknowledgements.
func load(ctx context.Context, base string, acc *account) {
	c, err := client.New(base)
	if err != nil {
		return
	}
	acc.mu.Lock()
	id := acc.id
	acc.mu.Unlock()
	if id == nil {
		if id, err = c.Register(ctx, "crash load"); err != nil {
			return
		}
		acc.mu.Lock()
		acc.id = id
		acc.mu.Unlock()
	} else if c, err = client.FromIdentity(at(id, base), base); err != nil {
		return
	}
	for ctx.Err() == nil {
		if _, err := c.Faucet(ctx); err != nil {
			return
		}
		in, err := c.IncomingTransfers(ctx)
		if err != nil {
			return
		}
		for _, tr := range in {
			acts, err := c.AcceptTransfer(ctx, tr.CID)
			if err != nil {
				return
			}
			amt := money.MustParse(string(tr.Amount))
			acc.mu.Lock()
			acc.inFlight[tr.Symbol] = acc.inFlight[tr.Symbol].Add(amt)
			acc.mu.Unlock()
			res, err := c.SignAndExecute(ctx, acts)
			if err != nil || len(res) != 1 || !res[0].OK() {
				return // in flight: it may or may not have happened
			}
			acc.mu.Lock()
			acc.inFlight[tr.Symbol] = acc.inFlight[tr.Symbol].Sub(amt)
			acc.acked[tr.Symbol] = acc.acked[tr.Symbol].Add(amt)
			acc.mu.Unlock()
		}
	}
}

// TestCrashRecovery kills the desk process with SIGKILL at random moments under load, 20
// times, restarting it each time: every key a client was given still works, every deposit
// whose execution was acknowledged is in the balance (and nothing beyond what was in
// flight), and at the end the ledger's supply is conserved.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the desk process 20 times")
	}
	bin, cfg, data := deskFixture(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	accounts := make([]*account, 4)
	for i := range accounts {
		accounts[i] = &account{acked: map[string]money.Decimal{}, inFlight: map[string]money.Decimal{}}
	}
	deadline := time.Now().Add(90 * time.Second)
	rounds := 0
	for ; rounds < 20 && time.Now().Before(deadline); rounds++ {
		p := startProcess(t, bin, data, cfg)
		verify(t, p.base, accounts, rounds)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, acc := range accounts {
			wg.Add(1)
			go func() { defer wg.Done(); load(ctx, p.base, acc) }()
		}
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = p.cmd.Wait()
		cancel()
		wg.Wait()
	}
	if rounds < 20 {
		t.Fatalf("only %d rounds within the time bound", rounds)
	}
	acked := 0
	for _, acc := range accounts {
		acked += len(acc.acked)
	}
	if acked == 0 {
		t.Fatal("the load never had a deposit acknowledged: the test proved nothing")
	}
	p := startProcess(t, bin, data, cfg)
	verify(t, p.base, accounts, rounds)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()

	// The data directory opened in-process: the ledger's own invariants, conservation of
	// every instrument's supply included.
	n, err := node.Open(node.Options{Dir: data, Clock: drive.RealClock{}, Sink: drive.NewEvents(), Sync: journal.SyncNone,
		Desk: machine.DefaultConfig(), KeepConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close(context.Background()) }()
	if err := n.Ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if n.Recovered.DigestMismatch != 0 {
		t.Fatalf("recovery met %d checkpoint mismatches", n.Recovered.DigestMismatch)
	}
	if n.Recovered.SnapshotSeq == 0 || n.Recovered.LedgerSnapshotSeq == 0 {
		t.Fatalf("recovery did not start from snapshots: %+v", n.Recovered)
	}
}

// at is the identity pointed at the desk process now serving (each restart binds a new port).
func at(id *client.Identity, base string) *client.Identity {
	cp := *id
	cp.BaseURL = base
	return &cp
}

// verify checks, after a restart, that every party's key works and its balances hold
// every acknowledged deposit and no more than those plus every deposit ever in flight.
func verify(t *testing.T, base string, accounts []*account, round int) {
	t.Helper()
	for _, acc := range accounts {
		acc.mu.Lock()
		id := acc.id
		acc.mu.Unlock()
		if id == nil {
			continue
		}
		c, err := client.FromIdentity(at(id, base), base)
		if err != nil {
			t.Fatal(err)
		}
		c2, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		bal, err := c.Balances(c2)
		cancel()
		if err != nil {
			t.Fatalf("round %d: an acknowledged key no longer works: %v", round, err)
		}
		got := map[string]money.Decimal{}
		for _, h := range bal.Holdings {
			got[h.Symbol] = money.MustParse(string(h.Amount))
		}
		acc.mu.Lock()
		for sym, acked := range acc.acked {
			high := acked.Add(acc.inFlight[sym])
			if got[sym].Cmp(acked) < 0 || got[sym].Cmp(high) > 0 {
				t.Errorf("round %d: %s balance %s outside [%s, %s]", round, sym, got[sym], acked, high)
			}
		}
		acc.mu.Unlock()
	}
}
