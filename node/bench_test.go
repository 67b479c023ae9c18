package node_test

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// lifecycle runs one RFQ to settlement through the node's loop (drive.Lifecycle), within
// 20 seconds.
func lifecycle(n *node.Node, s *drive.Settled, m, tk drive.Party, dir machine.Direction) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return drive.Lifecycle(ctx, n.Loop, s, m, tk, dir)
}

// openSettling opens a node with opts whose sink is a drive.Settled, and a driver on it.
func openSettling(tb testing.TB, opts node.Options) (*node.Node, *drive.Settled, drive.Driver) {
	tb.Helper()
	s := drive.NewSettled()
	opts.Sink = s
	n, err := node.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return n, s, drive.Driver{T: tb, Desk: n.Loop}
}

// benchLifecycles is how many lifecycles BenchmarkReplay's journal holds
// (RFQDESK_BENCH_LIFECYCLES overrides it).
func benchLifecycles(b *testing.B) int {
	n := 6000
	if v := os.Getenv("RFQDESK_BENCH_LIFECYCLES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("RFQDESK_BENCH_LIFECYCLES=%q is not a positive integer", v)
		}
	}
	return n
}

// recordDesk runs a real desk on dir (journals without fsync, checkpoints at the default
// interval) through registrations, funding and lifecycles settled by the real ledger with
// real signatures, eight maker/taker pairs at a time, and closes it.
func recordDesk(b *testing.B, dir string, lifecycles int) {
	opts := options(dir, nil)
	opts.CheckpointEvery = 0
	n, s, d := openSettling(b, opts)
	const pairs = 8
	ps := d.Pairs(pairs, n.Loop)
	var wg sync.WaitGroup
	errs := make(chan error, pairs)
	for i := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := i; k < lifecycles; k += pairs {
				dir := machine.Sell // alternate directions so that balances stay level
				if (k/pairs)%2 == 1 {
					dir = machine.Buy
				}
				if err := lifecycle(n, s, ps[i][0], ps[i][1], dir); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	closeWithin(b, n, 30*time.Second)
}

// BenchmarkReplay measures rebuilding a desk from its journal (node.ReplayDesk from
// genesis: read, decode, apply, verify every checkpoint) over a journal a real desk wrote,
// beside two baselines of the same run over the same files: reading the records, and
// reading and decoding them, with the collector's target the desk process runs with
// (node.DefaultGCPercent) and at Go's default. It reports inputs/s, the projected seconds for 1,000,000
// inputs (s/1M, target < 10) and x-target = 10 s / s/1M (≥ 1 meets it).
func BenchmarkReplay(b *testing.B) {
	dir := b.TempDir()
	lifecycles := benchLifecycles(b)
	start := time.Now()
	recordDesk(b, dir, lifecycles)
	log := deskJournal(b, dir)
	defer log.Close()
	inputs := log.LastSeq() - 1
	b.Logf("journal: %d lifecycles, %d desk inputs, recorded in %s", lifecycles, inputs, time.Since(start).Round(time.Millisecond))

	per := map[string]float64{} // ns per input of each sub-benchmark
	report := func(b *testing.B, name string) {
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(inputs)
		per[name] = ns
		b.ReportMetric(1e9/ns, "inputs/s")
		b.ReportMetric(ns*1e6/1e9, "s/1M")
	}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := log.ReadFrom(2, func(uint64, []byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		report(b, "read")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := log.ReadFrom(2, func(seq uint64, rec []byte) error {
				_, err := machine.DecodeEnvelope(rec)
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, "decode")
	})
	replay := func(gcPercent int) func(b *testing.B) {
		return func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
			b.ReportAllocs()
			for b.Loop() {
				_, rec, err := node.ReplayDesk(log, false, nil)
				if err != nil {
					b.Fatal(err)
				}
				if rec.DigestMismatch != 0 || rec.DeskInputs != inputs {
					b.Fatalf("replay: %+v, want %d inputs and no mismatch", rec, inputs)
				}
			}
			name := "replay-gogc-" + strconv.Itoa(gcPercent)
			report(b, name)
			b.ReportMetric(10/(per[name]*1e6/1e9), "x-target")
			if per["decode"] > 0 {
				b.ReportMetric(per[name]/per["decode"], "x-decode")
			}
		}
	}
	// The desk replays its journal at start with the collector's target it runs with
	// (node.ApplyGCPercent runs first in cmd/desk), so "replay" measures that; the
	// same at Go's default follows for comparison.
	b.Run("replay", replay(node.DefaultGCPercent))
	b.Run("replay-gogc-100", replay(100))
}
