module github.com/deskco/rfqdesk

go 1.26

require (
	github.com/cockroachdb/apd/v3 v3.2.3 // indirect
	github.com/dolthub/maphash v0.1.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/julienschmidt/httprouter v1.3.0 // indirect
	github.com/klauspost/compress v1.17.9 // indirect
	github.com/lxzan/gws v1.8.9 // indirect
	github.com/qmuntal/stateless v1.7.2 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
