//go:build !planted

package planted

// Build is false in every ordinary build: the planted bugs are compiled out.
const Build = false

// On is never true in this build.
func On(string) bool { return false }
