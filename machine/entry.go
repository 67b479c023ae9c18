package machine

// entryOf returns the value of *m at k, making it (and the map) when absent: the per-party
// state a desk makes on first use (a scorecard, a stream, a protection).
func entryOf[V any](m *map[string]*V, k string) *V {
	if *m == nil {
		*m = map[string]*V{}
	}
	v := (*m)[k]
	if v == nil {
		v = new(V)
		(*m)[k] = v
	}
	return v
}
