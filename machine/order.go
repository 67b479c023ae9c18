package machine

import (
	"cmp"
	"slices"
	"time"
)

// oldestFirst sorts xs by the time at gives each, earliest first, and entries of the same
// time by the id key gives each: the order a map's values are read in where the order
// decides an output.
func oldestFirst[T any](xs []T, at func(T) time.Time, key func(T) string) {
	slices.SortFunc(xs, func(x, y T) int {
		if c := at(x).Compare(at(y)); c != 0 {
			return c
		}
		return cmp.Compare(key(x), key(y))
	})
}
