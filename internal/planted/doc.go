// Package planted switches the planted bugs of the simulator's teeth test (sim/planted_test.go)
// on and off. They exist only in a build with the "planted" tag: in every other build Build
// is false and On always false, so each "if plantedBuild && plantedOn(…)" branch in machine,
// ledgersim and sim is removed by the compiler. Never ship a planted build.
package planted
