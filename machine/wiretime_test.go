package machine

import (
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestWireTimeMarshalProperty: a WireTime marshals as FormatTime's string in quotes, for
// any instant in any zone, alone and inside a payload, and reads back as the same
// millisecond.
func TestWireTimeMarshalProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sec := rapid.Int64Range(-62135596800, 253402300799).Draw(t, "unix") // years 1..9999
		nsec := rapid.Int64Range(0, 999_999_999).Draw(t, "nsec")
		zone := time.FixedZone("z", 60*rapid.IntRange(-14*60, 14*60).Draw(t, "offsetMinutes"))
		at := time.Unix(sec, nsec).In(zone)
		b, err := WireTime(at).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if want := `"` + FormatTime(at) + `"`; string(b) != want {
			t.Fatalf("MarshalJSON(%v) = %s, want %s", at, b, want)
		}
		inPayload, err := json.Marshal(struct {
			At WireTime `json:"at"`
		}{WireTime(at)})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"at":"` + FormatTime(at) + `"}`; string(inPayload) != want {
			t.Fatalf("in a payload: %s, want %s", inPayload, want)
		}
		var back WireTime
		if err := back.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		if !time.Time(back).Equal(at.Truncate(time.Millisecond)) {
			t.Fatalf("read back %v, want %v", time.Time(back), at.Truncate(time.Millisecond))
		}
	})
}
