package machine

import "testing"

// TestHintOf: a known party shows its registered hint; any other party id shows the part
// before "::" (SPEC: an incoming transfer's sender is a hint), and an id without one shows
// as it is.
func TestHintOf(t *testing.T) {
	d, err := NewDesk(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	d.Parties["maker-7::1220aa"] = &Party{ID: "maker-7::1220aa", Hint: "Maker Seven"}
	for _, c := range []struct{ id, want string }{
		{"maker-7::1220aa", "Maker Seven"},
		{"reservoir::1220cc", "reservoir"},
		{"no-namespace", "no-namespace"},
		{"::1220dd", "::1220dd"},
	} {
		if got := d.hintOf(c.id); got != c.want {
			t.Errorf("hintOf(%q) = %q, want %q", c.id, got, c.want)
		}
	}
}
