package main

// pick returns the items whose id is among ids, in the items' order and each once, and
// the ids (each once, in the order given) that no item has.
func pick[T any](items []T, ids []string, id func(T) string) (picked []T, missing []string) {
	wanted := map[string]bool{}
	for _, x := range ids {
		wanted[x] = true
	}
	for _, it := range items {
		if wanted[id(it)] {
			picked = append(picked, it)
			delete(wanted, id(it))
		}
	}
	for _, x := range ids {
		if wanted[x] {
			missing = append(missing, x)
			delete(wanted, x)
		}
	}
	return picked, missing
}
