//go:build !planted

package machine

// plantedBuild is false in every ordinary build: the planted bugs of the simulator's
// teeth test (sim/planted_test.go, build tag "planted") are compiled out, and every
// "if plantedBuild && plantedOn(…)" branch is removed by the compiler.
const plantedBuild = false

// plantedOn is never true in this build.
func plantedOn(string) bool { return false }
