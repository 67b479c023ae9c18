package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// zombieReport is what a paused leader did once resumed.
type zombieReport struct {
	exited  bool   // it exited within the bound
	code    int    // its exit status
	said    string // why, as it logged it
	refused bool   // a write of its was refused (fenced by the epoch)
	acked   bool   // the request sent to it while paused was acknowledged (must not be)
}

func (z zombieReport) fenced() bool { return z.exited && z.code != 0 && z.said != "" && !z.acked }

// failover fails the leader (SIGKILL, or SIGSTOP until the standby serves and then
// SIGCONT) and measures the take over: from the signal to the standby's /readyz
// answering 200.
func (r *rehearsal) failover(ctx context.Context, leader, standby *desk, pause bool) (roundResult, error) {
	rr := roundResult{signal: "SIGKILL"}
	sig := syscall.SIGKILL
	if pause {
		rr.signal, sig = "SIGSTOP", syscall.SIGSTOP
	}
	start := time.Now()
	if err := leader.signal(sig); err != nil {
		return rr, fmt.Errorf("%s desk %s: %w", rr.signal, leader.name, err)
	}
	// While paused, the zombie gets a write: it reads it once resumed, and must refuse it
	// or die before answering.
	zombieAnswer := make(chan int, 1)
	if pause {
		go func() { zombieAnswer <- postRegistration(leader.base()) }()
	}
	if err := standby.waitReady(ctx, 60*time.Second); err != nil {
		_ = leader.signal(syscall.SIGCONT)
		return rr, fmt.Errorf("take over by desk %s: %w", standby.name, err)
	}
	rr.takeover = time.Since(start)
	rr.hot = strings.Contains(standby.log(), "from_standby=true")
	if !pause {
		select {
		case <-leader.done():
		case <-time.After(10 * time.Second):
			return rr, fmt.Errorf("desk %s survived SIGKILL", leader.name)
		}
		return rr, nil
	}
	if err := leader.signal(syscall.SIGCONT); err != nil {
		return rr, fmt.Errorf("SIGCONT desk %s: %w", leader.name, err)
	}
	select {
	case <-leader.done():
		rr.zombie.exited = true
		rr.zombie.code = leader.exitCode()
	case <-time.After(15 * time.Second):
		leader.terminate()
	}
	log := leader.log()
	for _, why := range []string{"was taken over by another desk", "lost the leader's lock"} {
		if strings.Contains(log, why) {
			rr.zombie.said = why
			break
		}
	}
	rr.zombie.refused = strings.Contains(log, "refused an append")
	select {
	case status := <-zombieAnswer:
		rr.zombie.acked = status >= 200 && status < 300
	case <-time.After(5 * time.Second):
	}
	return rr, nil
}

// postRegistration starts a registration at base and returns the status (0 without an
// answer).
func postRegistration(base string) int {
	body := `{"displayName":"zombie","publicKey":"` + strings.Repeat("A", 43) + `="}`
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Post(base+"/maker/register/start", "application/json", strings.NewReader(body))
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// splitBrain counts the split-brain writes: records, in either journal, of an epoch
// older than a record before them (a fenced writer's append after the new writer's),
// and epochs that more than one desk process claims to lead under.
func splitBrain(ctx context.Context, dsn string, desks []*desk) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, fmt.Errorf("split-brain check: %w", err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `
SELECT count(*) FROM (
	SELECT epoch, max(epoch) OVER (PARTITION BY log ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
	FROM rfqdesk_record
) r WHERE epoch < before`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("split-brain check: %w", err)
	}
	byLog := [2]map[uint64][]string{{}, {}}
	for _, d := range desks {
		for who, e := range d.epochs() {
			byLog[0][e[0]] = append(byLog[0][e[0]], who)
			byLog[1][e[1]] = append(byLog[1][e[1]], who)
		}
	}
	for _, m := range byLog {
		for _, who := range m {
			if len(who) > 1 {
				n += len(who) - 1
			}
		}
	}
	return n, nil
}
