//go:build !planted

package sim

// plantedBuild is false in every ordinary build: the planted bugs (planted_on.go, build
// tag "planted") are compiled out and every "if plantedBuild && …" branch with them.
const plantedBuild = false

// plantedOn is never true in this build.
func plantedOn(string) bool { return false }
