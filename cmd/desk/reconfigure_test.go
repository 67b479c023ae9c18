package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/node"
)

// lockedBuffer is a stderr that the test reads while the desk writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startOn runs the desk on a given data directory with a configuration, logging at info;
// it returns the desk and its log, or (nil, log, exit code) when the desk refused to start.
func startOn(t *testing.T, dataDir, config string) (*liveDesk, *lockedBuffer, int) {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "desk.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", dataDir, "-config", cfgPath, "-log-level", "info"}
	runCtx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan int, 1)
	stderr := &lockedBuffer{}
	go func() { done <- run(runCtx, args, io.Discard, stderr, os.Getenv, ready) }()
	select {
	case addrs := <-ready:
		d := &liveDesk{base: "http://" + addrs[0], admin: "http://" + addrs[1]}
		var once sync.Once
		d.stop = func() {
			once.Do(func() {
				cancel()
				if code := <-done; code != 0 {
					t.Errorf("desk exited %d: %s", code, stderr.String())
				}
			})
		}
		t.Cleanup(d.stop)
		return d, stderr, 0
	case code := <-done:
		cancel()
		return nil, stderr, code
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatal("desk did not start within 15s")
	}
	return nil, nil, 0
}

// dirDigest hashes every file of a directory tree but the lock files, to show that a
// refused start changed nothing.
func dirDigest(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() == "LOCK" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// TestConfigChangeOnRestart: a desk started, stopped and started again with a new quote
// lifetime, cbtc price and fee tier logs each changed key (old -> new), serves the new values
// (/config, the reference price, a trade's fee), and a replay of its journal reaches the
// same configuration; a change that cannot apply (a decimals count) exits non-zero with the
// reason and leaves the data directory as it was.
func TestConfigChangeOnRestart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	d, _, _ := startOn(t, data, baseConfig)
	taker := house(t, d)
	if cfg, err := taker.Config(ctx(t)); err != nil || cfg.QuoteLifetimeSeconds != 30 {
		t.Fatalf("config before %+v %v", cfg, err)
	}
	d.stop()

	changed := strings.Replace(baseConfig, `min_notional_usd = "1"`, "min_notional_usd = \"1\"\nquote_lifetime = \"45s\"", 1)
	changed = strings.Replace(changed, `usd_price = "100000"`, `usd_price = "90000"`, 1)
	changed += "\n[[fee_tier]]\nmin_notional_usd = \"0\"\nfee_bps = 40\n"
	d, log, _ := startOn(t, data, changed)
	for _, want := range []string{
		"key=quote_lifetime old=30s new=45s",
		"key=instrument.cbtc.usd_price old=100000 new=90000",
		`key=fee_tier old="0:30bps, 10000:20bps, 100000:10bps" new=0:40bps`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	taker = house(t, d)
	if cfg, err := taker.Config(ctx(t)); err != nil || cfg.QuoteLifetimeSeconds != 45 {
		t.Fatalf("config after %+v %v", cfg, err)
	}
	m := maker(t, d, "Reconfigured Maker", true)
	s := subscribe(t, m)
	if price, ok, err := m.ReferencePrice(ctx(t), "cbtc", "usdcx"); err != nil || !ok || price != "90000" {
		t.Fatalf("reference price after %s %v %v", price, ok, err)
	}
	_, q := quoteRFQ(t, taker, m, s, client.CreateRFQRequest{Direction: "SELL", Qty: "0.05", Base: "cbtc", Quote: "usdcx", TTLSeconds: 120}, "60000")
	anchor(t, m, s, q)
	if _, err := taker.AcceptQuote(ctx(t), q.QuoteID); err != nil {
		t.Fatal(err)
	}
	e, _ := await(t, s, "trade.settled", nil)
	if settled, err := e.TradeSettled(); err != nil || settled.Fee != "12" {
		t.Fatalf("settled %+v %v, want the fee at the new 40 bps of 3000", settled, err)
	}
	d.stop()

	// -print-config prints what is in force, and what the file given would change.
	oldPath := filepath.Join(t.TempDir(), "old.toml")
	if err := os.WriteFile(oldPath, []byte(baseConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-data", data, "-config", oldPath, "-print-config"}, &out, &errOut, os.Getenv, nil); code != 0 {
		t.Fatalf("-print-config exited %d: %s", code, errOut.String())
	}
	for _, want := range []string{`quote_lifetime = "45s"`, `usd_price = "90000"`, "fee_bps = 40"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-print-config does not show %s in force:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "quote_lifetime: 45s -> 30s") {
		t.Errorf("-print-config does not say what the file would change: %s", errOut.String())
	}

	// The journal replayed from its genesis has the new configuration in force.
	log2, err := journal.OpenDir(filepath.Join(data, "desk"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fromGenesis, _, err := node.ReplayDesk(log2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromSnapshot, _, err := node.ReplayDesk(log2, true, nil)
	_ = log2.Close()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := fromGenesis.Digest()
	sn, _ := fromSnapshot.Digest()
	if g != sn || fromGenesis.Cfg.QuoteLifetime != 45*time.Second || fromGenesis.Cfg.Instruments[0].USDPrice.String() != "90000" {
		t.Fatalf("replay: digests equal %v, quote lifetime %s, cbtc %s", g == sn, fromGenesis.Cfg.QuoteLifetime, fromGenesis.Cfg.Instruments[0].USDPrice)
	}

	// A change that cannot apply refuses to start and changes nothing.
	before := dirDigest(t, data)
	refused := strings.Replace(changed, "decimals = 8", "decimals = 6", 1)
	if d, log, code := startOn(t, data, refused); d != nil || code == 0 || !strings.Contains(log.String(), "instrument.cbtc.decimals cannot change") {
		t.Fatalf("a decimals change started (exit %d):\n%s", code, log)
	}
	if dirDigest(t, data) != before {
		t.Fatal("the refused start changed the data directory")
	}
	// The same configuration again changes nothing and logs no change.
	d, log, _ = startOn(t, data, changed)
	if strings.Contains(log.String(), "configuration changed") {
		t.Fatalf("an unchanged configuration logged a change:\n%s", log)
	}
	if cfg, err := house(t, d).Config(ctx(t)); err != nil || cfg.QuoteLifetimeSeconds != 45 {
		t.Fatalf("config after a restart %+v %v", cfg, err)
	}
}
