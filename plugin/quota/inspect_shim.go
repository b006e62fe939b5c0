package quota

import (
	"context"
	"time"
)

// TEMPORARY, until ops's plugin/quota/usage.go is in main: the agreed
// interface of /work/helpers/OWNERS.md, so that the redis store's
// implementation compiles. Delete this file when usage.go arrives.

type Usage struct {
	Key                    string
	WindowStart, WindowEnd time.Time
	Used                   int
}

// Inspector is a store that can list and reset its counters (genderize-usage).
type Inspector interface {
	Usage(ctx context.Context, keyPrefix string) ([]Usage, error) // current and past windows still stored
	Reset(ctx context.Context, key string) (removed int, err error)
}
