package machine

// PayloadAs returns v, an Event's Payload or a Reply's Body, as a T. The machine emits
// values; a non-nil *T is accepted too. ok is false for a nil pointer or any other type.
func PayloadAs[T any](v any) (T, bool) {
	switch x := v.(type) {
	case T:
		return x, true
	case *T:
		if x != nil {
			return *x, true
		}
	}
	var zero T
	return zero, false
}
