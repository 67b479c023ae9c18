package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/deskco/rfqdesk/internal/pgcluster"
)

// benchTrades measures settled trades per second over the wire with each backend, in one
// run: cmd/loadgen drives a desk on files, then a desk on this run's PostgreSQL, with the
// same load (-bench-makers makers, -bench-takers takers, each phase bounded by d).
func benchTrades(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "rfqdesk-habench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.deskBin
	builds := [][2]string{{filepath.Join(dir, "loadgen"), "./cmd/loadgen"}}
	if bin == "" {
		bin = filepath.Join(dir, "desk")
		builds = append(builds, [2]string{bin, "./cmd/desk"})
	}
	for _, b := range builds {
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", b[1], err, out)
		}
	}
	cluster, err := pgcluster.Start(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(out, "failover: stop PostgreSQL:", err)
		}
	}()
	dsn, err := cluster.CreateDatabase(ctx, "bench")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "settled trades per second over the wire, %d makers, %d takers, phases of %v:\n", o.benchMakers, o.benchTakers, o.bench)
	for _, be := range []struct{ name, args string }{{"files", ""}, {"postgres", "-journal " + dsn}} {
		res := filepath.Join(dir, be.name+".json")
		args := []string{"-desk-bin", bin, "-no-floor", "-fanout-rounds", "0", "-makers", fmt.Sprint(o.benchMakers),
			"-takers", fmt.Sprint(o.benchTakers), "-invite", "3", "-duration", o.bench.String(), "-out", res}
		if be.args != "" {
			args = append(args, "-desk-args", be.args)
		}
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "loadgen"), args...)
		start := time.Now()
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("loadgen on %s: %w\n%s", be.name, err, b)
		}
		b, err := os.ReadFile(res)
		if err != nil {
			return err
		}
		var r struct {
			Max, Half struct {
				SettledPerS   float64 `json:"settled_per_s"`
				Settled       int64   `json:"settled"`
				MaxAPICallP99 float64 `json:"max_api_call_p99_ms"`
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("loadgen on %s: %w", be.name, err)
		}
		fmt.Fprintf(out, "  %-8s max %7.1f trades/s (%d settled); at half that rate the slowest call's p99 is %.1f ms  (%v)\n",
			be.name, r.Max.SettledPerS, r.Max.Settled, r.Half.MaxAPICallP99, time.Since(start).Round(time.Second))
	}
	return nil
}
