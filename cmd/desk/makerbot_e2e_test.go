package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startDeskAt runs the desk binary on a fixed address and waits until it serves.
func startDeskAt(t *testing.T, bin, addr, data, cfg string) *exec.Cmd {
	t.Helper()
	return launch(t, exec.Command(bin, "-addr", addr, "-admin-addr", "127.0.0.1:0", "-data", data, "-config", cfg), false).cmd
}

var metricsLine = regexp.MustCompile(`msg="metrics serving" addr=(\S+)`)

// TestMakerBotEndToEnd runs cmd/makerbot against a real desk process while the house taker
// sends RFQs to it: the bot registers, funds itself and quotes each RFQ, the trades settle;
// it survives a desk restart (its stream drops and reconnects), and when its API key is
// rotated away it recovers a new one through challenge + rotate and keeps quoting.
func TestMakerBotEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the desk and the bot as processes")
	}
	dir := t.TempDir()
	deskBin, botBin := buildBinary(t, dir, ".", "desk"), buildBinary(t, dir, "../makerbot", "makerbot")
	cfg := filepath.Join(dir, "desk.toml")
	if err := os.WriteFile(cfg, []byte(baseConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, data := freePort(t), filepath.Join(dir, "data")
	base := "http://" + addr
	desk := startDeskAt(t, deskBin, addr, data, cfg)
	defer func() { _ = desk.Process.Signal(syscall.SIGTERM); _ = desk.Wait() }()

	idPath := filepath.Join(dir, "bot.json")
	bot := exec.Command(botBin, "-url", base, "-identity", idPath, "-name", "E2E Bot", "-metrics-addr", "127.0.0.1:0",
		"-reconcile-every", "1s", "-status-every", "2s", "-max-backoff", "1s", "-faucet-every", "1s")
	botErr, err := bot.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bot.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bot.Process.Signal(syscall.SIGTERM); _ = bot.Wait() }()
	metricsAddr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(botErr)
		for sc.Scan() {
			if testing.Verbose() {
				t.Log("bot:", sc.Text())
			}
			if m := metricsLine.FindStringSubmatch(sc.Text()); m != nil {
				metricsAddr <- m[1]
			}
		}
	}()
	var metricsURL string
	select {
	case a := <-metricsAddr:
		metricsURL = "http://" + a + "/metrics"
	case <-time.After(10 * time.Second):
		t.Fatal("the bot did not serve its metrics")
	}

	taker := houseAt(t, base)
	hint := awaitBotOnline(t, taker, idPath)
	trades := 0
	trade := func(dir client.Direction) {
		t.Helper()
		rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: dir, Qty: "0.001", Base: "cbtc", Quote: "usdcx",
			InvitedMakers: []string{hint}, TTLSeconds: 60})
		if err != nil {
			t.Fatal(err)
		}
		q := awaitQuote(t, taker, rfq.RFQID)
		if q.Maker != hint {
			t.Fatalf("quote from %s, want the bot %s", q.Maker, hint)
		}
		tr, err := taker.AcceptQuote(ctx(t), q.QuoteID)
		if err != nil {
			t.Fatal(err)
		}
		awaitTrade(t, taker, tr.TradeID)
		trades++
	}
	trade(client.Sell)
	trade(client.Buy)
	trade(client.Sell)

	// A desk restart drops the bot's stream; it reconnects and keeps quoting.
	_ = desk.Process.Signal(syscall.SIGTERM)
	_ = desk.Wait()
	desk = startDeskAt(t, deskBin, addr, data, cfg)
	awaitBotOnline(t, taker, idPath)
	trade(client.Buy)
	trade(client.Sell)

	// Rotate the bot's key away with its own party key: its socket closes with 4401 and
	// its REST calls get 401; it recovers a key of its own and keeps quoting.
	id, err := client.LoadIdentity(idPath)
	if err != nil {
		t.Fatal(err)
	}
	thief, err := client.New(base, client.WithIdentity(id))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := thief.RecoverKey(ctx(t)); err != nil {
		t.Fatal(err)
	}
	stolen := thief.APIKey()
	deadline := time.Now().Add(20 * time.Second)
	for {
		id, err := client.LoadIdentity(idPath)
		if err == nil && id.APIKey != stolen && metric(t, metricsURL, "makerbot_key_recoveries_total") > 0 {
			break // the bot rotated again and saved its own new key
		}
		if time.Now().After(deadline) {
			t.Fatal("the bot did not recover its API key within 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := thief.Status(ctx(t)); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("the stolen key still works after the bot's recovery: %v", err)
	}
	awaitBotOnline(t, taker, idPath)
	trade(client.Buy)
	trade(client.Sell)

	// The bot counts a win when its stream brings the quote's status, which may come just
	// after the taker saw its trade settle.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		won := metric(t, metricsURL, "makerbot_quotes_won_total")
		if won >= trades {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bot counts %d won quotes, want at least %d", won, trades)
		}
	}
	if rec := metric(t, metricsURL, "makerbot_key_recoveries_total"); rec < 1 {
		t.Fatalf("no key recovery counted")
	}
	if sent := metric(t, metricsURL, "makerbot_quotes_sent_total"); sent < trades {
		t.Fatalf("%d quotes sent for %d trades", sent, trades)
	}
}

// awaitBotOnline waits until the bot's identity file exists and the taker sees its hint
// among the makers online; it returns the hint.
func awaitBotOnline(t *testing.T, taker *client.Client, idPath string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if id, err := client.LoadIdentity(idPath); err == nil {
			if d, err := taker.Desk(ctx(t)); err == nil && slices.Contains(d.Makers, id.Hint) {
				return id.Hint
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the bot did not come online within 30s")
	return ""
}

// metric reads one counter from the bot's /metrics.
func metric(t *testing.T, url, name string) int {
	t.Helper()
	_, b := httpCall(t, "GET", url, "", nil)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(fmt.Errorf("%s: %w", name, err))
			}
			return n
		}
	}
	t.Fatalf("no %s in the bot's metrics", name)
	return 0
}
