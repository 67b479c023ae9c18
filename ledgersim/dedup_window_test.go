package ledgersim

import (
	"testing"
	"time"
)

// TestDedupWindow: a command re-issued within the window is refused as a duplicate naming
// its first submission and takes no effect again, through the window's last instant; once
// the window has passed, the update is forgotten (bounded by age), and the deduplication
// it gave with it. Canton (digital-asset/canton): the Ledger API's commands.proto,
// Commands.deduplication_period (a resubmission within the period after the first is a
// duplicate), bounded by the participant's ledger-api max-deduplication-duration (7 days by
// default); ledgersim's DedupWindow plays that bound.
func TestDedupWindow(t *testing.T) {
	const window = 40 * time.Minute
	e := newEnvTuned(t, ProfileTestnet, func(c *Config) { c.DedupWindow = window })
	send := func() (Update, error) {
		return e.submit(e.res, Transfer{Receiver: e.house, Instrument: "USDCx", Amount: d("5")}, "once")
	}
	first, err := send()
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(window - time.Nanosecond)
	_, err = send()
	wantCat(t, err, CategoryDuplicate)
	if _, err := e.l.Update(first.UpdateID); err != nil {
		t.Fatalf("the update is not retained within the window: %v", err)
	}
	e.clk.Advance(time.Nanosecond)
	// Any recorded input applies the passage of time.
	e.must(e.res, Transfer{Receiver: e.house, Instrument: "USDCx", Amount: d("1")})
	if _, ok := e.l.CommandResult(e.res, "once"); ok {
		t.Error("the command is still retained past the window")
	}
	if _, err := e.l.Update(first.UpdateID); err == nil {
		t.Error("the update is still retained past the window")
	}
	if n := e.l.DedupShortened(); n != 0 {
		t.Errorf("DedupShortened %d, want 0", n)
	}
	e.check()
}

// TestDedupWindowBoundsRetention: under a steady rate the retained updates stop growing
// once the window is full (bounded by age, far below the count bound), and a snapshot
// restored from them is the same ledger.
func TestDedupWindowBoundsRetention(t *testing.T) {
	e := newEnvTuned(t, ProfileTestnet, func(c *Config) { c.DedupWindow = 10 * time.Minute })
	retained := func() int {
		e.l.mu.RLock()
		defer e.l.mu.RUnlock()
		return e.l.st.updates.len()
	}
	var sizes []int
	for minute := range 40 {
		for range 6 { // 6 updates a minute: 60 fill the window
			e.must(e.res, Transfer{Receiver: e.house, Instrument: "USDCx", Amount: d("1")})
			e.clk.Advance(10 * time.Second)
		}
		if minute%10 == 9 {
			sizes = append(sizes, retained())
		}
	}
	for _, n := range sizes {
		if n > 61 {
			t.Errorf("retained updates by the tens of minutes %v: more than a window's 60", sizes)
			break
		}
	}
	e.check()
}

// TestCountBoundShortensWindow: past Limits.MaxRetainedUpdates within the window, the
// oldest are forgotten anyway and counted.
func TestCountBoundShortensWindow(t *testing.T) {
	e := newEnvTuned(t, ProfileTestnet, func(c *Config) { c.Limits.MaxRetainedUpdates = 5 })
	for range 8 {
		e.must(e.res, Transfer{Receiver: e.house, Instrument: "USDCx", Amount: d("1")})
	}
	if n := e.l.DedupShortened(); n != 3 {
		t.Errorf("DedupShortened %d, want 3", n)
	}
}

// TestDedupWindowConfig: the default window, one at least as long as a prepared
// transaction's lifetime, and none.
func TestDedupWindowConfig(t *testing.T) {
	clk := NewManualClock(t0)
	for _, tc := range []struct {
		name     string
		window   time.Duration
		prepared time.Duration
		want     time.Duration
		wantErr  bool
	}{
		{"default", 0, 0, DefaultDedupWindow, false},
		{"default covers long prepared lifetimes", 0, time.Hour, 3 * time.Hour, false},
		{"explicit", 2 * time.Hour, 0, 2 * time.Hour, false},
		{"none", -1, 0, -1, false},
		{"shorter than a prepared lifetime", 5 * time.Minute, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(ProfileTestnet, clk)
			cfg.DedupWindow, cfg.PreparedLifetime = tc.window, tc.prepared
			got, err := cfg.normalize()
			if tc.wantErr {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.DedupWindow != tc.want {
				t.Errorf("window %s, want %s", got.DedupWindow, tc.want)
			}
		})
	}
}
