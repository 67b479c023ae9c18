package machine

import "github.com/deskco/rfqdesk/internal/wire"

// encoder and decoder are the project's binary encoding primitives (internal/wire), which
// every input's and state type's encoding in this package writes and reads.
type (
	encoder = wire.Encoder
	decoder = wire.Decoder
)
