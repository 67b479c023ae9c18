//go:build planted

package ledgersim

import "sync/atomic"

// plantedBuild is true only in a build with the "planted" tag, which exists to prove that
// the simulator catches bugs (sim/planted_test.go). Never ship such a build.
const plantedBuild = true

// plantedBug names the planted bug switched on (empty: none).
var plantedBug atomic.Value

// PlantBug switches on the planted bug of this package named name ("" switches all off).
// It exists only in a build with the "planted" tag.
func PlantBug(name string) { plantedBug.Store(name) }

// plantedOn reports whether the planted bug name is switched on.
func plantedOn(name string) bool {
	v, _ := plantedBug.Load().(string)
	return v == name
}
