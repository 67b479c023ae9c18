package machine

import "github.com/deskco/rfqdesk/internal/planted"

// plantedBuild is true only in a build with the "planted" tag, which exists to prove that
// the simulator catches bugs (sim/planted_test.go); in every other build each
// "if plantedBuild && plantedOn(…)" branch is removed by the compiler.
const plantedBuild = planted.Build

// plantedOn reports whether the planted bug name is switched on (internal/planted).
func plantedOn(name string) bool { return planted.On(name) }
