package main

import (
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// keyCase is one configuration file and what it resolves to: got reads the key's value
// from the resolved configuration, and want is that value, unless wantErr names the key
// the file is refused for.
type keyCase struct {
	name, file string
	got        func(machine.Config, node.LedgerSpec) any
	want       any
	wantErr    string
}

// runKeyCases resolves each case's file as a subtest and checks its value or its refusal.
func runKeyCases(t *testing.T, cases []keyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, m, spec, err := resolveConfig(t, c.file)
			if refused(t, err, c.wantErr) {
				return
			}
			if got := c.got(m, spec); got != c.want {
				t.Errorf("%v, want %v", got, c.want)
			}
		})
	}
}
