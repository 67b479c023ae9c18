//go:build !race

package ledgersim

// raceEnabled: the race detector is off.
const raceEnabled = false
