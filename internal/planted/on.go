//go:build planted

package planted

import "sync/atomic"

// Build is true only in a build with the "planted" tag.
const Build = true

// bug names the planted bug switched on (empty: none); one switch serves every package.
var bug atomic.Value

// Plant switches on the planted bug named name in every package ("" switches all off).
// It exists only in a build with the "planted" tag.
func Plant(name string) { bug.Store(name) }

// On reports whether the planted bug name is switched on.
func On(name string) bool {
	v, _ := bug.Load().(string)
	return v == name
}
