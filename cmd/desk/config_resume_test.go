package main

import (
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// TestStreamRetentionConfig: stream_retention_events and stream_retention default to
// machine's defaults, a file sets them, and a value outside their bounds (events 0 to
// machine.MaxStreamRetentionEvents, a window from 1s to machine.MaxStreamRetention) is
// refused with its key named.
func TestStreamRetentionConfig(t *testing.T) {
	events := func(m machine.Config, _ node.LedgerSpec) any { return m.StreamRetentionEvents }
	window := func(m machine.Config, _ node.LedgerSpec) any { return m.StreamRetention }
	runKeyCases(t, []keyCase{
		{"events default", "", events, machine.DefaultStreamRetentionEvents, ""},
		{"events set", "stream_retention_events = 25\n", events, 25, ""},
		{"events zero", "stream_retention_events = 0\n", events, 0, ""},
		{"events negative", "stream_retention_events = -1\n", events, nil, "stream_retention_events"},
		{"events too many", "stream_retention_events = 100001\n", events, nil, "stream_retention_events"},
		{"window default", "", window, machine.DefaultStreamRetention, ""},
		{"window set", "stream_retention = \"2m\"\n", window, 2 * time.Minute, ""},
		{"window zero", "stream_retention = \"0s\"\n", window, nil, "stream_retention"},
		{"window too long", "stream_retention = \"25h\"\n", window, nil, "stream_retention"},
	})
}

// TestCORSOriginsConfig: cors_origins defaults to none, a file names origins, and an origin
// in a form a browser never sends (or too many) is refused naming the key.
func TestCORSOriginsConfig(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       int
		wantErr    string
	}{
		{"default", "", 0, ""},
		{"set", `cors_origins = ["https://console.example", "http://localhost:5173"]` + "\n", 2, ""},
		{"trailing slash", `cors_origins = ["https://console.example/"]` + "\n", 0, "cors_origins"},
		{"wildcard", `cors_origins = ["*"]` + "\n", 0, "cors_origins"},
		{"no scheme", `cors_origins = ["console.example"]` + "\n", 0, "cors_origins"},
		{"too many", "cors_origins = [" + strings.Repeat(`"https://a.example", `, maxCORSOrigins) + `"https://a.example"]` + "\n", 0, "cors_origins"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc, _, _, err := resolveConfig(t, c.file)
			if refused(t, err, c.wantErr) {
				return
			}
			if len(fc.CORSOrigins) != c.want {
				t.Errorf("%v, want %d origins", fc.CORSOrigins, c.want)
			}
		})
	}
}
