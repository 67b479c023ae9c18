module github.com/deskco/rfqdesk

go 1.26

require (
	github.com/BurntSushi/toml v1.5.0
	github.com/cockroachdb/apd/v3 v3.2.3
	github.com/google/go-cmp v0.7.0
	github.com/julienschmidt/httprouter v1.3.0
	github.com/lxzan/gws v1.8.9
	github.com/qmuntal/stateless v1.7.2
	gopkg.in/yaml.v3 v3.0.1
	pgregory.net/rapid v1.3.0
)

require (
	github.com/dolthub/maphash v0.1.0 // indirect
	github.com/klauspost/compress v1.17.9 // indirect
)
