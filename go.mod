module github.com/genderize-kong/genderize

go 1.26.0

require (
	github.com/Kong/go-pdk v0.11.2
	github.com/dgraph-io/ristretto/v2 v2.4.2
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/redis/go-redis/v9 v9.23.0
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/text v0.43.0
	golang.org/x/time v0.16.0
	google.golang.org/protobuf v1.36.2
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/ugorji/go/codec v1.2.14 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
